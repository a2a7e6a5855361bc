// A profiler output folder as one trial (smdebug's ProfilerTrial, format spec §8.6): its system and
// framework readers, when its data begins, and whether the job has ended.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "profiler/framework_metrics_reader.h"
#include "profiler/system_metrics_reader.h"

namespace vigil::profiler {

// Whether training_job_end.ts exists under <root>/system or <root>/framework.
bool training_job_ended(const std::filesystem::path& root);

class ProfilerTrial {
 public:
  explicit ProfilerTrial(std::filesystem::path root, int64_t buffer_us = kDefaultSelectionBufferUs);

  SystemMetricsReader& system_metrics() { return system_; }
  FrameworkMetricsReader& framework_metrics() { return framework_; }

  // The smaller of the first system and the first framework file timestamps, after listing both
  // again; nullopt while neither kind has a file (smdebug polls every 10 s until one does).
  std::optional<int64_t> first_timestamp_us();
  bool job_ended() const { return training_job_ended(root_); }
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  SystemMetricsReader system_;
  FrameworkMetricsReader framework_;
};

}  // namespace vigil::profiler
