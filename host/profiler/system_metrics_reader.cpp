#include "profiler/system_metrics_reader.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/json_limits.h"

namespace vigil::profiler {
namespace {

using json = nlohmann::json;

std::optional<SystemMetric> parse_line(std::string_view line) {
  if (format::json_nesting_exceeds(line)) return std::nullopt;
  const json doc = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  const auto text = [&](const char* key) -> std::optional<std::string> {
    const auto it = doc.find(key);
    if (it == doc.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  const auto number = [&](const char* key) -> std::optional<double> {
    const auto it = doc.find(key);
    if (it == doc.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  auto type = text("Type");
  auto dimension = text("Dimension");
  auto node = text("NodeId");
  const auto value = number("Value");
  const auto timestamp = number("Timestamp");
  if (!type || !dimension || !node || !value || !timestamp) return std::nullopt;
  return SystemMetric{.type = std::move(*type), .name = text("Name").value_or(""), .dimension = std::move(*dimension),
                      .value = *value, .node_id = std::move(*node), .timestamp_s = *timestamp};
}

}  // namespace

Result<std::vector<SystemMetric>> parse_system_metrics(std::string_view text, std::string_view file) {
  std::vector<SystemMetric> out;
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    ++line_number;
    if (auto metric = parse_line(line)) {
      out.push_back(std::move(*metric));
    } else if (!text.empty()) {
      return fail(Error{.code = ErrorCode::CorruptData,
                        .message = fmt::format("bad system metrics line {} in {}", line_number, file),
                        .file = std::string(file)});
    }
  }
  return out;
}

SystemMetricsReader::SystemMetricsReader(std::shared_ptr<const storage::ObjectStore> store, int64_t buffer_us)
    : store_(std::move(store)), buffer_us_(buffer_us) {}

Result<SystemMetricsReader> SystemMetricsReader::open(std::string_view location, int64_t buffer_us) {
  auto store = storage::open_object_store(location);
  if (!store) return fail(store.error());
  return SystemMetricsReader(std::move(*store), buffer_us);
}

Result<void> SystemMetricsReader::refresh() {
  auto listed = list_system_files(*store_);
  if (!listed) return fail(listed.error());
  files_ = std::move(*listed);
  return {};
}

std::optional<int64_t> SystemMetricsReader::first_timestamp_us() const {
  return files_.empty() ? std::nullopt : std::optional(files_.front().timestamp_us);
}

Result<std::vector<SystemMetric>> SystemMetricsReader::read_file(std::string_view relpath) const {
  auto text = store_->read(relpath);
  if (!text) return fail(std::move(text.error()));
  return parse_system_metrics(*text, store_->describe(relpath));
}

Result<std::vector<SystemMetric>> SystemMetricsReader::events(int64_t start_us, int64_t end_us,
                                                              const std::optional<std::string>& type) {
  if (auto listed = refresh(); !listed) return fail(listed.error());
  const int64_t start_ns = start_us * 1000, end_ns = end_us * 1000;
  std::vector<SystemMetric> out;
  for (const TimedFile& f : select_system_files(files_, start_us, end_us, buffer_us_)) {
    auto metrics = read_file(f.relpath);
    if (!metrics) {
      // Listed, then gone: a file being replaced is read on the next query.
      if (auto exists = store_->exists(f.relpath); exists && !*exists) continue;
      return fail(std::move(metrics.error()));
    }
    for (SystemMetric& m : *metrics) {
      const int64_t ns = m.timestamp_ns();
      if (ns < start_ns || ns > end_ns || (type && m.type != *type)) continue;
      out.push_back(std::move(m));
    }
  }
  return out;
}

Result<std::vector<SystemMetric>> SystemMetricsReader::events(double start, double end, TimeUnit unit,
                                                              const std::optional<std::string>& type) {
  return events(to_microseconds(start, unit), to_microseconds(end, unit), type);
}

}  // namespace vigil::profiler
