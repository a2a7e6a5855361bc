// A plugin built with the SDK that uses ABI 1.2: a rule with calibrated defaults that says when it
// did not judge, and a rule that takes wall-clock ticks.
#include <vigil/sdk.hpp>

#include <optional>

namespace {

namespace sdk = vigil::sdk;

// Fires at step `fire_at` (calibrated: 4); before `min_steps` steps were seen (calibrated: 3) it says
// it did not judge.
class ProfiledRule final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_int("fire_at", "1", "The step at which the condition is met.").min(0).calibrated("4"),
      sdk::param_int("min_steps", "0", "Steps to see before judging.").min(0).calibrated("3"),
      sdk::param_string("label", "plain", "A parameter without a calibrated default."),
  };
  explicit ProfiledRule(sdk::RuleContext ctx)
      : Rule(std::move(ctx)), fire_at_(params().get_int("fire_at")), min_steps_(params().get_int("min_steps")) {}

  sdk::Result<bool> invoke_at_step(vigil_step step) override {
    if (++seen_ <= min_steps_) {
      not_judged(fmt::format("{} of {} steps seen", seen_, min_steps_));
      return false;
    }
    return step == fire_at_;
  }

 private:
  int64_t fire_at_, min_steps_, seen_ = 0;
};

// Fires from a tick once `stall_ms` have passed since the last step was invoked (wall-clock).
class ClockRule final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("stall_seconds", "0.3", "Seconds without a step that make a stall.").min(0),
  };
  explicit ClockRule(sdk::RuleContext ctx) : Rule(std::move(ctx)), stall_(params().get_double("stall_seconds")) {}

  sdk::Result<bool> invoke_at_step(vigil_step) override {
    last_seen_.reset();
    return false;
  }
  sdk::Result<bool> invoke_at_time(double wall_time, vigil_step last_step) override {
    if (last_step < 0) return false;
    if (!last_seen_) last_seen_ = wall_time;
    if (wall_time - *last_seen_ < stall_) return false;
    VIGIL_TRY_VOID(report_evidence(fmt::format(R"({{"last_step": {}, "stalled_seconds": {}}})", last_step,
                                               wall_time - *last_seen_)));
    return true;
  }

 private:
  double stall_;
  std::optional<double> last_seen_;  // the first tick's time after the last step
};

}  // namespace

VIGIL_PLUGIN("vigil.test.sdk-profiles", "1.0",
             VIGIL_RULE(ProfiledRule, "vigil.test.sdk.ProfiledRule", "ProfiledRule",
                        "calibrated defaults and not_judged (ABI 1.2)"),
             VIGIL_RULE(ClockRule, "vigil.test.sdk.ClockRule", "ClockRule", "wall-clock ticks (ABI 1.2)"));
