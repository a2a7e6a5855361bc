// Which profiler files a time-range query reads (format spec §8.6): the files of a kind listed with
// the timestamp their name gives, and smdebug's bisect rules over those timestamps.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "storage/object_store.h"

namespace vigil::profiler {

// smdebug widens every query by 3 minutes on both sides before choosing files.
inline constexpr int64_t kDefaultSelectionBufferUs = 3 * 60 * 1'000'000LL;

struct TimedFile {
  int64_t timestamp_us;
  std::string relpath;  // relative to the profiler trial's root: "system/incremental/…", "framework/pevents/…"
  friend auto operator<=>(const TimedFile&, const TimedFile&) = default;
};

// The system metrics files under system/ (names as parse_system_file_timestamp_us accepts),
// sorted by timestamp, then relpath. None when the folder does not exist.
[[nodiscard]] Result<std::vector<TimedFile>> list_system_files(const storage::ObjectStore& store);
// The framework trace files under framework/ (names as parse_trace_file_name accepts), sorted.
[[nodiscard]] Result<std::vector<TimedFile>> list_trace_files(const storage::ObjectStore& store);

// System files, named by their first sample: T[lo..hi] with lo = max(bisect_right(T, start - B) - 1, 0)
// and hi = bisect_left(T, end + B), so the file holding `start` is read. `files` sorted.
std::span<const TimedFile> select_system_files(std::span<const TimedFile> files, int64_t start_us, int64_t end_us,
                                               int64_t buffer_us = kDefaultSelectionBufferUs);
// Trace files, named by their last event: T[lo..hi] with lo = bisect_left(T, start - B) and
// hi = bisect_left(T, end + B), so the file holding `end` is read. `files` sorted.
std::span<const TimedFile> select_trace_files(std::span<const TimedFile> files, int64_t start_us, int64_t end_us,
                                              int64_t buffer_us = kDefaultSelectionBufferUs);

}  // namespace vigil::profiler
