// Framework events over a profiler trial (a local folder or an S3 prefix) by time range, following a
// live job (smdebug's LocalAlgorithmMetricsReader and S3AlgorithmMetricsReader, format spec §8.6).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "profiler/file_selection.h"
#include "profiler/profiler_layout.h"
#include "profiler/trace_events.h"
#include "storage/object_store.h"

namespace vigil::profiler {

class FrameworkMetricsReader {
 public:
  explicit FrameworkMetricsReader(std::shared_ptr<const storage::ObjectStore> store,
                                  int64_t buffer_us = kDefaultSelectionBufferUs);
  // The reader of the profiler trial at `location` (a folder or "s3://bucket/prefix": open_object_store).
  [[nodiscard]] static Result<FrameworkMetricsReader> open(std::string_view location,
                                                           int64_t buffer_us = kDefaultSelectionBufferUs);

  // The events whose [start, end] overlaps [start_us, end_us], from the trace files the bisect rule
  // selects, in file order. Lists the files again first: locally smdebug refreshes on every query.
  [[nodiscard]] Result<std::vector<TraceEvent>> events(int64_t start_us, int64_t end_us);
  [[nodiscard]] Result<std::vector<TraceEvent>> events(double start, double end, TimeUnit unit);
  // Every event of one trace file (a relpath as files() gives it).
  [[nodiscard]] Result<std::vector<TraceEvent>> read_file(std::string_view relpath) const;

  // Lists the files again; on failure the files listed before are kept.
  [[nodiscard]] Result<void> refresh();
  const std::vector<TimedFile>& files() const { return files_; }
  std::optional<int64_t> first_timestamp_us() const;
  const storage::ObjectStore& store() const { return *store_; }

 private:
  std::shared_ptr<const storage::ObjectStore> store_;
  int64_t buffer_us_;
  std::vector<TimedFile> files_;
};

}  // namespace vigil::profiler
