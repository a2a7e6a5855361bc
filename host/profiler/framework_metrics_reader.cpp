#include "profiler/framework_metrics_reader.h"

namespace vigil::profiler {

FrameworkMetricsReader::FrameworkMetricsReader(std::shared_ptr<const storage::ObjectStore> store, int64_t buffer_us)
    : store_(std::move(store)), buffer_us_(buffer_us) {}

Result<FrameworkMetricsReader> FrameworkMetricsReader::open(std::string_view location, int64_t buffer_us) {
  auto store = storage::open_object_store(location);
  if (!store) return fail(store.error());
  return FrameworkMetricsReader(std::move(*store), buffer_us);
}

Result<void> FrameworkMetricsReader::refresh() {
  auto listed = list_trace_files(*store_);
  if (!listed) return fail(listed.error());
  files_ = std::move(*listed);
  return {};
}

std::optional<int64_t> FrameworkMetricsReader::first_timestamp_us() const {
  return files_.empty() ? std::nullopt : std::optional(files_.front().timestamp_us);
}

Result<std::vector<TraceEvent>> FrameworkMetricsReader::read_file(std::string_view relpath) const {
  auto text = store_->read(relpath);
  if (!text) return fail(std::move(text.error()));
  return parse_trace_file(*text, store_->describe(relpath));
}

Result<std::vector<TraceEvent>> FrameworkMetricsReader::events(int64_t start_us, int64_t end_us) {
  if (auto listed = refresh(); !listed) return fail(listed.error());
  std::vector<TraceEvent> out;
  for (const TimedFile& f : select_trace_files(files_, start_us, end_us, buffer_us_)) {
    auto events = read_file(f.relpath);
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
