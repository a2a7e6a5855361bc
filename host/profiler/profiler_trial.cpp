#include "profiler/profiler_trial.h"

#include <algorithm>

#include "format/trial_layout.h"

namespace vigil::profiler {

bool training_job_ended(const storage::ObjectStore& store) {
  const auto marker_in = [&](std::string_view folder) {
    auto exists = store.exists(std::string(folder) + std::string(format::kEndOfTrainingMarker));
    return exists && *exists;
  };
  return marker_in("system/") || marker_in("framework/");
}

ProfilerTrial::ProfilerTrial(std::shared_ptr<const storage::ObjectStore> store, int64_t buffer_us)
    : store_(std::move(store)), system_(store_, buffer_us), framework_(store_, buffer_us) {}

Result<ProfilerTrial> ProfilerTrial::open(std::string_view location, int64_t buffer_us) {
  auto store = storage::open_object_store(location);
  if (!store) return fail(store.error());
  return ProfilerTrial(std::move(*store), buffer_us);
}

Result<std::optional<int64_t>> ProfilerTrial::first_timestamp_us() {
  if (auto listed = system_.refresh(); !listed) return fail(listed.error());
  if (auto listed = framework_.refresh(); !listed) return fail(listed.error());
  const auto a = system_.first_timestamp_us(), b = framework_.first_timestamp_us();
  if (a && b) return std::optional(std::min(*a, *b));
  return a ? a : b;
}

}  // namespace vigil::profiler
