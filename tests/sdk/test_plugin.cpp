// A plugin built with vigil_add_rule_plugin(... EIGEN) for the load / symbol-hygiene tests: it is
// dlopen'ed by sdk_tests and checked with nm (only vigil_plugin_entry_v1 may be exported).
#include <vigil/sdk.hpp>
#include <vigil/sdk/tensor_eigen.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace {

namespace sdk = vigil::sdk;

// Met when the sum of a tensor's elements at the step exceeds `threshold` (Eigen, no copy).
class SumAbove final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string("tensor", "weights/w", "The tensor to sum"),
      sdk::param_double("threshold", "0", "Sum above which the rule is met"),
  };
  explicit SumAbove(sdk::RuleContext ctx)
      : Rule(std::move(ctx)), tensor_(params().get_string("tensor")), threshold_(params().get_double("threshold")) {}

  sdk::Result<void> required_tensors(vigil_step step, sdk::RequiredTensors& req) override {
    return req.add(tensor_, {step});
  }

  sdk::Result<bool> invoke_at_step(vigil_step step) override {
    VIGIL_TRY(sdk::TensorView view, base_trial().tensor(tensor_).value(step));
    VIGIL_TRY(const auto values, view.try_as_eigen<float>());
    const double sum = values.template cast<double>().sum();
    if (sum <= threshold_) return false;
    VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("tensor", tensor_).add("sum", sum).str()));
    return true;
  }

 private:
  std::string tensor_;
  double threshold_;
};

// Throws across what would be the library boundary if the SDK let it.
class Throws final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {sdk::param_int("kind", "0", "0 runtime_error, 1 smdebug, 2 int")};
  explicit Throws(sdk::RuleContext ctx) : Rule(std::move(ctx)), kind_(params().get_int("kind")) {
    if (kind_ < 0) throw std::invalid_argument("kind must be >= 0");
  }
  sdk::Result<bool> invoke_at_step(vigil_step step) override {
    if (kind_ == 0) throw std::runtime_error("thrown inside the plugin");
    if (kind_ == 1) throw sdk::TensorUnavailableForStep("x", step);
    throw 42;
  }

 private:
  int64_t kind_;
};

}  // namespace

VIGIL_PLUGIN("vigil.test.shared", "0.3.0",
             VIGIL_RULE(SumAbove, "vigil.test.SumAbove", "SumAbove", "Sum of a tensor above a threshold"),
             VIGIL_RULE(Throws, "vigil.test.Throws", "Throws", "Always throws"));
