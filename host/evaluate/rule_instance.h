// One rule instance created through a plugin's factory: its host session, its trial handles and
// the containment of everything it might do wrong. The evaluator drives these step by step, and
// the Python module uses them to run plugin rules with smdebug's invoke_rule.
#pragma once

#include <vigil/vigil.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "plugin_host/host_services.h"
#include "plugin_host/param_values.h"
#include "plugin_host/plugin_loader.h"
#include "trial/trial.h"

namespace vigil::evaluate {

// What one invoke_at_step (or required_tensors) call came to.
struct InvokeOutcome {
  // The rule's status. Host-detected misbehaviour (a C++ exception across the ABI, an unknown
  // status, a tensor view kept past the call) is reported as VIGIL_E_PLUGIN_FAILURE.
  vigil_status status = VIGIL_OK;
  bool condition_met = false;   // OK with the condition met, or RuleEvaluationConditionMet
  bool end_of_rule = false;     // RuleEvaluationConditionMet with end_of_rule
  Error error;                  // the rule's error record when status != OK
  std::vector<std::string> evidence;  // JSON objects the rule reported during the call
  // OK without the condition met, but the rule said it did not judge (ABI 1.2 not_judged) and why.
  bool not_judged = false;
  std::string not_judged_reason;
  // "<smdebug class>: <message>", as StatusDetails words an Error.
  std::string details() const;
};

using RuleLog = std::function<void(vigil_log_level, const std::string&)>;

// ABI 1.4: gets the rule ready through its plugin's preparer (plugin.h) before its trials exist; does
// nothing for a plugin without one (type.preparer NULL). A C++ exception across the ABI is contained
// as a PluginFailure. The outcome is for the log only: create() reports whatever went wrong.
bool has_preparer(const plugin_host::RuleType& type);
[[nodiscard]] Result<void> prepare_rule(const plugin_host::RuleType& type, const plugin_host::BoundParams& params,
                                        const std::string& configuration_name);

class RuleInstance {
 public:
  // Creates the rule through its plugin. `trials[0]` is the base trial; a profiler rule gets no
  // trials and its `profiler` data instead. The values are read
  // through `cache` when one is given (shared by the rules of one step).
  [[nodiscard]] static Result<std::unique_ptr<RuleInstance>> create(const plugin_host::RuleType& type, const plugin_host::BoundParams& params,
                                                      const std::string& configuration_name,
                                                      std::vector<std::shared_ptr<Trial>> trials,
                                                      std::shared_ptr<plugin_host::StepValueCache> cache,
                                                      std::stop_token stop, RuleLog log,
                                                      std::filesystem::path output_directory = {},
                                                      std::shared_ptr<plugin_host::ProfilerSource> profiler = nullptr);
  ~RuleInstance();  // calls the rule's destroy (contained)
  RuleInstance(const RuleInstance&) = delete;
  RuleInstance& operator=(const RuleInstance&) = delete;

  // Asks the rule what it will read at `step` and reads it into the cache.
  InvokeOutcome prefetch(int64_t step);
  InvokeOutcome invoke(int64_t step);
  // ABI 1.2: whether the rule takes wall-clock ticks, and one tick (plugin.h's invoke_at_time).
  bool takes_ticks() const;
  InvokeOutcome invoke_at_time(double wall_time, int64_t last_step);

  const plugin_host::RuleType& type() const { return type_; }
  const std::string& name() const { return session_->rule_name; }

 private:
  RuleInstance() = default;
  plugin_host::RuleType type_;
  std::unique_ptr<vigil_session> session_;
  std::vector<vigil_trial> handles_;
  std::vector<vigil_trial*> handle_ptrs_;
  vigil_rule* rule_ = nullptr;
  template <class Call>
  InvokeOutcome contained_call(std::string_view fn, const std::string& at, Call&& call);
  // Maps a finished call's status, met flag and error record onto `out` (both invoke calls).
  void finish_call(InvokeOutcome& out, bool met, const vigil_error& err, std::string_view what);
};

}  // namespace vigil::evaluate
