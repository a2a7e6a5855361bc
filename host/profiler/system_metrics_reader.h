// System metrics (format spec §8.6): the JSON Lines of system/incremental/... files, and time-range
// queries over a profiler trial (a local folder or an S3 prefix) that follow a live job (smdebug's
// LocalSystemMetricsReader and S3SystemMetricsReader).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "profiler/file_selection.h"
#include "profiler/profiler_layout.h"
#include "profiler/system_metric.h"
#include "storage/object_store.h"

namespace vigil::profiler {

// The samples of one file's text. A line that does not parse (or lacks Type, Dimension, Value, NodeId
// or Timestamp) is skipped when it is the last line, which may still be being written; anywhere else
// it is a CorruptData error naming `file` and the line number (1-based).
[[nodiscard]] Result<std::vector<SystemMetric>> parse_system_metrics(std::string_view text, std::string_view file);

class SystemMetricsReader {
 public:
  explicit SystemMetricsReader(std::shared_ptr<const storage::ObjectStore> store,
                               int64_t buffer_us = kDefaultSelectionBufferUs);
  // The reader of the profiler trial at `location` (a folder or "s3://bucket/prefix": open_object_store).
  [[nodiscard]] static Result<SystemMetricsReader> open(std::string_view location,
                                                        int64_t buffer_us = kDefaultSelectionBufferUs);

  // The samples with start ≤ Timestamp ≤ end (µs since the epoch), of `type` only where given, from
  // the files the bisect rule selects. Lists the files again first: a live job adds them.
  [[nodiscard]] Result<std::vector<SystemMetric>> events(int64_t start_us, int64_t end_us,
                                                         const std::optional<std::string>& type = std::nullopt);
  // events() with the range in `unit`.
  [[nodiscard]] Result<std::vector<SystemMetric>> events(double start, double end, TimeUnit unit,
                                                         const std::optional<std::string>& type = std::nullopt);
  // Every sample of one file (a relpath as files() gives it).
  [[nodiscard]] Result<std::vector<SystemMetric>> read_file(std::string_view relpath) const;

  // Lists the files again; on failure the files listed before are kept.
  [[nodiscard]] Result<void> refresh();
  // The files as last listed, sorted by timestamp.
  const std::vector<TimedFile>& files() const { return files_; }
  // The first file's timestamp, as last listed.
  std::optional<int64_t> first_timestamp_us() const;
  const storage::ObjectStore& store() const { return *store_; }

 private:
  std::shared_ptr<const storage::ObjectStore> store_;
  int64_t buffer_us_;
  std::vector<TimedFile> files_;
};

}  // namespace vigil::profiler
