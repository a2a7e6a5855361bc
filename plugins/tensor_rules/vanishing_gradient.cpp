// VanishingGradient (builtin-rules.md §2.1): mean(|g|) < threshold for any gradient on any worker.
#include <fmt/format.h>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

Result<std::unique_ptr<VanishingGradient>> VanishingGradient::create(sdk::RuleContext ctx) {
  VIGIL_TRY(const double threshold, ctx.params.get<double>("threshold"));
  return std::unique_ptr<VanishingGradient>(new VanishingGradient(std::move(ctx), threshold));
}

Result<bool> VanishingGradient::invoke_at_step(vigil_step step) {
  static const Selection kGradients{.collections = {"gradients"}, .regexes = {}};
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), kGradients, step, false));
  bool judged = false;
  Hits hits;
  sdk::JsonObject lowest;
  double lowest_mean = 0;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step));
    for (const std::string& worker : workers) {
      auto mean_abs = tensor.reduction_value(step, sdk::ReductionOp::mean, /*abs=*/true, VIGIL_MODE_GLOBAL, worker);
      if (!mean_abs) {
        // Saved without value or abs-mean (shape only), or a string tensor: nothing to judge.
        if (is_missing(mean_abs.error()) || mean_abs.error().code == VIGIL_E_TYPE_ERROR) continue;
        return sdk::fail(std::move(mean_abs).error());
      }
      judged = true;
      if (!(*mean_abs < threshold_)) continue;  // NaN never fires
      hits.add(sdk::JsonObject().add("tensor", name).add("worker", worker).add("mean_abs", *mean_abs).str());
      if (hits.count() == 1 || *mean_abs < lowest_mean) {
        lowest_mean = *mean_abs;
        lowest = sdk::JsonObject().add("tensor", name).add("worker", worker).add("mean_abs", *mean_abs);
      }
    }
  }
  if (!judged) return sdk::fail(no_verdict("no tensor of collection gradients has a value at this step", step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(lowest.add("threshold", threshold_)
                                     .add("tensors_below", hits.count())
                                     .add_raw("below", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
