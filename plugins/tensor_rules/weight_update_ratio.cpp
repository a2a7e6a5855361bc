// WeightUpdateRatio (builtin-rules.md §2.10): ‖w_s − w_p‖ / (‖w_p‖ + ε) outside [small, large].
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

Result<std::unique_ptr<WeightUpdateRatio>> WeightUpdateRatio::create(sdk::RuleContext ctx) {
  Options o{};
  if (ctx.params.is_set("num_steps")) {
    VIGIL_TRY(o.num_steps, ctx.params.get<int64_t>("num_steps"));
  }
  VIGIL_TRY(o.large_threshold, ctx.params.get<double>("large_threshold"));
  VIGIL_TRY(o.small_threshold, ctx.params.get<double>("small_threshold"));
  VIGIL_TRY(o.epsilon, ctx.params.get<double>("epsilon"));
  return std::unique_ptr<WeightUpdateRatio>(new WeightUpdateRatio(std::move(ctx), o));
}

Result<bool> WeightUpdateRatio::invoke_at_step(vigil_step step) {
  // TRAIN steps only when the trial has any; otherwise every step, counted globally.
  VIGIL_TRY(const auto modes, base_trial().modes());
  const bool train_only = std::ranges::find(modes, vigil_mode{VIGIL_MODE_TRAIN}) != modes.end();
  vigil_mode mode = VIGIL_MODE_GLOBAL;
  vigil_step current = step;
  if (train_only) {
    VIGIL_TRY(const auto mode_step, base_trial().mode_modestep(step));
    if (!mode_step || mode_step->first != VIGIL_MODE_TRAIN)
      return sdk::fail(no_verdict("not a TRAIN step (the trial has TRAIN steps: only those are judged)", step));
    mode = VIGIL_MODE_TRAIN;
    current = mode_step->second;
  }

  static const Selection kWeights{.collections = {"weights"}, .regexes = {}};
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), kWeights, step, false));
  bool judged = false;
  Hits hits;
  std::optional<sdk::JsonObject> first;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, current, mode));
    if (workers.empty()) continue;
    // The previous step: the newest saved step of this mode before the current one (within num_steps).
    VIGIL_TRY(const auto saved, tensor.steps(mode));
    std::optional<vigil_step> previous;
    for (vigil_step s : saved)
      if (s < current && (!options_.num_steps || s >= current - *options_.num_steps)) previous = s;
    if (!previous) continue;  // the tensor's first step: nothing to compare with
    for (const std::string& worker : workers) {
      auto now_read = read_values(tensor, current, mode, worker);
      if (!now_read) {
        if (is_missing(now_read.error())) continue;  // reductions or shape only
        return sdk::fail(std::move(now_read).error());
      }
      auto before_read = read_values(tensor, *previous, mode, worker);
      if (!before_read) {
        if (is_missing(before_read.error())) continue;  // this worker did not save the value then
        return sdk::fail(std::move(before_read).error());
      }
      if (!*now_read || !*before_read) continue;  // not real-valued
      const Values& now = **now_read;
      const Values& before = **before_read;
      if (before.shape != now.shape || before.data.size() != now.data.size()) {
        log(VIGIL_LOG_WARNING, "step {}: {} changed shape since step {}: no verdict", step, name, *previous);
        continue;
      }
      double update = 0, weights = 0;
      for (size_t i = 0; i < now.data.size(); ++i) {
        const double d = now.data[i] - before.data[i];
        update += d * d;
        weights += before.data[i] * before.data[i];
      }
      update = std::sqrt(update);
      weights = std::sqrt(weights);
      const double ratio = update / (weights + options_.epsilon);
      judged = true;
      const bool too_large = ratio > options_.large_threshold;
      const bool too_small = ratio < options_.small_threshold;
      if (!too_large && !too_small) continue;  // NaN never fires
      sdk::JsonObject object;
      object.add("tensor", name)
          .add("worker", worker)
          .add("mode", sdk::mode_name(mode))
          .add("step", current)
          .add("previous_step", *previous)
          .add("ratio", ratio)
          .add("update_norm", update)
          .add("previous_norm", weights)
          .add(too_large ? "too_large" : "too_small", true);
      hits.add(object.str());
      if (!first) first = std::move(object);
    }
  }
  if (!judged) return sdk::fail(no_verdict("no weight of collection weights has a previous step to compare with", step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(first->add("large_threshold", options_.large_threshold)
                                     .add("small_threshold", options_.small_threshold)
                                     .add("epsilon", options_.epsilon)
                                     .add("tensors_outside", hits.count())
                                     .add_raw("outside", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
