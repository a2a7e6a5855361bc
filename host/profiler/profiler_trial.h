// A profiler trial, a local folder or an S3 prefix, as one trial (smdebug's ProfilerTrial, format
// spec §8.6): its system and framework readers, when its data begins, and whether the job has ended.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "profiler/framework_metrics_reader.h"
#include "profiler/profiler_layout.h"
#include "profiler/system_metrics_reader.h"
#include "storage/object_store.h"

namespace vigil::profiler {

// Whether training_job_end.ts exists under system/ or framework/. A marker that cannot be looked up
// (the store failing) counts as absent: the job is followed on, and the next listing reports the fault.
bool training_job_ended(const storage::ObjectStore& store);
// Says so in a local profiler output `root`: the one writer of the markers above (the hooks' profiler
// when it closes, the system monitor's end, vigil monitor's, vigil train's supervisor).
[[nodiscard]] Result<void> mark_training_ended(const std::filesystem::path& root, ProfilerFolder folder);

class ProfilerTrial {
 public:
  explicit ProfilerTrial(std::shared_ptr<const storage::ObjectStore> store,
                         int64_t buffer_us = kDefaultSelectionBufferUs);
  // The profiler trial at `location` (a folder or "s3://bucket/prefix": open_object_store).
  [[nodiscard]] static Result<ProfilerTrial> open(std::string_view location,
                                                  int64_t buffer_us = kDefaultSelectionBufferUs);

  SystemMetricsReader& system_metrics() { return system_; }
  FrameworkMetricsReader& framework_metrics() { return framework_; }

  // The smaller of the first system and the first framework file timestamps, after listing both
  // again; nullopt while neither kind has a file (smdebug polls every 10 s until one does).
  [[nodiscard]] Result<std::optional<int64_t>> first_timestamp_us();
  bool job_ended() const { return training_job_ended(*store_); }
  // The location as it was named: "/data/job/profiler-output" or "s3://bucket/job/profiler-output".
  std::string location() const { return store_->location(); }
  const storage::ObjectStore& store() const { return *store_; }

 private:
  std::shared_ptr<const storage::ObjectStore> store_;
  SystemMetricsReader system_;
  FrameworkMetricsReader framework_;
};

}  // namespace vigil::profiler
