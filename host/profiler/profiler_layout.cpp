#include "profiler/profiler_layout.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <regex>

#include <fmt/format.h>

#include "common/regex_limits.h"
#include "format/trial_layout.h"

namespace vigil::profiler {
namespace {

std::string_view basename_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string utc_hour_folder(int64_t time_us) {
  const std::time_t seconds = std::time_t(time_us / 1'000'000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  return fmt::format("{:04}{:02}{:02}{:02}", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour);
}

std::string end_marker_relpath(ProfilerFolder folder) {
  return fmt::format("{}/{}", folder == ProfilerFolder::System ? "system" : "framework", format::kEndOfTrainingMarker);
}

std::string trace_file_relpath(int64_t end_us, std::string_view node_id, std::string_view suffix) {
  return fmt::format("framework/pevents/{}/{}_{}_{}", utc_hour_folder(end_us), end_us, node_id, suffix);
}

std::string trace_tmp_relpath(std::string_view node_id, std::string_view suffix) {
  return fmt::format("framework/{}_{}.tmp", node_id, suffix);
}

std::string node_id_from_trace_file_name(std::string_view path) {
  const std::string_view base = basename_of(path);
  const size_t first = base.find('_');
  if (first == std::string_view::npos) return {};
  std::string_view field = base.substr(first + 1);
  field = field.substr(0, field.find('_'));
  // smdebug names a rank on a SageMaker host host first: "0-algo-1" reads as "algo-1-0".
  static const std::regex rank_then_host(R"(^(.+)-(algo-\d+)$)");
  std::match_results<std::string_view::const_iterator> m;
  if (field.size() <= kMaxRegexSubjectLength && std::regex_match(field.begin(), field.end(), m, rank_then_host)) return fmt::format("{}-{}", m.str(2), m.str(1));
  return std::string(field);
}

std::optional<TraceFileName> parse_trace_file_name(std::string_view path) {
  if (!path.ends_with(".json") || path.find("pevents") == std::string_view::npos) return std::nullopt;
  const std::string_view base = basename_of(path);
  if (std::count(base.begin(), base.end(), '_') < 2) return std::nullopt;
  const std::string_view stamp = base.substr(0, base.find('_'));
  if (stamp.empty() || stamp.size() > 18 || !std::all_of(stamp.begin(), stamp.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return TraceFileName{std::stoll(std::string(stamp)), node_id_from_trace_file_name(path)};
}

std::optional<int64_t> parse_system_file_timestamp_us(std::string_view path) {
  // Searched, not matched whole: like Python's re.match the end is not anchored.
  static const std::regex system_file(R"(.+/system/.+/(\d{10}).algo-\d+.json)");
  // The matcher recurses once per character (common/regex_limits.h): a longer path is not one.
  if (path.size() > kMaxRegexSubjectLength) return std::nullopt;
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(path.begin(), path.end(), m, system_file)) return std::nullopt;
  return std::stoll(m.str(1)) * 1'000'000;
}

int64_t to_microseconds(double value, TimeUnit unit) {
  switch (unit) {
    case TimeUnit::Seconds: return int64_t(value * 1e6);
    case TimeUnit::Milliseconds: return int64_t(value * 1e3);
    case TimeUnit::Microseconds: return int64_t(value);
    case TimeUnit::Nanoseconds: return int64_t(value / 1e3);
  }
  return int64_t(value);
}

}  // namespace vigil::profiler
