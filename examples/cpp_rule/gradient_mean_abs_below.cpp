// Example rule plugin: GradientMeanAbsBelow.
//
// Met at a step when, for any tensor of the "gradients" collection and any worker that saved it at
// that step, mean(|gradient|) < threshold (smdebug's VanishingGradient test, per worker). Tensor /
// worker pairs whose value is not available at the step (TensorUnavailableForStep) are skipped; other
// errors go back to the host, which skips, waits or fails as smdebug's invoke_rule does.
//
//   rule_to_invoke: GradientMeanAbsBelow    RuleParameters: {"threshold": "1e-7"}
#include <vigil/sdk.hpp>

#include <string>
#include <utility>

namespace {

using vigil::sdk::Error;
using vigil::sdk::Result;

class GradientMeanAbsBelow final : public vigil::sdk::Rule {
 public:
  static constexpr vigil::sdk::ParamSpec kParams[] = {
      vigil::sdk::param_double("threshold", "1e-7",
                               "The rule is met when the mean absolute value of a gradient falls below this.")
          .min(0),
  };

  explicit GradientMeanAbsBelow(vigil::sdk::RuleContext ctx)
      : Rule(std::move(ctx)), threshold_(params().get_double("threshold")) {}

  Result<bool> invoke_at_step(vigil_step step) override {
    // = tensor_names({.collection = "gradients"}): the collection's tensors this trial holds.
    VIGIL_TRY(const auto names, base_trial().collection_tensor_names("gradients"));
    if (names.empty()) log(VIGIL_LOG_DEBUG, "step {}: the trial has no tensor in collection gradients", step);
    for (const std::string& name : names) {
      if (is_cancelled()) return vigil::sdk::fail(Error::cancelled());
      const vigil::sdk::Tensor tensor = base_trial().tensor(name);
      auto workers = tensor.workers(step);
      if (!workers) {
        if (workers.error().code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP) continue;  // not saved at this step
        return vigil::sdk::fail(std::move(workers).error());
      }
      for (const std::string& worker : *workers) {
        auto mean_abs = tensor.reduction_value(step, "mean", /*abs=*/true, VIGIL_MODE_GLOBAL, worker);
        if (!mean_abs) {
          if (mean_abs.error().code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP) continue;
          return vigil::sdk::fail(std::move(mean_abs).error());
        }
        if (*mean_abs < threshold_) {
          VIGIL_TRY_VOID(report_evidence(vigil::sdk::JsonObject()
                                             .add("tensor", name)
                                             .add("worker", worker)
                                             .add("mean_abs", *mean_abs)
                                             .add("threshold", threshold_)
                                             .str()));
          log(VIGIL_LOG_INFO, "step {}: mean(|{}|) on {} is {} < {}", step, name, worker, *mean_abs, threshold_);
          return true;
        }
      }
    }
    return false;
  }

 private:
  double threshold_;
};

}  // namespace

VIGIL_PLUGIN("vigil.example.cpp-rule", "1.0.0",
             VIGIL_RULE(GradientMeanAbsBelow, "vigil.example.GradientMeanAbsBelow", "GradientMeanAbsBelow",
                        "Met when the mean absolute value of any gradient, on any worker, is below threshold."));
