#include "profiler/trace_events.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "common/file_read.h"
#include "format/json_limits.h"
#include "profiler/profiler_layout.h"

namespace vigil::profiler {
namespace {

using json = nlohmann::json;

// A whole number from a JSON number (floats rounded: other producers write fractional µs) or from a
// string of digits (some write ids as strings).
std::optional<int64_t> whole_number(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return std::nullopt;
    return std::llround(d);
  }
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) return n;
  }
  return std::nullopt;
}

Error bad_record(std::string_view file, size_t index, std::string_view what) {
  return Error{.code = ErrorCode::CorruptData,
               .message = fmt::format("bad trace record {} in {}: {}", index, file, what),
               .file = std::string(file)};
}

class Parser {
 public:
  Parser(std::string_view node_id, std::string_view file) : node_id_(node_id), file_(file) {}

  Result<void> read(const json& record, size_t index) {
    if (!record.is_object()) return fail(bad_record(file_, index, "not an object"));
    const auto ph = record.find("ph");
    if (ph == record.end() || !ph->is_string()) return {};
    const std::string& kind = ph->get_ref<const std::string&>();
    auto pid = field(record, "pid", index, /*required=*/false);
    if (!pid) return fail(std::move(pid.error()));
    if (kind == "M") {
      read_metadata(record, pid->value_or(0));
    } else if (kind == "X") {
      auto ts = field(record, "ts", index, true);
      if (!ts) return fail(std::move(ts.error()));
      auto dur = field(record, "dur", index, true);
      if (!dur) return fail(std::move(dur.error()));
      const int64_t start = **ts + base_us_;
      add(record, record, pid->value_or(0), start, start + **dur);
    } else if (kind == "B") {
      open_[pid->value_or(0)].push_back(&record);
    } else if (kind == "E") {
      auto ts = field(record, "ts", index, true);
      if (!ts) return fail(std::move(ts.error()));
      auto& stack = open_[pid->value_or(0)];
      if (stack.empty()) return {};  // an "E" without its "B": smdebug logs it and goes on
      const json& begin = *stack.back();
      stack.pop_back();
      auto begin_ts = field(begin, "ts", index, true);
      if (!begin_ts) return fail(std::move(begin_ts.error()));
      const int64_t start = **begin_ts + base_us_, end = **ts + base_us_;
      if (end < start) return {};  // smdebug refuses a pair that ends before it begins
      add(begin, record.contains("args") ? record : begin, pid->value_or(0), start, end);
    }
    return {};
  }

  std::vector<TraceEvent> take() { return std::move(events_); }

 private:
  Result<std::optional<int64_t>> field(const json& record, const char* key, size_t index, bool required) const {
    const auto it = record.find(key);
    if (it == record.end()) {
      if (required) return fail(bad_record(file_, index, fmt::format("no \"{}\"", key)));
      return std::optional<int64_t>();
    }
    auto n = whole_number(*it);
    if (!n) return fail(bad_record(file_, index, fmt::format("\"{}\" is not a number", key)));
    return n;
  }

  void read_metadata(const json& record, int64_t pid) {
    const auto args = record.find("args");
    if (args == record.end() || !args->is_object()) return;
    if (record.value("name", "") == "process_name") {
      const auto name = args->find("name");
      if (name != args->end() && name->is_string()) phase_names_[pid] = name->get<std::string>();
    }
    const auto start = args->find("start_time_since_epoch_in_micros");
    if (start != args->end()) {
      if (auto n = whole_number(*start)) base_us_ = *n;
    }
  }

  // `named` gives name and tid, `with_args` the args (an "E" record's own where it has them).
  void add(const json& named, const json& with_args, int64_t phase_pid, int64_t start, int64_t end) {
    TraceEvent e;
    e.name = named.value("name", "");
    if (const auto it = phase_names_.find(phase_pid); it != phase_names_.end()) e.phase = it->second;
    e.start_us = start;
    e.end_us = end;
    e.phase_pid = phase_pid;
    e.pid = phase_pid;
    if (const auto tid = named.find("tid"); tid != named.end()) e.tid = whole_number(*tid).value_or(0);
    if (const auto args = with_args.find("args"); args != with_args.end() && args->is_object()) {
      e.args = *args;
      if (const auto p = args->find("pid"); p != args->end()) e.pid = whole_number(*p).value_or(e.pid);
      if (const auto t = args->find("thread_id"); t != args->end()) e.tid = whole_number(*t).value_or(e.tid);
    }
    e.node_id = node_id_;
    events_.push_back(std::move(e));
  }

  std::string node_id_;
  std::string_view file_;
  int64_t base_us_ = 0;
  std::map<int64_t, std::string> phase_names_;
  std::map<int64_t, std::vector<const json*>> open_;  // "B" records waiting for their "E", per pid
  std::vector<TraceEvent> events_;
};

}  // namespace

Result<std::vector<TraceEvent>> parse_trace_events(std::string_view text, std::string_view node_id,
                                                   std::string_view file) {
  if (format::json_nesting_exceeds(text))
    return fail(bad_record(file, 0, fmt::format("nested deeper than {} levels", format::kMaxJsonDepth)));
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_array())
    return fail(Error{.code = ErrorCode::CorruptData,
                      .message = fmt::format("{} is not a JSON array of trace records", file),
                      .file = std::string(file)});
  Parser parser(node_id, file);
  for (size_t i = 0; i < doc.size(); ++i) {
    if (auto ok = parser.read(doc[i], i); !ok) return fail(std::move(ok.error()));
  }
  return parser.take();
}

Result<std::vector<TraceEvent>> parse_trace_file(std::string_view text, std::string_view name) {
  return parse_trace_events(text, node_id_from_trace_file_name(name), name);
}

Result<std::vector<TraceEvent>> read_trace_file(const std::filesystem::path& path) {
  auto text = read_whole_file(path);
  if (!text) return fail(std::move(text.error()));
  return parse_trace_file(*text, path.string());
}

}  // namespace vigil::profiler
