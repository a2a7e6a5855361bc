#include <algorithm>
#include <chrono>
#include <utility>

#include "training_support.h"
#include "training_rules.h"

namespace vigil::training {

StalledTrainingRule::StalledTrainingRule(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      threshold_(params().get_double("threshold")),
      stop_on_fire_(params().get_bool("stop_training_on_fire")) {}

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

Result<bool> StalledTrainingRule::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto wall, wall_time(step));
  if (!wall) return false;  // shapes only: no wall time to judge
  VIGIL_TRY(const auto next, next_step(step));
  double gap = 0;
  std::optional<double> next_wall;
  if (next) {
    VIGIL_TRY(next_wall, wall_time(*next));
    if (!next_wall) return false;
    gap = *next_wall - *wall;
  } else {
    VIGIL_TRY(const bool ended, base_trial().training_ended());
    if (ended) return false;  // the last step: nothing came after it
    // Still running: the gap so far, on this machine's clock.
    const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    gap = now - *wall;
  }
  log(VIGIL_LOG_DEBUG, "step {}: {} s until {}", step, gap, next ? std::to_string(*next) : std::string("now"));
  if (!(gap > threshold_)) return false;
  sdk::JsonObject evidence;
  evidence.add("step", step).add("wall_time", *wall);
  if (next) evidence.add("next_step", *next).add("next_wall_time", *next_wall);
  else evidence.add_raw("next_step", "null").add("now", *wall + gap);
  evidence.add("gap_seconds", gap).add("threshold", threshold_).add("stop_training_on_fire", stop_on_fire_);
  if (stop_on_fire_) evidence.add("stop_training", "not run locally");
  VIGIL_TRY_VOID(report_evidence(evidence.str()));
  return true;
}

}  // namespace vigil::training
