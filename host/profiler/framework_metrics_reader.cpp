#include "profiler/framework_metrics_reader.h"

namespace vigil::profiler {

FrameworkMetricsReader::FrameworkMetricsReader(std::filesystem::path root, int64_t buffer_us)
    : root_(std::move(root)), buffer_us_(buffer_us) {}

void FrameworkMetricsReader::refresh() { files_ = list_trace_files(root_); }

std::optional<int64_t> FrameworkMetricsReader::first_timestamp_us() const {
  return files_.empty() ? std::nullopt : std::optional(files_.front().timestamp_us);
}

Result<std::vector<TraceEvent>> FrameworkMetricsReader::events(int64_t start_us, int64_t end_us) {
  refresh();
  std::vector<TraceEvent> out;
  for (const TimedFile& f : select_trace_files(files_, start_us, end_us, buffer_us_)) {
    auto events = read_trace_file(f.path);
    if (!events) return fail(std::move(events.error()));
    for (TraceEvent& e : *events) {
      if (e.end_us < start_us || end_us < e.start_us) continue;
      out.push_back(std::move(e));
    }
  }
  return out;
}

Result<std::vector<TraceEvent>> FrameworkMetricsReader::events(double start, double end, TimeUnit unit) {
  return events(to_microseconds(start, unit), to_microseconds(end, unit));
}

}  // namespace vigil::profiler
