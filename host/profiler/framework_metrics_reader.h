// Framework events over a profiler folder by time range, following a live job (smdebug's
// LocalAlgorithmMetricsReader, format spec §8.6).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "common/error.h"
#include "profiler/file_selection.h"
#include "profiler/profiler_layout.h"
#include "profiler/trace_events.h"

namespace vigil::profiler {

class FrameworkMetricsReader {
 public:
  explicit FrameworkMetricsReader(std::filesystem::path root, int64_t buffer_us = kDefaultSelectionBufferUs);

  // The events whose [start, end] overlaps [start_us, end_us], from the trace files the bisect rule
  // selects, in file order. Lists the files again first: locally smdebug refreshes on every query.
  [[nodiscard]] Result<std::vector<TraceEvent>> events(int64_t start_us, int64_t end_us);
  [[nodiscard]] Result<std::vector<TraceEvent>> events(double start, double end, TimeUnit unit);

  void refresh();
  const std::vector<TimedFile>& files() const { return files_; }
  std::optional<int64_t> first_timestamp_us() const;
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  int64_t buffer_us_;
  std::vector<TimedFile> files_;
};

}  // namespace vigil::profiler
