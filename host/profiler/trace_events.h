// Framework events read from Chrome trace files (format spec §8.3), with smdebug's TraceEventParser
// semantics: "M" records name the phases and give the base time, "X" records are events, "B"/"E"
// pairs are matched per pid, every other phase is ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace vigil::profiler {

struct TraceEvent {
  std::string name;      // the operation ("Step:ModeKeys.TRAIN", "forward", ...)
  std::string phase;     // the training phase: the process_name of phase_pid ("" when none names it)
  int64_t start_us = 0;  // µs since the epoch
  int64_t end_us = 0;
  int64_t phase_pid = 0;  // the record's "pid": the phase index
  int64_t pid = 0;        // args.pid where present, else phase_pid
  int64_t tid = 0;        // args.thread_id where present, else the record's "tid", else 0
  std::string node_id;
  nlohmann::json args = nlohmann::json::object();

  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
};

// The events of one trace file's text, in file order ("E" events where their pair closes).
// `file` names the file in errors: text that is not a JSON array of objects, or a record whose
// "ts", "dur" or "pid" is not a number.
[[nodiscard]] Result<std::vector<TraceEvent>> parse_trace_events(std::string_view text, std::string_view node_id,
                                                                 std::string_view file);
// The events of the trace file named `name` (its path, or its s3:// key), whose text is `text`: the
// node id comes from the name (node_id_from_trace_file_name), which also names the file in errors.
[[nodiscard]] Result<std::vector<TraceEvent>> parse_trace_file(std::string_view text, std::string_view name);
// Reads the local file `path` and parses it with parse_trace_file.
[[nodiscard]] Result<std::vector<TraceEvent>> read_trace_file(const std::filesystem::path& path);

}  // namespace vigil::profiler
