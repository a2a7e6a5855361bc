// The benchmark's rules.
//
// FullScan: At every step it asks the host for mean(|x|) of every tensor the
// step saved, for every worker, as VanishingGradient does for gradients, and fires when one is above
// `fire_above` (never, by default; the live-latency benchmark sets 0 so that every step fires and
// writes a new trigger to the status file).
#include <vigil/sdk.hpp>

#include <string>
#include <utility>

namespace {

using vigil::sdk::Result;

class FullScan final : public vigil::sdk::Rule {
 public:
  static constexpr vigil::sdk::ParamSpec kParams[] = {
      vigil::sdk::param_double("fire_above", "inf", "Fire when a tensor's mean(|x|) is above this."),
  };

  explicit FullScan(vigil::sdk::RuleContext ctx) : Rule(std::move(ctx)), fire_above_(params().get_double("fire_above")) {}

  Result<bool> invoke_at_step(vigil_step step) override {
    VIGIL_TRY(const auto names, base_trial().tensor_names());
    bool fired = false;
    for (const std::string& name : names) {
      const vigil::sdk::Tensor tensor = base_trial().tensor(name);
      auto workers = tensor.workers(step);
      if (!workers) {
        if (workers.error().code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP) continue;  // not saved at this step
        return vigil::sdk::fail(std::move(workers).error());
      }
      for (const std::string& worker : *workers) {
        VIGIL_TRY(const double mean_abs, tensor.reduction_value(step, "mean", true, VIGIL_MODE_GLOBAL, worker));
        if (!fired && mean_abs > fire_above_) {
          VIGIL_TRY_VOID(report_evidence(
              vigil::sdk::JsonObject().add("tensor", name).add("worker", worker).add("mean_abs", mean_abs).str()));
          fired = true;
        }
      }
    }
    return fired;
  }

 private:
  double fire_above_;
};

// Idle: reads nothing and never fires, so that an evaluation with it costs what the evaluator's
// own walk over the steps costs (run_bench.py's many-steps workload).
class Idle final : public vigil::sdk::Rule {
 public:
  explicit Idle(vigil::sdk::RuleContext ctx) : Rule(std::move(ctx)) {}
  Result<bool> invoke_at_step(vigil_step) override { return false; }
};

}  // namespace

VIGIL_PLUGIN("vigil.bench.rules", "1.0.0",
             VIGIL_RULE(FullScan, "vigil.bench.FullScan", "FullScan",
                        "Benchmark rule: mean(|x|) of every tensor at every step, through the host."),
             VIGIL_RULE(Idle, "vigil.bench.Idle", "Idle", "Benchmark rule: reads nothing, never fires."));
