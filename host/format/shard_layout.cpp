#include "format/shard_layout.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/json_limits.h"

namespace vigil::format {

namespace {

Result<std::vector<int64_t>> dims(const nlohmann::json& j, const std::string& what) {
  if (!j.is_array() || j.size() > kMaxShardRank) return fail(Error::invalid_argument(what + " is not a list of at most 32 sizes"));
  std::vector<int64_t> out;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) return fail(Error::invalid_argument(what + " holds a value that is not a size"));
    out.push_back(d.get<int64_t>());
  }
  return out;
}

}  // namespace

Result<WorkerShardLayout> parse_shard_layout(std::string_view json_text, const std::string& file) {
  auto corrupt = [&](const std::string& why) { return fail(Error::corrupt(file, 0, "shard layout: " + why)); };
  if (json_nesting_exceeds(json_text)) return corrupt("nested too deeply");
  const auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  // Each member's type checked before it is read: nlohmann's value() throws on a mismatched type.
  if (!j.is_object() || !j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != 1)
    return corrupt("not a version 1 layout object");
  if (!j.contains("worker") || !j["worker"].is_string() || j["worker"].get<std::string>().empty())
    return corrupt("no worker name");
  if (!j.contains("tensors") || !j["tensors"].is_object()) return corrupt("no tensors object");
  WorkerShardLayout layout{j["worker"].get<std::string>(), {}};
  for (const auto& [name, entry] : j["tensors"].items()) {
    if (!entry.is_object() || !entry.contains("global_shape") || (entry.contains("offsets") == entry.contains("flat_offset")))
      return corrupt(name + ": global_shape and one of offsets or flat_offset are required");
    auto global = dims(entry["global_shape"], name + ": global_shape");
    if (!global) return corrupt(global.error().message);
    std::vector<int64_t> shape;
    if (entry.contains("shape")) {
      auto s = dims(entry["shape"], name + ": shape");
      if (!s) return corrupt(s.error().message);
      shape = std::move(*s);
    }
    ShardPlacement placement{std::move(*global), {}, std::move(shape), std::nullopt};
    if (entry.contains("flat_offset")) {
      // A run of the flattened tensor: it must end within the tensor's element count.
      const auto& f = entry["flat_offset"];
      if (!f.is_number_integer() || f.get<int64_t>() < 0) return corrupt(name + ": flat_offset is not an element index");
      if (placement.shape.size() != 1) return corrupt(name + ": a flat run needs its length as shape [n]");
      uint64_t elements = 1;
      for (int64_t d : placement.global_shape)
        if (__builtin_mul_overflow(elements, uint64_t(d), &elements) || elements > (uint64_t(1) << 62))
          return corrupt(name + ": global_shape is too large");
      const uint64_t first = uint64_t(f.get<int64_t>()), length = uint64_t(placement.shape[0]);
      if (first > elements || length > elements - first) return corrupt(name + ": the flat run passes the end of the tensor");
      placement.flat_offset = f.get<int64_t>();
    } else {
      auto offsets = dims(entry["offsets"], name + ": offsets");
      if (!offsets) return corrupt(offsets.error().message);
      if (placement.global_shape.size() != offsets->size()) return corrupt(name + ": offsets and global_shape differ in rank");
      for (size_t d = 0; d < offsets->size(); ++d)
        if ((*offsets)[d] > placement.global_shape[d])
          return corrupt(fmt::format("{}: offset {} lies outside the global shape", name, d));
      if (entry.contains("shape")) {
        if (placement.shape.size() != placement.global_shape.size()) return corrupt(name + ": shape and global_shape differ in rank");
        for (size_t d = 0; d < placement.shape.size(); ++d)
          if (placement.shape[d] > placement.global_shape[d] - (*offsets)[d])
            return corrupt(fmt::format("{}: the shard passes the end of dimension {}", name, d));
      }
      placement.offsets = std::move(*offsets);
    }
    layout.tensors.emplace(name, std::move(placement));
  }
  return layout;
}

std::string shard_layout_json(const WorkerShardLayout& layout) {
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, p] : layout.tensors) {
    tensors[name] = {{"global_shape", p.global_shape}};
    if (p.flat_offset) {
      tensors[name]["flat_offset"] = *p.flat_offset;
      tensors[name]["shape"] = p.shape;
      continue;
    }
    tensors[name]["offsets"] = p.offsets;
    if (p.shape.size() == p.global_shape.size()) tensors[name]["shape"] = p.shape;
  }
  return nlohmann::json{{"version", 1}, {"worker", layout.worker}, {"tensors", tensors}}.dump();
}

}  // namespace vigil::format
