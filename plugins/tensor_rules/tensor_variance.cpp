// TensorVariance (builtin-rules.md §2.9): np.var(x) > max_threshold or < min_threshold (or, with
// min_about_zero, mean(x^2) < min_threshold).
#include <fmt/format.h>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

Result<std::unique_ptr<TensorVariance>> TensorVariance::create(sdk::RuleContext ctx) {
  VIGIL_TRY(Selection selection, required_selection(ctx));
  std::optional<double> max_threshold, min_threshold;
  if (ctx.params.is_set("max_threshold")) {
    VIGIL_TRY(max_threshold, ctx.params.get<double>("max_threshold"));
  }
  if (ctx.params.is_set("min_threshold")) {
    VIGIL_TRY(min_threshold, ctx.params.get<double>("min_threshold"));
  }
  VIGIL_TRY(const bool min_about_zero, ctx.params.get<bool>("min_about_zero"));
  auto rule = std::unique_ptr<TensorVariance>(
      new TensorVariance(std::move(ctx), std::move(selection), max_threshold, min_threshold, min_about_zero));
  if (!max_threshold && !min_threshold)
    rule->log(VIGIL_LOG_WARNING, "neither max_threshold nor min_threshold is set: {} can never fire", rule->rule_name());
  return rule;
}

Result<bool> TensorVariance::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), selection_, step, false));
  bool judged = false;
  Hits hits;
  std::optional<sdk::JsonObject> first;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step));
    for (const std::string& worker : workers) {
      auto v = tensor.reduction_value(step, sdk::ReductionOp::variance, /*abs=*/false, VIGIL_MODE_GLOBAL, worker);
      if (!v) {
        if (is_missing(v.error()) || v.error().code == VIGIL_E_TYPE_ERROR) continue;
        return sdk::fail(std::move(v).error());
      }
      // The spread about zero, E[x^2] = var + mean^2: a tensor of equal non-zero values (a
      // normalisation layer's scale, initialised to 1) has no variance, but has not collapsed.
      std::optional<double> mean_square;
      if (min_about_zero_ && min_threshold_) {
        auto mean = tensor.reduction_value(step, sdk::ReductionOp::mean, /*abs=*/false, VIGIL_MODE_GLOBAL, worker);
        if (!mean) {
          if (is_missing(mean.error()) || mean.error().code == VIGIL_E_TYPE_ERROR) continue;
          return sdk::fail(std::move(mean).error());
        }
        mean_square = *v + *mean * *mean;
      }
      judged = true;
      const double low_statistic = mean_square.value_or(*v);
      const bool above = max_threshold_ && *v > *max_threshold_;
      const bool below = min_threshold_ && low_statistic < *min_threshold_;
      if (!above && !below) continue;  // NaN never fires
      sdk::JsonObject object;
      object.add("tensor", name).add("worker", worker).add("variance", *v);
      if (mean_square) object.add("mean_square", *mean_square);
      if (above) object.add("above_max", true).add("max_threshold", *max_threshold_);
      if (below) object.add("below_min", true).add("min_threshold", *min_threshold_);
      hits.add(object.str());
      if (!first) first = std::move(object);
    }
  }
  if (!judged)
    return sdk::fail(no_verdict(fmt::format("no tensor of {} has a value at this step", selection_.describe()), step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(
      first->add("tensors_outside", hits.count()).add_raw("outside", hits.json_array()).str()));
  return true;
}

}  // namespace vigil::rules::tensor
