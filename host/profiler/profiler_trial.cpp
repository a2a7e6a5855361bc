#include "profiler/profiler_trial.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/os.h"
#include "profiler/profiler_layout.h"

namespace vigil::profiler {

bool training_job_ended(const storage::ObjectStore& store) {
  const auto marker_in = [&](ProfilerFolder folder) {
    auto exists = store.exists(end_marker_relpath(folder));
    return exists && *exists;
  };
  return marker_in(ProfilerFolder::System) || marker_in(ProfilerFolder::Framework);
}

Result<void> mark_training_ended(const std::filesystem::path& root, ProfilerFolder folder) {
  const std::filesystem::path marker = root / end_marker_relpath(folder);
  std::error_code ec;
  std::filesystem::create_directories(marker.parent_path(), ec);
  if (ec) return fail(Error::io(marker.parent_path().string(), ec.message()));
  // Empty, so it cannot be seen half written: created in place, as every host of a job may end at once.
  const os::UniqueFd fd(::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666));
  if (!fd) return fail(Error::io(marker.string(), std::strerror(errno)));
  return {};
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
