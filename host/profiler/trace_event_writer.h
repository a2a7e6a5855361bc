// Framework events written as smdebug's hooks write them (format spec §8.2, §8.3): one Chrome trace
// file at a time under <root>/framework/<node_id>_<suffix>.tmp, published on rotation as
// framework/pevents/<YYYYMMDDHH>/<end_us>_<node_id>_<suffix>. Not thread-safe: one writer thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/published_file.h"
#include "profiler/profiler_layout.h"

namespace vigil::profiler {

struct TraceWriterOptions {
  std::filesystem::path root;  // ProfilingParameters.LocalPath
  std::string node_id;
  std::string suffix = std::string(kPythonTimelineSuffix);
  uint64_t rotate_max_file_size = 10'485'760;  // RotateMaxFileSizeInBytes
  int64_t rotate_close_interval_s = 60;         // RotateFileCloseIntervalInSeconds
  // µs since the epoch; every file's "ts" is relative to it. The clock at creation when unset.
  std::optional<int64_t> start_time_us;
  // The clock (µs since the epoch) that dates a file's close; the system clock when empty.
  std::function<int64_t()> now_us;
};

// One event, in absolute time.
struct TraceRecord {
  std::string training_phase;  // "Step:ModeKeys.TRAIN", "Forward", "cpu_functions", ...
  std::string name;            // the operation
  char ph = 'X';               // "X" complete, "i" instant, "B"/"E"
  int64_t start_us = 0;        // µs since the epoch
  int64_t duration_us = 0;     // written as "dur" for "X" only
  std::string scope;           // written as "s" for "i" where not empty
  nlohmann::ordered_json args = nlohmann::ordered_json::object();  // written where not empty
};

class TraceEventWriter {
 public:
  explicit TraceEventWriter(TraceWriterOptions options);
  TraceEventWriter(TraceEventWriter&&) = default;
  TraceEventWriter& operator=(TraceEventWriter&&) = default;
  // An open file is published (errors are lost: call close() to see them).
  ~TraceEventWriter();

  // Rotates first when due at the record's end time, opens a file when none is open, declares the
  // record's phase the first time this file sees it, then writes the record.
  [[nodiscard]] Result<void> write(const TraceRecord& record);
  // Rotation without a new event (smdebug checks while it waits for one): closes the open file when
  // it is due at `now_us`.
  [[nodiscard]] Result<void> rotate_if_due(int64_t now_us);
  // Publishes the open file, if any.
  [[nodiscard]] Result<void> close();

  int64_t start_time_us() const { return start_time_us_; }
  // The files published so far, in order (relative to the root).
  const std::vector<std::string>& published() const { return published_; }

 private:
  bool rotation_due(int64_t now_us) const;
  [[nodiscard]] Result<void> open();
  [[nodiscard]] Result<void> append(const nlohmann::ordered_json& record);
  int64_t now() const;

  TraceWriterOptions options_;
  int64_t start_time_us_ = 0;
  int64_t last_close_us_ = 0;
  std::map<std::string, int64_t> phase_index_;  // stable across the process's files
  std::optional<PublishedFile> file_;
  std::set<std::string> declared_phases_;  // phases this file has declared
  uint64_t file_size_ = 0;                 // as smdebug counts it: with the pending ",\n"
  int64_t latest_end_us_ = 0;              // of the events in this file
  std::vector<std::string> published_;
};

}  // namespace vigil::profiler
