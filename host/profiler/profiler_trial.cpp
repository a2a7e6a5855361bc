#include "profiler/profiler_trial.h"

#include <algorithm>
#include <system_error>

#include "format/trial_layout.h"

namespace vigil::profiler {

bool training_job_ended(const std::filesystem::path& root) {
  std::error_code ec;
  return std::filesystem::exists(root / "system" / format::kEndOfTrainingMarker, ec) ||
         std::filesystem::exists(root / "framework" / format::kEndOfTrainingMarker, ec);
}

ProfilerTrial::ProfilerTrial(std::filesystem::path root, int64_t buffer_us)
    : root_(std::move(root)), system_(root_, buffer_us), framework_(root_, buffer_us) {}

std::optional<int64_t> ProfilerTrial::first_timestamp_us() {
  system_.refresh();
  framework_.refresh();
  const auto a = system_.first_timestamp_us(), b = framework_.first_timestamp_us();
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

}  // namespace vigil::profiler
