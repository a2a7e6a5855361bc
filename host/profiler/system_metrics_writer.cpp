#include "profiler/system_metrics_writer.h"

#include <unistd.h>

#include <cmath>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vigil::profiler {

std::string system_metric_line(const SystemMetric& metric, std::string_view node_id, double timestamp_s) {
  nlohmann::ordered_json row;
  row["Type"] = metric.type;
  row["Name"] = metric.name;
  row["Dimension"] = metric.dimension;
  row["Value"] = metric.value;
  row["NodeId"] = node_id;
  row["Timestamp"] = timestamp_s;
  // Replacement, not an exception, for a hostname that is not UTF-8.
  return row.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::filesystem::path system_metrics_file_path(int64_t epoch_seconds, std::string_view file_host) {
  const std::time_t t = std::time_t(epoch_seconds);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  return std::filesystem::path("system") / "incremental" /
         fmt::format("{:04}{:02}{:02}{:02}", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour) /
         fmt::format("{:010}.{}.json", epoch_seconds, file_host);
}

SystemMetricsWriter::SystemMetricsWriter(SystemMetricsWriterOptions options) : options_(std::move(options)) {}

SystemMetricsWriter::~SystemMetricsWriter() { (void)close(); }

Result<void> SystemMetricsWriter::open(double timestamp_s) {
  const int64_t seconds = int64_t(std::floor(timestamp_s));
  const auto final_path = options_.root / system_metrics_file_path(seconds, options_.file_host);
  std::error_code ec;
  std::filesystem::create_directories(final_path.parent_path(), ec);
  if (ec) return fail(Error::io_write(final_path.parent_path().string(), ec.message()));
  // Outside the hour folders and without the name pattern readers look for, so never read half
  // written; the pid keeps two monitors of one host apart.
  const auto tmp_path =
      options_.root / "system" / fmt::format("{}-{}.systemmetrics.tmp", options_.file_host, ::getpid());
  auto file = PublishedFile::create(final_path, tmp_path);
  if (!file) return fail(std::move(file.error()));
  file_.emplace(std::move(*file));
  opened_at_s_ = timestamp_s;
  name_seconds_ = seconds;
  bytes_ = 0;
  return {};
}

Result<void> SystemMetricsWriter::write(double timestamp_s, std::span<const SystemMetric> rows) {
  if (rows.empty()) return {};
  // A file is rotated at the first sample of a later second than its name, so that two files never
  // share a name (a size limit reached within one second lets that file grow a little past it).
  const bool new_second = int64_t(std::floor(timestamp_s)) > name_seconds_;
  if (file_ && new_second &&
      (timestamp_s - opened_at_s_ >= options_.rotate_file_close_interval_s || bytes_ >= options_.rotate_max_file_size_bytes))
    if (auto closed = close(); !closed) return closed;
  if (!file_)
    if (auto opened = open(timestamp_s); !opened) return opened;
  std::string lines;
  for (const auto& row : rows)
    if (std::isfinite(row.value)) lines += system_metric_line(row, options_.node_id, timestamp_s);
  if (auto written = file_->write(lines); !written) {
    file_.reset();  // removes the temporary file
    return written;
  }
  bytes_ += lines.size();
  return {};
}

Result<void> SystemMetricsWriter::close() {
  if (!file_) return {};
  auto published = file_->publish();
  file_.reset();
  if (!published) return published;
  ++files_published_;
  return {};
}

}  // namespace vigil::profiler
