// The rules over framework trace events (builtin-rules §3.7-§3.9, §3.11).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engines.h"
#include "statistics.h"

namespace vigil::profiler_rules {

namespace {

bool is_step(const sdk::FrameworkEvent& e) { return e.name.find("Step:ModeKeys") != std::string::npos; }

double round2(double x) { return std::round(x * 100) / 100; }

nlohmann::json histogram_json(const std::vector<double>& values, int bins) {
  auto [edges, counts] = builtin::histogram(values, bins);
  return {{"bin_edges", edges}, {"counts", counts}};
}

}  // namespace

// ---- MaxInitializationTime ---------------------------------------------------------------------------

bool MaxInitializationTime::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  begin_window();
  for (const sdk::SystemMetric& e : events.system) {
    job_start_s_ = std::min(job_start_s_.value_or(e.timestamp_s), e.timestamp_s);
    job_end_s_ = std::max(job_end_s_.value_or(e.timestamp_s), e.timestamp_s);
  }
  for (const sdk::FrameworkEvent& e : events.framework) {
    if (!is_step(e)) continue;
    ++datapoints_;
    if (!first_step_us_) first_step_us_ = e.start_us;
    else last_step_us_ = e.start_us;
    last_step_end_us_ = std::max(last_step_end_us_.value_or(e.end_us), e.end_us);
  }
  if (job_start_s_) details_["job_start"] = *job_start_s_;
  if (job_end_s_) details_["job_end"] = *job_end_s_;
  if (first_step_us_) details_["step_num"]["first"] = *first_step_us_;
  if (last_step_us_) details_["step_num"]["last"] = *last_step_us_;
  judged();
  // Inside ProfilerReport the original never advances the sub-rule's last_timestamp, so the elapsed
  // time stays 0 and the rule can never fire there (§3.7, copied). On its own it is the window start.
  const int64_t last_timestamp = c_.inside_report ? w.first_timestamp_us : w.start_us;
  const double elapsed_us = static_cast<double>(last_timestamp - w.first_timestamp_us);
  const double limit_us = c_.threshold_min * 6e7;
  // Not sticky: once a step has been seen the rule stops firing.
  if (!(elapsed_us > limit_us) || first_step_us_) return false;
  ++violations_;
  ++triggered_;
  fire({{"metric", "minutes since the job's first timestamp without a training step"},
        {"observed", elapsed_us / 6e7},
        {"threshold", c_.threshold_min}});
  return true;
}

// ---- StepOutlier ------------------------------------------------------------------------------------

bool StepOutlier::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  (void)w;
  begin_window();
  // This window's step intervals per node and step number (reset every window).
  std::map<std::string, std::map<int64_t, std::pair<int64_t, int64_t>>> intervals;
  for (const sdk::FrameworkEvent& e : events.framework) {
    // `mode` adds events to the Step ones; it does not filter them (§3.8).
    if (!is_step(e) && !(c_.mode && e.name == *c_.mode)) continue;
    ++datapoints_;
    const int64_t step = event_step_num(e).value_or(-1);
    dur_[e.node_id][e.name].push_back(static_cast<double>(e.end_us - e.start_us) / 1e6);
    steps_[e.node_id][e.name].push_back(step);
    intervals[e.node_id][step] = {e.start_us, e.end_us};
  }
  bool any = false;
  FrameworkMetrics metrics;
  bool aggregated = false;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [node, keys] : dur_) {
    for (const auto& [key, v] : keys) {
      if (v.size() <= kMinDurations) continue;
      any = true;
      const double m = builtin::mean(v);
      const double sd = builtin::population_std(v);
      const double thr = m + c_.stddev * sd;
      const std::vector<int64_t>& steps = steps_[node][key];
      std::vector<int64_t> outliers;
      std::vector<double> normal;
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] > thr) outliers.push_back(steps[i]);
        else if (v[i] < thr) normal.push_back(v[i]);
      }
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const auto n = static_cast<int64_t>(outliers.size());
      // A later key of the same node overwrites the node's entry (§3.8).
      details_["step_details"][node] = {
          {"step_stats",
           {{"mean", m},
            {"max", sorted.back()},
            {"p99", builtin::quantile_sorted(sorted, 0.99)},
            {"p95", builtin::quantile_sorted(sorted, 0.95)},
            {"p50", builtin::quantile_sorted(sorted, 0.50)},
            {"min", sorted.front()}}},
          {"number_of_outliers", n},
          {"phase", key},
          {"stddev", round2(sd)},
          {"histogram", histogram_json(normal, 100)},
          {"outliers", outliers}};
      outlier_steps_[node + " " + key] = outliers;
      if (n > c_.n_outliers) {
        violations_ += n;
        ++triggered_;
        const auto& node_intervals = intervals[node];
        for (int64_t s : outliers) {
          const auto it = node_intervals.find(s);
          if (it == node_intervals.end()) continue;  // an outlier of an earlier window
          add_events_overlapping(metrics, events.framework, it->second.first, it->second.second);
          aggregated = true;
        }
        items.push_back({{"node", node}, {"phase", key}, {"outliers", n}, {"threshold_s", thr}, {"mean_s", m},
                         {"std_s", sd}});
      }
    }
  }
  if (aggregated) {
    const nlohmann::json fm = metrics.to_json();
    for (const auto& [k, val] : fm.items()) details_[k] = val;
  }
  if (any) judged();
  else if (datapoints_ == 0) cannot_judge("no step events (Step:ModeKeys) yet");
  else cannot_judge(fmt::format("no node and phase has more than {} step durations yet", kMinDurations));
  if (!items.empty())
    fire({{"metric", fmt::format("steps longer than mean + {} standard deviations", c_.stddev)},
          {"observed", items.front()["outliers"]},
          {"threshold", c_.n_outliers},
          {"violations", items}});
  return fire_sticky();
}

// ---- Dataloader --------------------------------------------------------------------------------------

bool Dataloader::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  (void)w;
  begin_window();
  if (cores_.empty())
    for (const sdk::SystemMetric& e : events.system)
      if (e.dimension == "CPUUtilization") cores_.insert(e.name);
  std::map<int64_t, std::set<std::string>> pids;  // this window's seconds -> data-loader pids
  for (const sdk::FrameworkEvent& e : events.framework) {
    // P is emptied beyond 1000 entries, checked once per event (§3.9).
    if (parallel_.size() > 1000) parallel_.clear();
    if (e.phase == "DataLoaderIterInitialize") {
      if (auto v = event_arg(e, "pin_memory")) pin_memory_ = *v;
      if (auto v = event_arg(e, "num_workers")) num_workers_ = *v;
    } else if (e.phase == "DataLoaderWorker" || e.phase == "DataLoaderIter") {
      ++datapoints_;
      durations_s_.push_back(static_cast<double>(e.end_us - e.start_us) / 1e6);
      const auto second = static_cast<int64_t>(std::floor(static_cast<double>(e.start_us) / 1e6));
      if (auto pid = event_arg(e, "pid")) pids[second].insert(pid->dump());
      prefetch_ = nullptr;
    }
    if (e.name.find("Prefetch") != std::string::npos) prefetch_ = true;
  }
  if (pids.empty()) {
    if (parallel_.empty()) cannot_judge("no data-loader events with a pid yet (TensorFlow's are not read)");
    else if (!ever_judged()) cannot_judge(fmt::format("{} seconds with data-loader events so far; the rule judges "
                                                      "after more than patience = {}", parallel_.size(), c_.patience));
    return violations_ > 0 && fire_sticky();
  }
  for (const auto& [second, set] : pids) parallel_.push_back(static_cast<int64_t>(set.size()));
  std::vector<double> p(parallel_.begin(), parallel_.end());
  const auto med = static_cast<int64_t>(builtin::quantile(p, 0.5));  // int(): truncated
  const double cores = static_cast<double>(cores_.size());
  nlohmann::json dl = {{"p25", builtin::quantile(durations_s_, 0.25)},
                       {"p50", builtin::quantile(durations_s_, 0.50)},
                       {"p95", builtin::quantile(durations_s_, 0.95)},
                       {"histogram", histogram_json(durations_s_, 100)}};
  details_ = {{"pin_memory", pin_memory_}, {"num_workers", num_workers_}, {"prefetch", prefetch_},
              {"cores", cores_.size()},    {"dataloaders", med},          {"dataloading_time", std::move(dl)}};
  if (!(static_cast<int64_t>(parallel_.size()) > c_.patience)) {
    if (!ever_judged())
      cannot_judge(fmt::format("{} seconds with data-loader events so far; the rule judges after more than "
                               "patience = {}", parallel_.size(), c_.patience));
    return violations_ > 0 && fire_sticky();
  }
  judged();
  const double low = cores * c_.min_threshold / 100, high = cores * c_.max_threshold / 100;
  const double observed = static_cast<double>(med);
  if (observed < low) {
    ++violations_;
    fire({{"metric", "median number of parallel data-loader processes"}, {"observed", med}, {"threshold", low},
          {"bound", "min_threshold"}, {"cores", cores_.size()}});
  }
  if (observed > high) {
    ++violations_;
    fire({{"metric", "median number of parallel data-loader processes"}, {"observed", med}, {"threshold", high},
          {"bound", "max_threshold"}, {"cores", cores_.size()}});
  }
  if (violations_ > 0) triggered_ = 1;  // sticky: RuleTriggered = 1 once anything violated
  return violations_ > 0 && fire_sticky();
}

// ---- OverallFrameworkMetrics ----------------------------------------------------------------------------

bool OverallFrameworkMetrics::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  (void)w;
  begin_window();
  for (const sdk::FrameworkEvent& e : events.framework) {
    metrics_.add(e);
    ++datapoints_;
  }
  if (datapoints_ == 0) cannot_judge("no framework events yet");
  else judged();
  details_ = metrics_.to_json();
  return false;  // never fires (§3.11)
}

}  // namespace vigil::profiler_rules
