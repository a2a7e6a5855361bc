#include "format/collections_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "format/json_limits.h"
#include "format/python_json.h"
#include <vigil/sdk/text.hpp>

namespace vigil::format {
namespace {

using sdk::trim;

using ojson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 7> kReductions = {"min", "max", "mean", "std", "variance", "sum", "prod"};
constexpr std::array<std::string_view, 2> kNorms = {"l1", "l2"};
// smdebug's SaveConfigMode default interval (1.0.34).
constexpr int64_t kDefaultSaveInterval = 500;

bool is_reduction(std::string_view op) { return std::find(kReductions.begin(), kReductions.end(), op) != kReductions.end(); }
bool is_norm(std::string_view op) { return std::find(kNorms.begin(), kNorms.end(), op) != kNorms.end(); }

std::optional<int64_t> as_int64(const ojson& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(v.get<uint64_t>());
  return std::nullopt;
}

// SaveConfigMode runs its numbers through int(), so decimal strings are accepted as well.
std::optional<int64_t> as_int_like(const ojson& v) {
  if (auto i = as_int64(v)) return i;
  if (!v.is_string()) return std::nullopt;
  std::string_view s = trim(v.get_ref<const std::string&>());
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;  // "+-1", "++1"
  }
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return out;
}

// Python truthiness of the JSON values SaveConfigMode sees (`x or default`).
bool is_falsy(const ojson& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_unsigned()) return v.get<uint64_t>() == 0;
  if (v.is_number_integer()) return v.get<int64_t>() == 0;
  if (v.is_number_float()) return v.get<double>() == 0.0;
  if (v.is_string()) return v.get_ref<const std::string&>().empty();
  return v.empty();  // arrays and objects
}

bool is_string_list(const ojson& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const ojson& e) { return e.is_string(); });
}

struct Context {
  std::string file;
  [[nodiscard]] Error error(std::string message) const {
    Error e = Error::invalid_argument(std::move(message));
    e.file = file;
    return e;
  }
};

// SaveConfigMode applies `int(x or default)`: a missing, null, 0 or "" value means "default"
// (for end_step: no end). nullopt here means exactly that.
[[nodiscard]] Result<std::optional<int64_t>> int_field(const ojson& v, const char* key, const std::string& where, const Context& ctx) {
  if (!v.contains(key) || is_falsy(v[key])) return std::optional<int64_t>{};
  auto n = v[key].is_boolean() ? std::nullopt : as_int_like(v[key]);
  if (!n) return fail(ctx.error(fmt::format("{}.{} must be an integer", where, key)));
  return n;
}

[[nodiscard]] Result<SaveConfigMode> parse_save_config_mode(const ojson& v, const std::string& where, const Context& ctx) {
  SaveConfigMode m;
  auto interval = int_field(v, "save_interval", where, ctx);
  if (!interval) return fail(interval.error());
  m.save_interval = interval->value_or(kDefaultSaveInterval);
  auto start = int_field(v, "start_step", where, ctx);
  if (!start) return fail(start.error());
  m.start_step = start->value_or(0);
  auto end = int_field(v, "end_step", where, ctx);
  if (!end) return fail(end.error());
  m.end_step = *end;
  if (v.contains("save_steps") && !is_falsy(v["save_steps"])) {
    const ojson& steps = v["save_steps"];
    if (!steps.is_array()) return fail(ctx.error(fmt::format("{}.save_steps must be a list of integers", where)));
    for (const ojson& s : steps) {
      auto n = as_int64(s);
      if (!n) return fail(ctx.error(fmt::format("{}.save_steps must be a list of integers", where)));
      m.save_steps.push_back(*n);
    }
  }
  return m;
}

[[nodiscard]] Result<CollectionConfig> parse_collection(const std::string& key, const ojson& c, const Context& ctx) {
  const std::string where = fmt::format("collection '{}'", key);
  if (!c.is_object()) return fail(ctx.error(where + " must be a JSON object"));
  CollectionConfig out;

  // smdebug keeps a missing name as None; a name is needed here, and the key is what it indexes by.
  if (c.contains("name") && !c["name"].is_null()) {
    if (!c["name"].is_string()) return fail(ctx.error(where + ": name must be a string"));
    out.name = c["name"].get<std::string>();
  } else {
    out.name = key;
  }

  // A missing include_regex is False in smdebug, which matches nothing: an empty list here.
  if (c.contains("include_regex") && !c["include_regex"].is_null() && c["include_regex"] != false) {
    if (!is_string_list(c["include_regex"])) return fail(ctx.error(where + ": include_regex must be a list of strings"));
    out.include_regex = c["include_regex"].get<std::vector<std::string>>();
  }
  if (c.contains("tensor_names")) {
    if (!is_string_list(c["tensor_names"])) return fail(ctx.error(where + ": tensor_names must be a list of strings"));
    out.tensor_names = c["tensor_names"].get<std::vector<std::string>>();
  }

  if (c.contains("reduction_config") && !c["reduction_config"].is_null()) {
    const ojson& r = c["reduction_config"];
    if (!r.is_object()) return fail(ctx.error(where + ": reduction_config must be a JSON object or null"));
    ReductionConfig rc;
    rc.save_raw_tensor = false;  // ReductionConfig.from_dict's default, unlike the hook's
    for (const char* flag : {"save_raw_tensor", "save_shape"}) {
      if (!r.contains(flag)) continue;
      if (!r[flag].is_boolean()) return fail(ctx.error(fmt::format("{}: reduction_config.{} must be a boolean", where, flag)));
      (std::string_view(flag) == "save_shape" ? rc.save_shape : rc.save_raw_tensor) = r[flag].get<bool>();
    }
    if (r.contains("reductions")) {
      if (!r["reductions"].is_string()) return fail(ctx.error(where + ": reduction_config.reductions must be a string"));
      auto list = parse_reduction_list(r["reductions"].get_ref<const std::string&>());
      if (!list) {
        Error e = list.error();
        e.file = ctx.file;
        return fail(std::move(e));
      }
      rc.reductions = std::move(*list);
    }
    out.reduction_config = std::move(rc);
  }

  if (c.contains("save_config") && !c["save_config"].is_null()) {
    const ojson& s = c["save_config"];
    if (!s.is_object()) return fail(ctx.error(where + ": save_config must be a JSON object or null"));
    std::array<std::optional<SaveConfigMode>, 4> modes{};
    for (const auto& [mode_key, value] : s.items()) {
      // ModeKeys[key]: exact names only, no whitespace stripping.
      std::optional<Mode> mode;
      for (Mode m : kAllModes)
        if (mode_name(m) == mode_key) mode = m;
      if (!mode) return fail(ctx.error(fmt::format("{}: save_config has an unknown mode '{}'", where, mode_key)));
      if (value.is_null()) continue;
      if (!value.is_object())
        return fail(ctx.error(fmt::format("{}: save_config.{} must be a JSON object or null", where, mode_key)));
      auto m = parse_save_config_mode(value, fmt::format("{}: save_config.{}", where, mode_key), ctx);
      if (!m) return fail(m.error());
      modes[static_cast<size_t>(*mode) - 1] = std::move(*m);
    }
    out.save_config = std::move(modes);
  }

  if (c.contains("save_histogram")) {
    if (!c["save_histogram"].is_boolean()) return fail(ctx.error(where + ": save_histogram must be a boolean"));
    out.save_histogram = c["save_histogram"].get<bool>();
  }
  return out;
}

ojson save_config_mode_json(const SaveConfigMode& m) {
  ojson o = ojson::object();
  o["save_interval"] = m.save_interval;
  o["save_steps"] = m.save_steps;
  o["start_step"] = m.start_step;
  o["end_step"] = m.end_step ? ojson(*m.end_step) : ojson(nullptr);
  return o;
}

}  // namespace

bool SaveConfigMode::should_save_step(int64_t mode_step) const {
  if (!save_steps.empty() && std::find(save_steps.begin(), save_steps.end(), mode_step) != save_steps.end())
    return true;
  if (mode_step < start_step || (end_step && mode_step >= *end_step)) return false;
  if (save_interval == 0) return false;  // Python would divide by zero; never "on the interval"
  if (save_interval == 1 || save_interval == -1) return true;  // also avoids INT64_MIN % -1
  return mode_step % save_interval == 0;
}

Result<std::vector<ReductionSpec>> parse_reduction_list(std::string_view text) {
  auto join = [](const auto& names) {
    std::string s;
    for (auto n : names) {
      if (!s.empty()) s += ',';
      s += n;
    }
    return s;
  };
  std::vector<ReductionSpec> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view token = trim(text.substr(start, end - start));
    start = end + 1;
    if (token.empty()) continue;
    // The four token shapes of ReductionConfig.from_dict; the middle part must be an allowed name.
    const bool abs = token.starts_with("abs_");
    const bool norm = token.ends_with("_norm");
    std::string_view op = token;
    if (abs) op.remove_prefix(4);
    if (norm) op = op.size() >= 5 ? op.substr(0, op.size() - 5) : std::string_view{};  // "abs_norm": no name
    if (norm && !is_norm(op))
      return fail(Error::invalid_argument((abs ? "abs_norms can only be one of " : "norms can only be one of ") + join(kNorms)));
    if (!norm && !is_reduction(op))
      return fail(Error::invalid_argument((abs ? "abs_reductions can only be one of " : "reductions can only be one of ") +
                                          join(kReductions)));
    out.push_back(ReductionSpec{std::string(op), abs});
  }
  return out;
}

std::string format_reduction_list(const std::vector<ReductionSpec>& reductions) {
  // smdebug keeps four lists and writes them in this order, each in insertion order.
  std::string out;
  auto emit = [&](bool abs, bool norms) {
    for (const auto& r : reductions) {
      if (r.abs != abs || is_norm(r.op) != norms) continue;
      if (!out.empty()) out += ',';
      out += (abs ? "abs_" : "") + r.op + (norms ? "_norm" : "");
    }
  };
  emit(false, false);
  emit(false, true);
  emit(true, false);
  emit(true, true);
  return out;
}

Result<CollectionsFile> parse_collections_json(std::string_view text, std::string_view file) {
  const Context ctx{std::string(file)};
  if (json_nesting_exceeds(text))
    return fail(ctx.error(fmt::format("collection file nests deeper than {} levels", kMaxJsonDepth)));
  const ojson doc = ojson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail(ctx.error("collection file is not valid JSON"));
  if (!doc.is_object()) return fail(ctx.error("collection file must hold a JSON object"));
  for (const auto& [key, value] : doc.items()) {
    if (key != "collections" && key != "_meta")
      return fail(ctx.error("allowed params for collection manager can only be one of collections,_meta"));
  }
  if (!doc.contains("collections")) return fail(ctx.error("collections section is not present"));
  if (!doc["collections"].is_object()) return fail(ctx.error("collections must be a JSON object"));
  if (!doc.contains("_meta")) return fail(ctx.error("_meta section is not present"));
  if (!doc["_meta"].is_object()) return fail(ctx.error("_meta must be a JSON object"));

  CollectionsFile out;
  for (const auto& [key, value] : doc["collections"].items()) {
    auto c = parse_collection(key, value, ctx);
    if (!c) return fail(c.error());
    // CollectionManager.add replaces a collection of the same name, keeping its place.
    auto same = std::find_if(out.collections.begin(), out.collections.end(),
                             [&](const CollectionConfig& e) { return e.name == c->name; });
    if (same != out.collections.end())
      *same = std::move(*c);
    else
      out.collections.push_back(std::move(*c));
  }

  const ojson& meta = doc["_meta"];
  if (meta.contains("num_workers")) {
    auto n = meta["num_workers"].is_boolean() ? std::nullopt : as_int_like(meta["num_workers"]);
    if (!n || *n < 1) return fail(ctx.error("_meta.num_workers must be a positive integer"));
    out.num_workers = *n;
  }
  return out;
}

std::string serialize_collections_json(const CollectionsFile& file) {
  ojson collections = ojson::object();
  for (const auto& c : file.collections) {
    ojson o = ojson::object();
    o["name"] = c.name;
    o["include_regex"] = c.include_regex;
    // smdebug holds tensor names in a set and writes them sorted (byte order == code point order).
    std::set<std::string> names(c.tensor_names.begin(), c.tensor_names.end());
    o["tensor_names"] = ojson(std::vector<std::string>(names.begin(), names.end()));
    if (c.reduction_config) {
      ojson r = ojson::object();
      r["save_raw_tensor"] = c.reduction_config->save_raw_tensor;
      r["reductions"] = format_reduction_list(c.reduction_config->reductions);
      r["save_shape"] = c.reduction_config->save_shape;
      o["reduction_config"] = std::move(r);
    } else {
      o["reduction_config"] = nullptr;
    }
    if (c.save_config) {
      ojson s = ojson::object();
      for (Mode m : kAllModes) {
        const auto& mode_config = (*c.save_config)[static_cast<size_t>(m) - 1];
        s[std::string(mode_name(m))] = mode_config ? save_config_mode_json(*mode_config) : ojson(nullptr);
      }
      o["save_config"] = std::move(s);
    } else {
      o["save_config"] = nullptr;
    }
    o["save_histogram"] = c.save_histogram;
    collections[c.name] = std::move(o);
  }
  ojson doc = ojson::object();
  doc["collections"] = std::move(collections);
  doc["_meta"] = ojson::object({{"num_workers", file.num_workers}});
  return python_json_dumps(doc);
}

}  // namespace vigil::format
