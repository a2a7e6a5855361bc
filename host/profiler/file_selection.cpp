#include "profiler/file_selection.h"

#include <algorithm>
#include <optional>

#include "profiler/profiler_layout.h"

namespace vigil::profiler {
namespace {

// `name_timestamp` gets the file's full name (store.describe): smdebug matches the whole path or key,
// so a name pattern may need the folders above system/.
template <typename TimestampOf>
Result<std::vector<TimedFile>> list_files(const storage::ObjectStore& store, std::string_view folder,
                                          TimestampOf name_timestamp) {
  auto listed = store.list(folder);
  if (!listed) return fail(listed.error());
  std::vector<TimedFile> out;
  for (auto& object : *listed)
    if (const std::optional<int64_t> ts = name_timestamp(store.describe(object.relpath)))
      out.push_back({*ts, std::move(object.relpath)});
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

Result<std::vector<TimedFile>> list_system_files(const storage::ObjectStore& store) {
  return list_files(store, "system/", [](const std::string& name) { return parse_system_file_timestamp_us(name); });
}

Result<std::vector<TimedFile>> list_trace_files(const storage::ObjectStore& store) {
  return list_files(store, "framework/", [](const std::string& name) -> std::optional<int64_t> {
    const auto parsed = parse_trace_file_name(name);
    return parsed ? std::optional(parsed->timestamp_us) : std::nullopt;
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
