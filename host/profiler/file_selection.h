// Which profiler files a time-range query reads (format spec §8.6): the files of a kind listed with
// the timestamp their name gives, and smdebug's bisect rules over those timestamps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace vigil::profiler {

// smdebug widens every query by 3 minutes on both sides before choosing files.
inline constexpr int64_t kDefaultSelectionBufferUs = 3 * 60 * 1'000'000LL;

struct TimedFile {
  int64_t timestamp_us;
  std::filesystem::path path;
  friend auto operator<=>(const TimedFile&, const TimedFile&) = default;
};

// The system metrics files under <root>/system (names as parse_system_file_timestamp_us accepts),
// sorted by timestamp, then path. None when the folder does not exist.
std::vector<TimedFile> list_system_files(const std::filesystem::path& root);
// The framework trace files under <root>/framework (names as parse_trace_file_name accepts), sorted.
std::vector<TimedFile> list_trace_files(const std::filesystem::path& root);

// System files, named by their first sample: T[lo..hi] with lo = max(bisect_right(T, start - B) - 1, 0)
// and hi = bisect_left(T, end + B), so the file holding `start` is read. `files` sorted.
std::span<const TimedFile> select_system_files(std::span<const TimedFile> files, int64_t start_us, int64_t end_us,
                                               int64_t buffer_us = kDefaultSelectionBufferUs);
// Trace files, named by their last event: T[lo..hi] with lo = bisect_left(T, start - B) and
// hi = bisect_left(T, end + B), so the file holding `end` is read. `files` sorted.
std::span<const TimedFile> select_trace_files(std::span<const TimedFile> files, int64_t start_us, int64_t end_us,
                                              int64_t buffer_us = kDefaultSelectionBufferUs);

}  // namespace vigil::profiler
