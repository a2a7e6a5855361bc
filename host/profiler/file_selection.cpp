#include "profiler/file_selection.h"

#include <algorithm>
#include <optional>
#include <system_error>

#include "profiler/profiler_layout.h"

namespace vigil::profiler {
namespace {

template <typename TimestampOf>
std::vector<TimedFile> list_files(const std::filesystem::path& folder, TimestampOf timestamp_of) {
  std::vector<TimedFile> out;
  std::error_code ec;
  // A live job adds and renames files while this walks: whatever vanishes is skipped.
  auto it = std::filesystem::recursive_directory_iterator(folder, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    const std::string path = it->path().string();
    if (const std::optional<int64_t> ts = timestamp_of(path)) out.push_back({*ts, it->path()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t timestamp_of(const TimedFile& f) { return f.timestamp_us; }

// T[lo..hi] inclusive, as Python's T[lo:hi + 1] (empty where lo passes hi, hi clamped to the end).
std::span<const TimedFile> inclusive(std::span<const TimedFile> files, size_t lo, size_t hi) {
  const size_t end = std::min(hi + 1, files.size());
  return lo < end ? files.subspan(lo, end - lo) : std::span<const TimedFile>{};
}

size_t bisect_left(std::span<const TimedFile> files, int64_t t) {
  return size_t(std::ranges::lower_bound(files, t, {}, timestamp_of) - files.begin());
}
size_t bisect_right(std::span<const TimedFile> files, int64_t t) {
  return size_t(std::ranges::upper_bound(files, t, {}, timestamp_of) - files.begin());
}

}  // namespace

std::vector<TimedFile> list_system_files(const std::filesystem::path& root) {
  return list_files(root / "system", [](const std::string& path) { return parse_system_file_timestamp_us(path); });
}

std::vector<TimedFile> list_trace_files(const std::filesystem::path& root) {
  return list_files(root / "framework", [](const std::string& path) -> std::optional<int64_t> {
    const auto name = parse_trace_file_name(path);
    return name ? std::optional(name->timestamp_us) : std::nullopt;
  });
}

std::span<const TimedFile> select_system_files(std::span<const TimedFile> files, int64_t start_us, int64_t end_us,
                                               int64_t buffer_us) {
  const size_t right = bisect_right(files, start_us - buffer_us);
  const size_t lo = right > 0 ? right - 1 : 0;
  return inclusive(files, lo, bisect_left(files, end_us + buffer_us));
}

std::span<const TimedFile> select_trace_files(std::span<const TimedFile> files, int64_t start_us, int64_t end_us,
                                              int64_t buffer_us) {
  return inclusive(files, bisect_left(files, start_us - buffer_us), bisect_left(files, end_us + buffer_us));
}

}  // namespace vigil::profiler
