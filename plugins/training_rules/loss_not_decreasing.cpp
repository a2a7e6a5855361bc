#include <algorithm>
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
  for (vigil_mode m : {VIGIL_MODE_EVAL, VIGIL_MODE_TRAIN})
    for (const std::string& name : names) {
      VIGIL_TRY(const auto steps, base_trial().tensor(name).steps(m));
      if (!steps.empty()) return m;
    }
  return VIGIL_MODE_GLOBAL;
}

Result<std::optional<std::string>> LossNotDecreasing::compare_single(const sdk::Tensor& tensor,
                                                                    const std::string& worker, vigil_step s,
                                                                    vigil_mode mode,
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
  if (!crossed) return std::string();
  return sdk::JsonObject()
      .add("tensor", tensor.name())
      .add("worker", worker)
      .add("compared_with_step", *p)
      .add("prev", *prev)
      .add("cur", *cur)
      .add("change_percent", change)
      .add("crossed", crossed)
      .str();
}

Result<std::optional<std::string>> LossNotDecreasing::compare_windows(const sdk::Tensor& tensor,
                                                                     const std::string& worker, vigil_step s,
                                                                     vigil_mode mode,
                                                                     std::span<const vigil_step> steps) const {
  std::vector<vigil_step> history;
  for (vigil_step x : steps)
    if (x <= s) history.push_back(x);
  const auto k = static_cast<size_t>(num_steps_);
  if (history.size() < 2 * k || history.size() % k != 0) return std::nullopt;
  double sums[2] = {0.0, 0.0};  // [0]: the previous window, [1]: the current one
  const size_t first = history.size() - 2 * k;
  for (size_t i = first; i < history.size(); ++i) {
    VIGIL_TRY(const auto v, read_scalar(tensor, history[i], mode, worker));
    if (!v) return std::nullopt;  // a window with a hole is not compared
    sums[(i - first) / k] += *v;
  }
  const double prev = sums[0] / double(k), cur = sums[1] / double(k);
  const bool fires = cur >= prev * (1.0 - diff_percent_ / 100.0);
  log(VIGIL_LOG_DEBUG, "{} step {}: {} on {}: mean {} vs {}{}", sdk::mode_name(mode), s, tensor.name(), worker, cur,
      prev, fires ? " fires" : "");
  if (!fires) return std::string();
  return sdk::JsonObject()
      .add("tensor", tensor.name())
      .add("worker", worker)
      .add("prev_window_first_step", history[first])
      .add("cur_window_first_step", history[first + k])
      .add("prev_mean", prev)
      .add("cur_mean", cur)
      .add("crossed", "diff_percent")
      .str();
}

Result<bool> LossNotDecreasing::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, loss_tensors());
  if (names.empty()) return false;
  VIGIL_TRY(const vigil_mode mode, resolve_mode(names));

  // s: the step in the chosen mode's numbering.
  vigil_step s = step;
  if (mode != VIGIL_MODE_GLOBAL) {
    VIGIL_TRY(const auto mm, base_trial().mode_modestep(step));
    if (!mm || mm->first != mode) return false;  // another mode's step: not judged
    s = mm->second;
  }
  const bool windows = comparison_ == "window_mean";
  if (!windows && last_check_ && s < *last_check_ + num_steps_) return false;

  int comparisons = 0;
  std::vector<std::string> fired;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, s, mode));
    if (workers.empty()) continue;
    VIGIL_TRY(const auto steps, tensor.steps(mode));
    for (const std::string& worker : workers) {
      VIGIL_TRY(const auto outcome, windows ? compare_windows(tensor, worker, s, mode, steps)
                                            : compare_single(tensor, worker, s, mode, steps));
      if (!outcome) continue;
      ++comparisons;
      if (!outcome->empty()) fired.push_back(*outcome);
    }
  }
  if (comparisons == 0) return false;  // no loss could be compared: the schedule waits
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
                                     .add_raw("losses", json_array(fired))
                                     .str()));
  return true;
}

}  // namespace vigil::training
