// Names in a profiler output folder (format spec §8.1, §8.2, §8.6): node ids, trace and system file
// names, and the time units of smdebug's profiler queries. Knows no file contents.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::profiler {

// SageMaker's resource configuration; its "current_host" names the node in a training cluster.
inline constexpr std::string_view kResourceConfigPath = "/opt/ml/input/config/resourceconfig.json";
inline constexpr std::string_view kPythonTimelineSuffix = "pythontimeline.json";

// "<rank>-<current_host>" where the resource configuration gives a host, otherwise
// "<rank>_<hostname>"; every '_' then becomes '-', so a node id never contains '_' (§8.1).
std::string node_id(int64_t rank, const std::optional<std::string>& current_host, std::string_view hostname);
// node_id for this process: `rank` or, without one, the pid; current_host from `resource_config`
// when that file exists and names one; gethostname() otherwise.
std::string this_process_node_id(std::optional<int64_t> rank,
                                 const std::filesystem::path& resource_config = kResourceConfigPath);

// "YYYYMMDDHH" of a time in µs since the epoch, in UTC.
std::string utc_hour_folder(int64_t time_us);
// "framework/pevents/<YYYYMMDDHH>/<end_us>_<node_id>_<suffix>" (the hour of end_us, UTC).
std::string trace_file_relpath(int64_t end_us, std::string_view node_id, std::string_view suffix = kPythonTimelineSuffix);
// "framework/<node_id>_<suffix>.tmp": where a trace file is written until it is rotated.
std::string trace_tmp_relpath(std::string_view node_id, std::string_view suffix = kPythonTimelineSuffix);

// A framework trace file's name: valid when it ends ".json", contains "pevents" and its basename has
// at least three '_'-separated fields; the timestamp is the integer before the first '_' (§8.6).
struct TraceFileName {
  int64_t timestamp_us;
  std::string node_id;  // as node_id_from_trace_file_name gives it
};
std::optional<TraceFileName> parse_trace_file_name(std::string_view path);
// Element 1 of the basename split on '_', with "<x>-algo-<n>" rewritten to "algo-<n>-<x>" (§8.3).
std::string node_id_from_trace_file_name(std::string_view path);

// A system metrics file's timestamp in µs: the path must match
// `.+/system/.+/(\d{10}).algo-\d+.json` as smdebug's re.match does: unescaped '.', end not anchored (so
// a ".json.tmp" matches too).
std::optional<int64_t> parse_system_file_timestamp_us(std::string_view path);

// The units smdebug's profiler queries accept (smdebug's TimeUnits).
enum class TimeUnit { Seconds, Milliseconds, Microseconds, Nanoseconds };
// `value` in `unit` as whole µs since the epoch (truncated toward zero, as Python's int()).
int64_t to_microseconds(double value, TimeUnit unit);

}  // namespace vigil::profiler
