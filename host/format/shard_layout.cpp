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
    if (!entry.is_object() || !entry.contains("global_shape") || !entry.contains("offsets"))
      return corrupt(name + ": global_shape and offsets are required");
    auto global = dims(entry["global_shape"], name + ": global_shape");
    auto offsets = dims(entry["offsets"], name + ": offsets");
    if (!global) return corrupt(global.error().message);
    if (!offsets) return corrupt(offsets.error().message);
    if (global->size() != offsets->size()) return corrupt(name + ": offsets and global_shape differ in rank");
    for (size_t d = 0; d < global->size(); ++d)
      if ((*offsets)[d] > (*global)[d]) return corrupt(fmt::format("{}: offset {} lies outside the global shape", name, d));
    std::vector<int64_t> shape;
    if (entry.contains("shape")) {
      auto s = dims(entry["shape"], name + ": shape");
      if (!s) return corrupt(s.error().message);
      if (s->size() != global->size()) return corrupt(name + ": shape and global_shape differ in rank");
      for (size_t d = 0; d < s->size(); ++d)
        if ((*s)[d] > (*global)[d] - (*offsets)[d])
          return corrupt(fmt::format("{}: the shard passes the end of dimension {}", name, d));
      shape = std::move(*s);
    }
    layout.tensors.emplace(name, ShardPlacement{std::move(*global), std::move(*offsets), std::move(shape)});
  }
  return layout;
}

std::string shard_layout_json(const WorkerShardLayout& layout) {
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, p] : layout.tensors) {
    tensors[name] = {{"global_shape", p.global_shape}, {"offsets", p.offsets}};
    if (p.shape.size() == p.global_shape.size()) tensors[name]["shape"] = p.shape;
  }
  return nlohmann::json{{"version", 1}, {"worker", layout.worker}, {"tensors", tensors}}.dump();
}

}  // namespace vigil::format
