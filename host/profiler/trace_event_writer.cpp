#include "profiler/trace_event_writer.h"

#include <chrono>
#include <cmath>
#include <system_error>

#include "format/python_json.h"

namespace vigil::profiler {
namespace {

using ojson = nlohmann::ordered_json;

int64_t system_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ojson metadata(std::string_view name, int64_t pid, ojson args) {
  ojson m = ojson::object();
  m["name"] = name;
  m["ph"] = "M";
  m["pid"] = pid;
  m["args"] = std::move(args);
  return m;
}

}  // namespace

TraceEventWriter::TraceEventWriter(TraceWriterOptions options) : options_(std::move(options)) {
  start_time_us_ = options_.start_time_us.value_or(now());
  last_close_us_ = start_time_us_;
}

TraceEventWriter::~TraceEventWriter() {
  if (file_ && file_->is_open()) (void)close();
}

int64_t TraceEventWriter::now() const { return options_.now_us ? options_.now_us() : system_clock_us(); }

bool TraceEventWriter::rotation_due(int64_t now_us) const {
  // Whole seconds rounded half to even, as smdebug's round() compares them.
  const double seconds = std::nearbyint(double(now_us - last_close_us_) / 1e6);
  return seconds > double(options_.rotate_close_interval_s) || file_size_ > options_.rotate_max_file_size;
}

Result<void> TraceEventWriter::open() {
  const auto tmp = options_.root / trace_tmp_relpath(options_.node_id, options_.suffix);
  std::error_code ec;
  std::filesystem::create_directories(tmp.parent_path(), ec);
  if (ec) return fail(Error::io_write(tmp.parent_path().string(), ec.message()));
  // The final name depends on the last event; publish_as gives it.
  auto file = PublishedFile::create(tmp, tmp);
  if (!file) return fail(std::move(file.error()));
  file_.emplace(std::move(*file));
  declared_phases_.clear();
  latest_end_us_ = 0;
  if (auto ok = file_->write("[\n"); !ok) return ok;
  file_size_ = 2;
  if (auto ok = append(metadata("process_name", 0, {{"start_time_since_epoch_in_micros", start_time_us_}})); !ok) return ok;
  return append(metadata("process_sort_index", 0, {{"sort_index", 0}}));
}

Result<void> TraceEventWriter::append(const ojson& record) {
  // Records are separated rather than each followed by ",\n", so closing needs no truncation; the
  // size counts the pending ",\n" as smdebug's file holds it, so rotation happens at the same event.
  const std::string text = format::python_json_dumps(record);
  const bool first = file_size_ == 2;
  if (auto ok = file_->write(first ? text : ",\n" + text); !ok) return ok;
  file_size_ += text.size() + 2;
  return {};
}

Result<void> TraceEventWriter::write(const TraceRecord& record) {
  const int64_t end_us = record.start_us + record.duration_us;
  if (file_ && rotation_due(end_us)) {
    if (auto ok = close(); !ok) return ok;
  }
  if (!file_) {
    if (auto ok = open(); !ok) return ok;
  }
  const auto [at, added] = phase_index_.try_emplace(record.training_phase, int64_t(phase_index_.size()));
  const int64_t pid = at->second;
  // Instant events belong to no phase: smdebug declares none for them.
  if (record.ph != 'i' && declared_phases_.insert(record.training_phase).second) {
    if (auto ok = append(metadata("process_name", pid, {{"name", record.training_phase}})); !ok) return ok;
    if (auto ok = append(metadata("process_sort_index", pid, {{"sort_index", pid}})); !ok) return ok;
  }
  ojson event = ojson::object();
  event["name"] = record.name;
  event["pid"] = pid;
  event["ph"] = std::string(1, record.ph);
  event["ts"] = record.start_us - start_time_us_;
  if (record.ph == 'X') event["dur"] = record.duration_us;
  if (record.ph == 'i' && !record.scope.empty()) event["s"] = record.scope;
  if (!record.args.empty()) event["args"] = record.args;
  if (auto ok = append(event); !ok) return ok;
  latest_end_us_ = std::max(latest_end_us_, end_us);
  return {};
}

Result<void> TraceEventWriter::rotate_if_due(int64_t now_us) {
  if (file_ && rotation_due(now_us)) return close();
  return {};
}

Result<void> TraceEventWriter::close() {
  if (!file_) return {};
  PublishedFile file = std::move(*file_);
  file_.reset();
  file_size_ = 0;
  if (auto ok = file.write("\n]"); !ok) return ok;
  const std::string relpath = trace_file_relpath(latest_end_us_, options_.node_id, options_.suffix);
  const auto final_path = options_.root / relpath;
  std::error_code ec;
  std::filesystem::create_directories(final_path.parent_path(), ec);
  if (ec) return fail(Error::io_write(final_path.parent_path().string(), ec.message()));
  if (auto ok = file.publish_as(final_path); !ok) return ok;
  last_close_us_ = now();
  published_.push_back(relpath);
  return {};
}

}  // namespace vigil::profiler
