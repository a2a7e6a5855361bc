#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "training_support.h"
#include "training_rules.h"

namespace vigil::training {

namespace {

std::optional<vigil_mode> mode_from_text(const sdk::Params& p) {
  if (!p.is_set("mode")) return std::nullopt;
  const std::string m = p.get_string("mode");
  if (m == "EVAL") return VIGIL_MODE_EVAL;
  if (m == "TRAIN") return VIGIL_MODE_TRAIN;
  return VIGIL_MODE_GLOBAL;
}

}  // namespace

LossNotDecreasing::LossNotDecreasing(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      collections_(params().get_list_or("collection_names", {})),
      regexes_(params().get_list_or("tensor_regex", {})),
      use_losses_(params().get_bool("use_losses_collection")),
      num_steps_(params().get_int("num_steps")),
      diff_percent_(params().get_double("diff_percent")),
      increase_percent_(params().get_double("increase_threshold_percent")),
      comparison_(params().get_string("comparison")),
      prefer_train_(params().get_bool("prefer_train_mode")),
      patience_(params().get_int("patience")),
      trend_std_errors_(params().get_double("trend_std_errors")),
      mode_(mode_from_text(params())) {}

Result<std::vector<std::string>> LossNotDecreasing::loss_tensors() const {
  std::vector<std::string> collections = collections_;
  bool losses_used = false;
  if (use_losses_) {
    VIGIL_TRY(const auto all, base_trial().collection_names());
    if (std::find(all.begin(), all.end(), "losses") != all.end()) {
      collections.emplace_back("losses");
      losses_used = true;
    }
  }
  // Nothing configured and no losses collection: every tensor; read_scalar keeps the scalars.
  if (collections_.empty() && regexes_.empty() && !losses_used) return base_trial().tensor_names();
  return selected_tensors(base_trial(), {.collections = collections, .regexes = regexes_});
}

Result<vigil_mode> LossNotDecreasing::resolve_mode(const std::vector<std::string>& names) const {
  if (mode_) return *mode_;
  const vigil_mode eval_first[] = {VIGIL_MODE_EVAL, VIGIL_MODE_TRAIN};
  const vigil_mode train_first[] = {VIGIL_MODE_TRAIN, VIGIL_MODE_EVAL};
  for (vigil_mode m : prefer_train_ ? train_first : eval_first)
    for (const std::string& name : names) {
      VIGIL_TRY(const auto steps, base_trial().tensor(name).steps(m));
      if (!steps.empty()) return m;
    }
  return VIGIL_MODE_GLOBAL;
}

Result<std::optional<LossNotDecreasing::Comparison>> LossNotDecreasing::compare_single(
    const sdk::Tensor& tensor, const std::string& worker, vigil_step s, vigil_mode mode,
    std::span<const vigil_step> steps) const {
  std::optional<vigil_step> p;
  for (vigil_step x : steps)
    if (x <= s - num_steps_ && (!p || x > *p)) p = x;
  if (!p) return std::nullopt;
  VIGIL_TRY(const auto cur, read_scalar(tensor, s, mode, worker));
  if (!cur) return std::nullopt;
  VIGIL_TRY(const auto prev, read_scalar(tensor, *p, mode, worker));
  if (!prev) return std::nullopt;
  const double change = 100.0 * (*cur - *prev) / *prev;  // negative: a decrease
  const char* crossed = nullptr;
  if (comparison_ == "ci2019") {
    if (*cur >= *prev * (1.0 + diff_percent_ / 100.0)) crossed = "diff_percent";
  } else if (*cur <= *prev) {
    if (100.0 * (*prev - *cur) / *prev < diff_percent_) crossed = "diff_percent";
  } else if (*cur > *prev) {
    if (100.0 * (*cur - *prev) / *prev > increase_percent_) crossed = "increase_threshold_percent";
  }
  log(VIGIL_LOG_DEBUG, "{} step {}: {} on {}: {} vs {} at {} ({:+}%){}", sdk::mode_name(mode), s, tensor.name(),
      worker, *cur, *prev, *p, change, crossed ? " fires" : "");
  Comparison c{.fires = crossed != nullptr};
  c.evidence.add("tensor", tensor.name()).add("worker", worker).add("compared_with_step", *p);
  c.evidence.add("prev", *prev).add("cur", *cur).add("change_percent", change).add("crossed", crossed);
  return c;
}

Result<std::optional<std::pair<std::vector<vigil_step>, std::vector<double>>>> LossNotDecreasing::last_values(
    const sdk::Tensor& tensor, const std::string& worker, vigil_step s, vigil_mode mode,
    std::span<const vigil_step> steps, size_t count) const {
  using Window = std::pair<std::vector<vigil_step>, std::vector<double>>;
  std::vector<vigil_step> history;
  for (vigil_step x : steps)
    if (x <= s) history.push_back(x);
  std::sort(history.begin(), history.end());
  if (history.size() < count) return std::optional<Window>{};
  Window w;
  w.first.assign(history.end() - static_cast<std::ptrdiff_t>(count), history.end());
  for (vigil_step x : w.first) {
    VIGIL_TRY(const auto v, read_scalar(tensor, x, mode, worker));
    if (!v) return std::optional<Window>{};  // a window with a hole is not compared
    w.second.push_back(*v);
  }
  return std::optional<Window>(std::move(w));
}

Result<std::optional<LossNotDecreasing::Comparison>> LossNotDecreasing::compare_windows(
    const sdk::Tensor& tensor, const std::string& worker, vigil_step s, vigil_mode mode,
    std::span<const vigil_step> steps) const {
  const auto k = static_cast<size_t>(num_steps_);
  const auto saved =
      static_cast<size_t>(std::count_if(steps.begin(), steps.end(), [s](vigil_step x) { return x <= s; }));
  if (saved % k != 0) return std::nullopt;
  VIGIL_TRY(const auto window, last_values(tensor, worker, s, mode, steps, 2 * k));
  if (!window) return std::nullopt;
  const auto& [at, values] = *window;
  double sums[2] = {0.0, 0.0};  // [0]: the previous window, [1]: the current one
  for (size_t i = 0; i < 2 * k; ++i) sums[i / k] += values[i];
  const double prev = sums[0] / double(k), cur = sums[1] / double(k);
  const bool fires = cur >= prev * (1.0 - diff_percent_ / 100.0);
  log(VIGIL_LOG_DEBUG, "{} step {}: {} on {}: mean {} vs {}{}", sdk::mode_name(mode), s, tensor.name(), worker, cur,
      prev, fires ? " fires" : "");
  Comparison c{.fires = fires};
  c.evidence.add("tensor", tensor.name()).add("worker", worker);
  c.evidence.add("prev_window_first_step", at[0]).add("cur_window_first_step", at[k]);
  c.evidence.add("prev_mean", prev).add("cur_mean", cur).add("crossed", "diff_percent");
  return c;
}

Result<std::optional<LossNotDecreasing::Comparison>> LossNotDecreasing::compare_trend(
    const sdk::Tensor& tensor, const std::string& worker, vigil_step s, vigil_mode mode,
    std::span<const vigil_step> steps) const {
  const auto k = static_cast<size_t>(num_steps_);
  const size_t n = 2 * k;
  VIGIL_TRY(const auto window, last_values(tensor, worker, s, mode, steps, n));
  if (!window) return std::nullopt;
  const auto& [at, y] = *window;
  // Least squares against the position, centred: x_i = i - (n-1)/2.
  const double centre = (double(n) - 1) / 2;
  double mean = 0, sxx = 0, sxy = 0;
  for (double v : y) mean += v;
  mean /= double(n);
  for (size_t i = 0; i < n; ++i) {
    const double x = double(i) - centre;
    sxx += x * x;
    sxy += x * (y[i] - mean);
  }
  const double slope = sxy / sxx;
  double residuals = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = y[i] - mean - slope * (double(i) - centre);
    residuals += r * r;
  }
  const double se = double(k) * std::sqrt(residuals / double(n - 2) / sxx);  // of the decrease below
  // The fitted line at the centres of the two halves, num_steps positions apart.
  const double prev = mean - slope * double(k) / 2, cur = mean + slope * double(k) / 2;
  const double decrease = prev - cur;
  const double required = std::abs(prev) * diff_percent_ / 100.0;
  const bool finite = std::isfinite(decrease) && std::isfinite(se);
  const bool fires = finite && !(decrease > required + trend_std_errors_ * se);
  log(VIGIL_LOG_DEBUG, "{} step {}: {} on {}: trend {} -> {} (decrease {} +- {}, required {}){}",
      sdk::mode_name(mode), s, tensor.name(), worker, prev, cur, decrease, se, required, fires ? " fires" : "");
  Comparison c{.fires = fires};
  c.evidence.add("tensor", tensor.name()).add("worker", worker);
  c.evidence.add("window_first_step", at.front()).add("window_last_step", at.back());
  c.evidence.add("prev", prev).add("cur", cur);
  c.evidence.add("decrease_percent", 100.0 * decrease / std::abs(prev));
  c.evidence.add("std_error_percent", 100.0 * se / std::abs(prev));
  c.evidence.add("trend_std_errors", trend_std_errors_).add("crossed", "trend");
  return c;
}

Result<std::optional<LossNotDecreasing::Comparison>> LossNotDecreasing::compare(
    const sdk::Tensor& tensor, const std::string& worker, vigil_step s, vigil_mode mode,
    std::span<const vigil_step> steps) const {
  if (comparison_ == "trend") return compare_trend(tensor, worker, s, mode, steps);
  if (comparison_ == "window_mean") return compare_windows(tensor, worker, s, mode, steps);
  return compare_single(tensor, worker, s, mode, steps);
}

Result<bool> LossNotDecreasing::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, loss_tensors());
  if (names.empty()) {
    not_judged("no loss tensor");
    return false;
  }
  VIGIL_TRY(const vigil_mode mode, resolve_mode(names));

  // s: the step in the chosen mode's numbering.
  vigil_step s = step;
  if (mode != VIGIL_MODE_GLOBAL) {
    VIGIL_TRY(const auto mm, base_trial().mode_modestep(step));
    if (!mm || mm->first != mode) {  // another mode's step
      not_judged(fmt::format("not a {} step", sdk::mode_name(mode)));
      return false;
    }
    s = mm->second;
  }
  const bool windows = comparison_ == "window_mean" || comparison_ == "trend";
  if (!windows && last_check_ && s < *last_check_ + num_steps_) {
    not_judged("between two checks");
    return false;
  }

  int comparisons = 0;
  std::vector<std::string> fired;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, s, mode));
    if (workers.empty()) continue;
    VIGIL_TRY(const auto steps, tensor.steps(mode));
    for (const std::string& worker : workers) {
      VIGIL_TRY(auto outcome, compare(tensor, worker, s, mode, steps));
      if (!outcome) continue;
      ++comparisons;
      int64_t& counter = counters_[{name, worker}];
      counter = outcome->fires ? counter + 1 : 0;
      if (counter >= patience_) fired.push_back(outcome->evidence.add("counter", counter).str());
    }
  }
  if (comparisons == 0) {  // no loss could be compared: the schedule waits
    not_judged(windows ? "too few losses saved for a window" : "no loss saved num_steps earlier");
    return false;
  }
  last_check_ = s;
  mode_ = mode;
  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                     .add("mode", sdk::mode_name(mode))
                                     .add("step", step)
                                     .add("mode_step", s)
                                     .add("comparison", comparison_)
                                     .add("num_steps", num_steps_)
                                     .add("diff_percent", diff_percent_)
                                     .add("increase_threshold_percent", increase_percent_)
                                     .add("patience", patience_)
                                     .add_raw("losses", json_array(fired))
                                     .str()));
  return true;
}

}  // namespace vigil::training
