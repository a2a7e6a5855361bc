// ProfilerReport (builtin-rules §3.13): every profiler rule's engine on data read once per window,
// a sticky "some sub-rule fired" flag, and after every window the sub-rules' report JSONs and the
// HTML page (through render_profiler_report_html, report_html.h).
#pragma once

#include <vigil/sdk/profiler.hpp>

#include <cstdint>
#include <filesystem>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engines.h"
#include "report_data.h"

namespace vigil::profiler_rules {

// ProfilerReport's `<RuleName>_<param>` keys (sagemaker-api §7.4): the rule name is matched
// case-insensitively and canonicalised; unknown rules or parameters and values that fail the
// rule's checks are refused with InvalidArgument naming the key. Result: rule -> its overrides.
Result<std::map<std::string, TextParams>> parse_report_overrides(
    std::span<const std::pair<std::string, std::string>> keys);

// A series kept to at most `cap` points: when full, neighbouring points are merged in pairs (their
// mean, or with keep_max the larger y, so that spikes stay visible) and later points are merged as
// they come, as many at a time as each kept point now stands for.
template <class X>
class BoundedSeries {
 public:
  explicit BoundedSeries(size_t cap = 4000, bool keep_max = false) : cap_(std::max<size_t>(cap, 2)), keep_max_(keep_max) {}
  void add(X x, double y) {
    merge_into(pending_, {x, y}, pending_n_);
    if (++pending_n_ < span_) return;
    points_.push_back(pending_);
    pending_n_ = 0;
    if (points_.size() < cap_) return;
    std::vector<std::pair<X, double>> halved;
    for (size_t i = 0; i + 1 < points_.size(); i += 2) {
      auto p = points_[i];
      merge_into(p, points_[i + 1], 1);
      halved.push_back(p);
    }
    if (points_.size() % 2) halved.push_back(points_.back());
    points_ = std::move(halved);
    span_ *= 2;
  }
  std::vector<std::pair<X, double>> points() const {
    auto out = points_;
    if (pending_n_ > 0) out.push_back(pending_);
    return out;
  }

 private:
  // Merges `q` into `p`, which already stands for `n` points (0: p is empty).
  void merge_into(std::pair<X, double>& p, std::pair<X, double> q, size_t n) {
    if (n == 0) {
      p = q;
      return;
    }
    if (keep_max_) {
      if (q.second > p.second) p = q;
    } else {
      const double w = static_cast<double>(n);
      p.first = static_cast<X>((static_cast<double>(p.first) * w + static_cast<double>(q.first)) / (w + 1));
      p.second = (p.second * w + q.second) / (w + 1);
    }
  }
  size_t cap_;
  bool keep_max_;
  size_t span_ = 1, pending_n_ = 0;  // raw points per kept point; raw points pending
  std::pair<X, double> pending_{};
  std::vector<std::pair<X, double>> points_;
};

class ProfilerReportEngine {
 public:
  using Logger = std::function<void(std::string_view)>;
  static constexpr size_t kMaxPoints = 4000;       // per timeline or step series
  static constexpr size_t kMaxDataloader = 5000;   // data-loader durations kept
  static constexpr size_t kMaxOperators = 2000;    // distinct operator names kept

  // The sub-rules with their implementation defaults and `overrides`; `log` hears a sub-rule's failure.
  static Result<ProfilerReportEngine> create(const std::map<std::string, TextParams>& overrides, std::string title,
                                             Logger log = {});

  // One window: every sub-rule in order; returns the sticky flag (some sub-rule has fired).
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events);
  bool any_fired() const { return fired_; }
  // True when some sub-rule judged in the last window.
  bool judged_last_window() const { return judged_last_; }
  // The sub-rules that fired in the last window.
  std::vector<std::string> fired_last_window() const { return fired_last_; }
  // The sub-rules left out after a failure.
  const std::vector<std::string>& failed() const { return failed_; }

  std::vector<RuleSummary> summaries() const;
  ReportData report_data(const std::string& verdict) const;
  // Writes <profiler_output>/profiler-reports/<RuleName>.json and <profiler_output>/profiler-report.html,
  // each atomically (a temporary file in the same folder, then renamed).
  Result<void> write(const std::filesystem::path& profiler_output, const std::string& verdict) const;

  // A sub-rule's engine (nullptr when absent or left out).
  const Engine* engine(std::string_view name) const;

 private:
  struct Sub {
    std::unique_ptr<Engine> engine;
    bool failed = false;
  };
  void collect(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events);
  BoundedSeries<double>& series(std::map<std::string, BoundedSeries<double>>& m, const std::string& label);

  std::string title_;
  Logger log_;
  std::vector<Sub> subs_;
  bool fired_ = false, judged_last_ = false;
  std::vector<std::string> fired_last_, failed_;
  std::optional<std::string> step_mode_;  // StepOutlier's mode, for the step series
  // The report's own data, without the samples and events that two windows share.
  std::optional<int64_t> previous_end_us_;
  int64_t first_timestamp_us_ = 0;
  std::map<std::string, BoundedSeries<double>> cpu_, gpu_, gpu_memory_, memory_, io_wait_, network_;
  std::map<std::string, BoundedSeries<int64_t>> steps_;
  std::vector<double> dataloader_s_;
  size_t dataloader_stride_ = 1, dataloader_seen_ = 0;
  std::map<std::string, double> phase_time_us_, operator_time_us_;
};

// Writes `content` to `path` through a temporary file in the same folder and a rename, so that a
// reader never sees a partial file.
Result<void> write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace vigil::profiler_rules
