// UnchangedTensor (builtin-rules.md §2.4): a tensor whose last num_steps saved values are allclose.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

Result<std::unique_ptr<UnchangedTensor>> UnchangedTensor::create(sdk::RuleContext ctx) {
  VIGIL_TRY(Selection selection, required_selection(ctx));
  Options o{};
  VIGIL_TRY(o.num_steps, ctx.params.get<int64_t>("num_steps"));
  VIGIL_TRY(o.rtol, ctx.params.get<double>("rtol"));
  VIGIL_TRY(o.atol, ctx.params.get<double>("atol"));
  VIGIL_TRY(o.equal_nan, ctx.params.get<bool>("equal_nan"));
  VIGIL_TRY(o.vanishing_gradient_threshold, ctx.params.get<double>("vanishing_gradient_threshold"));
  VIGIL_TRY(o.train_steps_only, ctx.params.get<bool>("train_steps_only"));
  return std::unique_ptr<UnchangedTensor>(new UnchangedTensor(std::move(ctx), std::move(selection), o));
}

Result<std::optional<double>> UnchangedTensor::gradient_mean_abs(
    const std::string& name, vigil_step step, const std::string& worker,
    std::optional<std::vector<std::string>>& gradients) const {
  if (!gradients) {
    VIGIL_TRY(gradients, base_trial().tensor_names({.step = step, .collection = "gradients"}));
  }
  const std::string suffix = "/" + name;
  for (const std::string& g : *gradients) {
    if (!g.ends_with(suffix)) continue;
    auto m = base_trial().tensor(g).reduction_value(step, sdk::ReductionOp::mean, /*abs=*/true, VIGIL_MODE_GLOBAL,
                                                     worker);
    if (m) return std::optional<double>(*m);
    if (!is_missing(m.error()) && m.error().code != VIGIL_E_TYPE_ERROR) return sdk::fail(std::move(m).error());
  }
  return std::optional<double>{};
}

Result<bool> UnchangedTensor::is_train_step(vigil_step step) {
  if (auto it = train_step_.find(step); it != train_step_.end()) return it->second;
  VIGIL_TRY(const auto mode, base_trial().mode_modestep(step));
  const bool train = mode && mode->first == VIGIL_MODE_TRAIN;
  train_step_.emplace(step, train);
  return train;
}

Result<bool> UnchangedTensor::invoke_at_step(vigil_step step) {
  if (options_.train_steps_only) {
    VIGIL_TRY(const bool train, is_train_step(step));
    if (!train) {
      not_judged("not a TRAIN step (train_steps_only)");
      return false;
    }
  }
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), selection_, step, false));
  const auto n = static_cast<size_t>(options_.num_steps);
  bool judged = false, too_short = false;
  int64_t vanishing = 0;  // unchanged tensors left to VanishingGradient
  std::optional<std::vector<std::string>> gradients;  // read once, when a gradient is needed
  Hits hits;
  std::optional<sdk::JsonObject> first;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step));
    if (workers.empty()) continue;
    // smdebug's prev_steps(step, num_steps): the tensor's saved steps up to this one, newest last.
    // With train_steps_only, of its TRAIN steps only.
    VIGIL_TRY(auto saved, tensor.steps());
    std::vector<vigil_step> window;
    for (auto s = saved.rbegin(); s != saved.rend() && window.size() < n; ++s) {
      if (*s > step) continue;
      if (options_.train_steps_only) {
        VIGIL_TRY(const bool train, is_train_step(*s));
        if (!train) continue;
      }
      window.push_back(*s);
    }
    std::reverse(window.begin(), window.end());
    for (const std::string& worker : workers) {
      if (window.size() < n || window.back() != step) {
        too_short = true;  // too short a history: the tensor does not fire (spec: treat as False)
        continue;
      }
      auto current = read_values(tensor, step, VIGIL_MODE_GLOBAL, worker);
      if (!current) {
        if (is_missing(current.error())) continue;  // reductions or shape only
        return sdk::fail(std::move(current).error());
      }
      if (!*current) continue;  // not real-valued
      bool unchanged = true;
      bool complete = true;
      for (vigil_step p : window) {
        if (p == step) continue;
        auto previous = read_values(tensor, p, VIGIL_MODE_GLOBAL, worker);
        if (!previous) {
          if (!is_missing(previous.error())) return sdk::fail(std::move(previous).error());
          complete = false;  // this worker did not save the value at p
          break;
        }
        if (!*previous) {
          complete = false;
          break;
        }
        if (!allclose(**previous, **current, options_.rtol, options_.atol, options_.equal_nan)) {
          unchanged = false;
          break;
        }
      }
      if (!complete) continue;
      judged = true;
      if (!unchanged) continue;
      if (options_.vanishing_gradient_threshold > 0) {
        // A tiny but non-zero gradient explains the lack of change (and may still grow); an exactly
        // zero one means no loss signal reaches the tensor at all, which is this rule's finding.
        VIGIL_TRY(const auto g, gradient_mean_abs(name, step, worker, gradients));
        if (g && *g > 0 && *g < options_.vanishing_gradient_threshold) {
          ++vanishing;
          continue;
        }
      }
      sdk::JsonObject object;
      object.add("tensor", name).add("worker", worker).add_raw("steps", fmt::format("[{}]", fmt::join(window, ",")));
      hits.add(object.str());
      if (!first) first = std::move(object);
    }
  }
  if (!judged && too_short) {
    not_judged(fmt::format("fewer than {} saved steps of every tensor", options_.num_steps));
    return false;
  }
  if (!judged)
    return sdk::fail(no_verdict(fmt::format("no tensor of {} has a value at this step", selection_.describe()), step));
  if (vanishing > 0)
    log(VIGIL_LOG_DEBUG, "step {}: {} unchanged tensor(s) with a vanishing gradient left to VanishingGradient", step,
        vanishing);
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(first->add("num_steps", options_.num_steps)
                                     .add("rtol", options_.rtol)
                                     .add("atol", options_.atol)
                                     .add("equal_nan", options_.equal_nan)
                                     .add("tensors_unchanged", hits.count())
                                     .add_raw("unchanged", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
