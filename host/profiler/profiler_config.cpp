#include "profiler/profiler_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/file_read.h"
#include "format/json_limits.h"
#include "profiler/python_literal.h"
#include <vigil/sdk/text.hpp>

namespace vigil::profiler {
namespace {

using sdk::lower;

using nlohmann::json;

Error field_error(std::string_view field, std::string_view what) {
  return Error::invalid_argument(fmt::format("{}: {}", field, what));
}

// The member of `object` whose key equals `name` ignoring case (smdebug lower-cases the file);
// nullptr when absent. Two keys that differ only in case are refused: smdebug would keep one of them
// silently.
Result<const json*> member(const json& object, std::string_view name, std::string_view where) {
  const std::string wanted = lower(name);
  const json* found = nullptr;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (lower(it.key()) != wanted) continue;
    if (found) return fail(field_error(where, fmt::format("{} is given twice (keys differ only in case)", name)));
    found = &it.value();
  }
  return found;
}

// Numbers may come as JSON numbers or as numeric strings (ProfilingParameters is a string map in
// the API).
std::optional<std::string> numeric_text(const json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    const auto first = s.find_first_not_of(" \t");
    const auto last = s.find_last_not_of(" \t");
    if (first == std::string::npos) return std::nullopt;
    return s.substr(first, last - first + 1);
  }
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

Result<int64_t> integer_from_text(std::string_view text, std::string_view field, std::string_view shown) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    return fail(field_error(field, fmt::format("{} is not an integer", shown)));
  return value;
}

Result<double> number_from_text(std::string_view text, std::string_view field, std::string_view shown) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return fail(field_error(field, fmt::format("{} is not a number", shown)));
  return value;
}

Result<int64_t> json_integer(const json& v, std::string_view field) {
  const auto text = numeric_text(v);
  if (!text) return fail(field_error(field, fmt::format("{} is not an integer", v.dump())));
  return integer_from_text(*text, field, v.dump());
}

Result<double> json_number(const json& v, std::string_view field) {
  const auto text = numeric_text(v);
  if (!text) return fail(field_error(field, fmt::format("{} is not a number", v.dump())));
  return number_from_text(*text, field, v.dump());
}

Result<bool> json_bool(const json& v, std::string_view field) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string())
    if (const auto b = sdk::parse_bool(v.get_ref<const std::string&>())) return *b;
  return fail(field_error(field, fmt::format("{} is not true or false", v.dump())));
}

Result<int64_t> positive_integer(const json& v, std::string_view field) {
  auto n = json_integer(v, field);
  if (!n) return n;
  if (*n < 1) return fail(field_error(field, fmt::format("{} must be at least 1", *n)));
  return n;
}

// ---- the *ProfilingConfig strings -----------------------------------------------------------

std::optional<std::string> scalar_numeric_text(const PythonScalar& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return std::nullopt;
}

Result<int64_t> literal_integer(const PythonScalar& v, std::string_view field) {
  if (std::holds_alternative<double>(v))
    return fail(field_error(field, fmt::format("{} is not an integer", python_repr(v))));
  const auto text = scalar_numeric_text(v);
  if (!text) return fail(field_error(field, fmt::format("{} is not an integer", python_repr(v))));
  return integer_from_text(*text, field, python_repr(v));
}

Result<double> literal_number(const PythonScalar& v, std::string_view field) {
  const auto text = scalar_numeric_text(v);
  if (!text) return fail(field_error(field, fmt::format("{} is not a number", python_repr(v))));
  return number_from_text(*text, field, python_repr(v));
}

Result<std::string> literal_string(const PythonScalar& v, std::string_view field) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return fail(field_error(field, fmt::format("{} is not a string", python_repr(v))));
}

Result<std::string> literal_choice(const PythonScalar& v, std::string_view field,
                                   std::initializer_list<std::string_view> allowed) {
  auto s = literal_string(v, field);
  if (!s) return s;
  const std::string chosen = lower(*s);
  if (std::find(allowed.begin(), allowed.end(), chosen) == allowed.end())
    return fail(field_error(field, fmt::format("'{}' is not one of {}", *s, fmt::join(allowed, ", "))));
  return chosen;
}

enum class MetricsKind { Detailed, Dataloader, Python, Horovod, SMDataparallel };

Result<MetricsConfig> parse_metrics_config(const json& value, std::string_view field, MetricsKind kind,
                                           std::vector<std::string>& problems) {
  if (!value.is_string())
    return fail(field_error(field, fmt::format("{} is not a string holding a dict literal", value.dump())));
  const std::string text = value.get<std::string>();
  MetricsConfig config;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return config;  // "": not configured
  auto dict = parse_python_dict(text);
  if (!dict) return fail(field_error(field, dict.error().message));
  bool step_keys = false;
  bool time_keys = false;
  for (const auto& [key, v] : *dict) {
    const std::string k = lower(key);
    const std::string inner = fmt::format("{}.{}", field, key);
    if (k == "startstep") {
      auto n = literal_integer(v, inner);
      if (!n) return fail(std::move(n.error()));
      if (*n < 0) return fail(field_error(inner, fmt::format("{} must not be negative", *n)));
      config.start_step = *n;
      step_keys = true;
    } else if (k == "numsteps") {
      auto n = literal_integer(v, inner);
      if (!n) return fail(std::move(n.error()));
      if (*n < 1) return fail(field_error(inner, fmt::format("{} must be at least 1", *n)));
      config.num_steps = *n;
      step_keys = true;
    } else if (k == "starttimeinsecsinceepoch") {
      auto t = literal_number(v, inner);
      if (!t) return fail(std::move(t.error()));
      if (*t < 0) return fail(field_error(inner, fmt::format("{} must not be negative", python_repr(v))));
      config.start_time = *t;
      time_keys = true;
    } else if (k == "durationinseconds") {
      auto d = literal_number(v, inner);
      if (!d) return fail(std::move(d.error()));
      if (!(*d > 0)) return fail(field_error(inner, fmt::format("{} must be positive", python_repr(v))));
      config.duration = *d;
      time_keys = true;
    } else if (k == "metricsregex" && kind == MetricsKind::Dataloader) {
      auto s = literal_string(v, inner);
      if (!s) return fail(std::move(s.error()));
      config.metrics_regex = std::move(*s);
    } else if (k == "profilername" && kind == MetricsKind::Python) {
      auto s = literal_choice(v, inner, {"cprofile", "pyinstrument"});
      if (!s) return fail(std::move(s.error()));
      config.profiler_name = std::move(*s);
    } else if (k == "cprofiletimer" && kind == MetricsKind::Python) {
      auto s = literal_choice(v, inner, {"total_time", "cpu_time", "off_cpu_time", "default"});
      if (!s) return fail(std::move(s.error()));
      config.cprofile_timer = std::move(*s);
    }
    // Other keys are ignored, as smdebug ignores them (the SDK's "Duration" among them).
  }
  if (step_keys && time_keys) {
    // smdebug disables such a config and logs an error; the rest of the file still applies.
    problems.push_back(fmt::format(
        "{}: a step range (StartStep, NumSteps) and a time range (StartTimeInSecSinceEpoch, DurationInSeconds) "
        "cannot be combined; this config is disabled",
        field));
    return MetricsConfig{};
  }
  config.enabled = !dict->empty();
  return config;
}

Result<void> read_interval(const json& object, std::string_view where, ProfilerConfig& config) {
  auto v = member(object, "ProfilingIntervalInMilliseconds", where);
  if (!v) return fail(std::move(v.error()));
  if (!*v) return {};
  const std::string field = where.empty() ? std::string("ProfilingIntervalInMilliseconds")
                                          : fmt::format("{}.ProfilingIntervalInMilliseconds", where);
  auto ms = json_integer(**v, field);
  if (!ms) return fail(std::move(ms.error()));
  const auto& allowed = format::sagemaker::kProfilingIntervalsMs;
  if (std::find(allowed.begin(), allowed.end(), *ms) == allowed.end())
    return fail(field_error(field, fmt::format("{} is not one of {}", *ms, fmt::join(allowed, ", "))));
  config.interval_ms = *ms;
  return {};
}

Result<void> read_profiling_parameters(const json& params, ProfilerConfig& config) {
  constexpr std::string_view where = "ProfilingParameters";
  if (!params.is_object())
    return fail(field_error(where, fmt::format("{} is not an object", params.dump())));
  config.has_profiling_parameters = !params.empty();
  auto field_of = [&](std::string_view name) { return fmt::format("{}.{}", where, name); };
  // Each known key, read when present; `read` stores the value or returns the error.
  auto with = [&](std::string_view name, auto read) -> Result<void> {
    auto v = member(params, name, where);
    if (!v) return fail(std::move(v.error()));
    if (!*v) return {};
    return read(**v, field_of(name));
  };
  auto results = {
      with("ProfilerEnabled", [&](const json& v, const std::string& f) -> Result<void> {
        auto b = json_bool(v, f);
        if (!b) return fail(std::move(b.error()));
        config.profiler_enabled = *b;
        return {};
      }),
      with("LocalPath", [&](const json& v, const std::string& f) -> Result<void> {
        if (!v.is_string() || v.get<std::string>().empty())
          return fail(field_error(f, fmt::format("{} is not a non-empty path", v.dump())));
        config.local_path = v.get<std::string>();
        return {};
      }),
      with("RotateMaxFileSizeInBytes", [&](const json& v, const std::string& f) -> Result<void> {
        auto n = positive_integer(v, f);
        if (!n) return fail(std::move(n.error()));
        config.rotate_max_file_size_bytes = uint64_t(*n);
        return {};
      }),
      with("RotateFileCloseIntervalInSeconds", [&](const json& v, const std::string& f) -> Result<void> {
        auto s = json_number(v, f);
        if (!s) return fail(std::move(s.error()));
        if (!(*s > 0)) return fail(field_error(f, fmt::format("{} must be positive", v.dump())));
        config.rotate_file_close_interval_s = *s;
        return {};
      }),
      with("FileOpenFailThreshold", [&](const json& v, const std::string& f) -> Result<void> {
        auto n = positive_integer(v, f);
        if (!n) return fail(std::move(n.error()));
        config.file_open_fail_threshold = *n;
        return {};
      }),
      with("CPUProfilingDuration", [&](const json& v, const std::string& f) -> Result<void> {
        auto n = positive_integer(v, f);
        if (!n) return fail(std::move(n.error()));
        config.cpu_profiling_duration_s = *n;
        return {};
      }),
      with("SMPFileRotationSecs", [&](const json& v, const std::string& f) -> Result<void> {
        auto n = positive_integer(v, f);
        if (!n) return fail(std::move(n.error()));
        config.smp_file_rotation_s = *n;
        return {};
      }),
  };
  for (const auto& r : results)
    if (!r) return r;
  const std::pair<std::string_view, std::pair<MetricsKind, MetricsConfig*>> metrics[] = {
      {"DetailedProfilingConfig", {MetricsKind::Detailed, &config.detailed}},
      {"DataloaderProfilingConfig", {MetricsKind::Dataloader, &config.dataloader}},
      {"PythonProfilingConfig", {MetricsKind::Python, &config.python}},
      {"HorovodProfilingConfig", {MetricsKind::Horovod, &config.horovod}},
      {"SMDataparallelProfilingConfig", {MetricsKind::SMDataparallel, &config.smdataparallel}},
  };
  for (const auto& [name, target] : metrics) {
    auto r = with(name, [&](const json& v, const std::string& f) -> Result<void> {
      auto parsed = parse_metrics_config(v, f, target.first, config.problems);
      if (!parsed) return fail(std::move(parsed.error()));
      *target.second = std::move(*parsed);
      return {};
    });
    if (!r) return r;
  }
  return read_interval(params, where, config);
}

}  // namespace

Result<ProfilerConfig> parse_profiler_config(std::string_view json_text) {
  if (format::json_nesting_exceeds(json_text))
    return fail(Error::invalid_argument("the profiler config nests too deeply"));
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail(Error::invalid_argument("the profiler config is not valid JSON"));
  if (!doc.is_object()) return fail(Error::invalid_argument("the profiler config is not a JSON object"));
  ProfilerConfig config;
  config.file_found = true;
  if (auto disable = member(doc, "DisableProfiler", ""); !disable) {
    return fail(std::move(disable.error()));
  } else if (*disable) {
    auto b = json_bool(**disable, "DisableProfiler");
    if (!b) return fail(std::move(b.error()));
    config.disable_profiler = *b;
  }
  // The API puts the interval beside ProfilingParameters; the container's file may carry it
  // inside (spec §8.4). Both are read, the inner one last.
  if (auto r = read_interval(doc, "", config); !r) return fail(std::move(r.error()));
  auto params = member(doc, "ProfilingParameters", "");
  if (!params) return fail(std::move(params.error()));
  if (*params && !(*params)->is_null())
    if (auto r = read_profiling_parameters(**params, config); !r) return fail(std::move(r.error()));
  return config;
}

Result<ProfilerConfig> load_profiler_config(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return ProfilerConfig{};
  auto text = read_whole_file(path);
  if (!text) return fail(std::move(text.error()));
  auto config = parse_profiler_config(*text);
  if (!config) {
    Error e = std::move(config.error());
    e.message = fmt::format("{}: {}", path.string(), e.message);
    e.file = path.string();
    return fail(std::move(e));
  }
  return config;
}

std::filesystem::path profiler_config_path_from_environment() {
  const char* set = std::getenv(std::string(format::sagemaker::kProfilerConfigVariable).c_str());
  return (set && *set) ? std::filesystem::path(set)
                       : std::filesystem::path(format::sagemaker::default_config_path(format::sagemaker::kProfilerConfigFile));
}

ProfilerConfigWatcher::ProfilerConfigWatcher(std::filesystem::path path) : path_(std::move(path)) {}

ProfilerConfigWatcher::FileIdentity ProfilerConfigWatcher::identify(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return FileIdentity{true, st.st_ino, st.st_size, st.st_mtim};
}

Result<bool> ProfilerConfigWatcher::refresh() {
  const FileIdentity now = identify(path_);
  if (seen_ && *seen_ == now) return false;
  seen_ = now;
  auto loaded = load_profiler_config(path_);
  if (!loaded) return fail(std::move(loaded.error()));
  current_ = std::move(*loaded);
  return true;
}

}  // namespace vigil::profiler
