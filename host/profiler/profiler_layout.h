// Names in a profiler output folder (format spec §8.2, §8.6): trace and system file names, and the
// time units of smdebug's profiler queries (node ids are node_id.h's). Knows no file contents.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::profiler {

inline constexpr std::string_view kPythonTimelineSuffix = "pythontimeline.json";

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

// Where a profiler output says that training has ended (§8.6: the profiler trial ends when either
// exists): "system/training_job_end.ts", written when the system monitor ends, and
// "framework/training_job_end.ts", written when a hook's profiler closes.
enum class ProfilerFolder { System, Framework };
std::string end_marker_relpath(ProfilerFolder folder);

// The units smdebug's profiler queries accept (smdebug's TimeUnits).
enum class TimeUnit { Seconds, Milliseconds, Microseconds, Nanoseconds };
// `value` in `unit` as whole µs since the epoch (truncated toward zero, as Python's int()).
int64_t to_microseconds(double value, TimeUnit unit);

}  // namespace vigil::profiler
