// System metrics files as SageMaker's system monitor writes them (format spec §8.2, §8.6): JSON
// lines {"Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"} in
// <root>/system/incremental/<YYYYMMDDHH>/<epoch_seconds>.<algo-N>.json, named after the first
// sample they hold (readers pick files by that name), rotated by size and age like the timeline
// files. A file is written under a temporary name and published by rename when it is rotated or
// closed, so a reader only ever sees finished files of whole lines.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/published_file.h"
#include "profiler/system_metric.h"

namespace vigil::profiler {

// One line, newline included, keys in SageMaker's order, stamped with `node_id` and `timestamp_s`
// (the metric's own node_id and timestamp_s are not used).
[[nodiscard]] std::string system_metric_line(const SystemMetric& metric, std::string_view node_id, double timestamp_s);

// "system/incremental/<YYYYMMDDHH>/<epoch_seconds>.<file_host>.json" (UTC hour, 10-digit seconds).
[[nodiscard]] std::filesystem::path system_metrics_file_path(int64_t epoch_seconds, std::string_view file_host);

struct SystemMetricsWriterOptions {
  std::filesystem::path root;  // the profiler root (LocalPath)
  std::string node_id;         // NodeId of every row
  std::string file_host;       // "algo-1"
  uint64_t rotate_max_file_size_bytes = 10485760;
  double rotate_file_close_interval_s = 60;
};

class SystemMetricsWriter {
 public:
  explicit SystemMetricsWriter(SystemMetricsWriterOptions options);
  ~SystemMetricsWriter();  // publishes the open file (errors are the caller's to get from close())
  SystemMetricsWriter(const SystemMetricsWriter&) = delete;
  SystemMetricsWriter& operator=(const SystemMetricsWriter&) = delete;

  // One sample's rows, written whole. Rotates first when the open file is old enough
  // (rotate_file_close_interval_s) or big enough (rotate_max_file_size_bytes) and this sample is of
  // a later second than the file's name: two files never share a name.
  [[nodiscard]] Result<void> write(double timestamp_s, std::span<const SystemMetric> rows);
  // Publishes the open file, if any.
  [[nodiscard]] Result<void> close();

  uint64_t files_published() const { return files_published_; }

 private:
  [[nodiscard]] Result<void> open(double timestamp_s);

  SystemMetricsWriterOptions options_;
  std::optional<PublishedFile> file_;
  double opened_at_s_ = 0;
  int64_t name_seconds_ = -1;  // of the open or last published file
  uint64_t bytes_ = 0;
  uint64_t files_published_ = 0;
};

}  // namespace vigil::profiler
