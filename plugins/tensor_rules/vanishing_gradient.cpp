// VanishingGradient (builtin-rules.md §2.1): mean(|g|) < threshold for any gradient on any worker.
#include <fmt/format.h>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

Result<std::unique_ptr<VanishingGradient>> VanishingGradient::create(sdk::RuleContext ctx) {
  VIGIL_TRY(const double threshold, ctx.params.get<double>("threshold"));
  return std::unique_ptr<VanishingGradient>(new VanishingGradient(std::move(ctx), threshold));
}

Result<bool> VanishingGradient::invoke_at_step(vigil_step step) {
  bool judged = false;
  Hits hits;
  sdk::JsonObject lowest;
  double lowest_mean = 0;
  // Every gradient's mean(|g|) on every worker, in one host call (ABI 1.5).
  VIGIL_TRY_VOID(base_trial().for_each_step_reduction(
      {.step = step, .collection = "gradients"}, sdk::ReductionOp::mean, /*abs=*/true,
      [&](const sdk::StepReduction& r) {
        // Saved without value or abs-mean (shape only), or a string tensor: nothing to judge.
        if (r.status != VIGIL_OK) return;
        judged = true;
        if (!(r.value < threshold_)) return;  // NaN never fires
        hits.add(sdk::JsonObject().add("tensor", r.name).add("worker", r.worker).add("mean_abs", r.value).str());
        if (hits.count() == 1 || r.value < lowest_mean) {
          lowest_mean = r.value;
          lowest = sdk::JsonObject().add("tensor", r.name).add("worker", r.worker).add("mean_abs", r.value);
        }
      }));
  if (!judged) return sdk::fail(no_verdict("no tensor of collection gradients has a value at this step", step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(lowest.add("threshold", threshold_)
                                     .add("tensors_below", hits.count())
                                     .add_raw("below", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
