#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "training_support.h"
#include "training_rules.h"

namespace vigil::training {

namespace {

// Intervals the relative threshold needs before it judges: a median of fewer says little, and the
// first steps of a job (start-up, compilation) are slow.
constexpr size_t kMinIntervals = 10;

}  // namespace

void StalledTrainingRule::Median::add(double v) {
  if (low_.empty() || v <= low_.top()) low_.push(v);
  else high_.push(v);
  // Keep low_ the same size as high_ or one larger.
  if (low_.size() > high_.size() + 1) {
    high_.push(low_.top());
    low_.pop();
  } else if (high_.size() > low_.size()) {
    low_.push(high_.top());
    high_.pop();
  }
}

double StalledTrainingRule::Median::value() const {
  return low_.size() > high_.size() ? low_.top() : (low_.top() + high_.top()) / 2;
}

StalledTrainingRule::StalledTrainingRule(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      threshold_(params().get_double("threshold")),
      stop_on_fire_(params().get_bool("stop_training_on_fire")),
      relative_threshold_(params().get_double("relative_threshold")),
      relative_floor_(params().get_double("relative_threshold_floor")) {}

// When the step was saved (ABI 1.1, Trial::step_wall_time); nullopt when the step holds no tensor
// record (shapes only), which the host reports as VIGIL_E_NOT_SUPPORTED.
Result<std::optional<double>> StalledTrainingRule::wall_time(vigil_step step) {
  if (cached_wall_ && cached_wall_->first == step) return cached_wall_->second;
  if (!host().has(&vigil_host_api::step_wall_time))
    return sdk::fail(Error::not_supported("StalledTrainingRule needs the host service step_wall_time (ABI 1.1)"));
  auto wall = base_trial().step_wall_time(step, VIGIL_MODE_GLOBAL);
  std::optional<double> result;
  if (wall) result = *wall;
  else if (wall.error().code != VIGIL_E_NOT_SUPPORTED) return sdk::fail(std::move(wall).error());
  cached_wall_ = {step, result};
  return result;
}

Result<std::optional<vigil_step>> StalledTrainingRule::next_step(vigil_step step) {
  auto after = std::upper_bound(known_steps_.begin(), known_steps_.end(), step);
  if (after == known_steps_.end()) {  // look again: the trial may have grown
    VIGIL_TRY(known_steps_, base_trial().steps(VIGIL_MODE_GLOBAL));
    std::sort(known_steps_.begin(), known_steps_.end());
    after = std::upper_bound(known_steps_.begin(), known_steps_.end(), step);
    if (after == known_steps_.end()) return std::optional<vigil_step>{};
  }
  return std::optional<vigil_step>(*after);
}

void StalledTrainingRule::record_interval(vigil_step step, double wall) {
  if (previous_ && step <= previous_->first) return;  // seen already
  if (previous_) intervals_.add(wall - previous_->second);
  previous_ = {step, wall};
}

Result<bool> StalledTrainingRule::judge_gap(vigil_step step, double wall, double gap,
                                            std::optional<std::pair<vigil_step, double>> next) {
  const bool relative = relative_threshold_ > 0 && intervals_.size() >= kMinIntervals;
  const double median = intervals_.size() > 0 ? intervals_.value() : 0.0;
  const double relative_limit = std::max(relative_floor_, relative_threshold_ * median);
  log(VIGIL_LOG_DEBUG, "step {}: {} s until {} (median interval {} s)", step, gap,
      next ? std::to_string(next->first) : std::string("now"), median);
  if (!(gap > threshold_ || (relative && gap > relative_limit))) return false;
  sdk::JsonObject evidence;
  evidence.add("step", step).add("wall_time", wall);
  if (next) evidence.add("next_step", next->first).add("next_wall_time", next->second);
  else evidence.add_raw("next_step", "null").add("now", wall + gap);
  evidence.add("gap_seconds", gap).add("threshold", threshold_);
  if (relative_threshold_ > 0) {
    evidence.add("median_interval_seconds", median).add("intervals", static_cast<int64_t>(intervals_.size()));
    evidence.add("relative_threshold", relative_threshold_);
    if (relative) evidence.add("relative_limit_seconds", relative_limit);
  }
  evidence.add("stop_training_on_fire", stop_on_fire_);
  if (stop_on_fire_) evidence.add("stop_training", "not run locally");
  VIGIL_TRY_VOID(report_evidence(evidence.str()));
  reported_ = step;
  return true;
}

Result<bool> StalledTrainingRule::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto wall, wall_time(step));
  if (!wall) {
    not_judged("the step saved no tensor record (shapes only)");
    return false;
  }
  record_interval(step, *wall);
  VIGIL_TRY(const auto next, next_step(step));
  if (next) {
    VIGIL_TRY(const auto next_wall, wall_time(*next));
    if (!next_wall) {
      not_judged("the next step saved no tensor record (shapes only)");
      return false;
    }
    return judge_gap(step, *wall, *next_wall - *wall, std::pair{*next, *next_wall});
  }
  VIGIL_TRY(const bool ended, base_trial().training_ended());
  if (ended) {
    not_judged("the last step: nothing came after it");
    return false;
  }
  // Still running: the gap so far, on this machine's clock.
  const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return judge_gap(step, *wall, now - *wall, std::nullopt);
}

Result<bool> StalledTrainingRule::invoke_at_time(double now, vigil_step last_step) {
  if (last_step < 0) {
    not_judged("no step saved yet");
    return false;
  }
  if (reported_ == last_step) return false;  // this stall is reported already
  VIGIL_TRY(const auto wall, wall_time(last_step));
  if (!wall) {
    not_judged("the last step saved no tensor record (shapes only)");
    return false;
  }
  return judge_gap(last_step, *wall, now - *wall, std::nullopt);
}

}  // namespace vigil::training
