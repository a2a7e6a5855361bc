// The evaluator: runs the rules a job configures against their trials with smdebug's invoke_rule
// semantics (format spec §5.13), live or after the fact, and reports DebugRuleEvaluationStatuses.
//
// Rules that read one base trial share one Trial and one walk over its steps: at each step every
// rule declares the tensors it needs, each is read once into a per-step cache, then every rule is
// invoked. A rule that fails, throws, returns an unknown status or leaks a tensor view gets Error;
// the others go on.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "evaluate/job_config.h"
#include "evaluate/rule_status.h"
#include "plugin_host/param_values.h"
#include "plugin_host/plugin_loader.h"

namespace vigil::evaluate {

// The calls into a rule's own code, as reported to a RuleWatcher.
enum class RuleCall { Create, Step, Destroy };
std::string_view rule_call_name(RuleCall call);  // "create", "step", "destroy"
std::optional<RuleCall> parse_rule_call(std::string_view name);

// Finer-grained events than status changes, for supervising the rules from another process
// (`vigil evaluate --isolate`: each child reports them to the parent). `rule` is the index in the
// job. Called from the evaluator's threads; every member may be empty.
struct RuleWatcher {
  // Around each call into the rule's code: create, required_tensors + invoke_at_step at `step`
  // (each call separately), destroy. `step` is the rule's start_step for create and destroy.
  std::function<void(size_t rule, RuleCall call, int64_t step)> call_began;
  std::function<void(size_t rule)> call_ended;
  std::function<void(size_t rule, const Trigger& trigger)> trigger_added;
  std::function<void(size_t rule, int64_t step)> step_done;  // the rule's CurrentStep
  // The rule's judgement counts as it ends (just before `finished`).
  std::function<void(size_t rule, const Judgement& judgement)> judged;
  // The rule reached its verdict (IssuesFound stays a rule's status while it keeps running, so the
  // status alone does not say when it is final) or was asked to stop (Stopping).
  std::function<void(size_t rule)> finished;
};

struct EvaluatorOptions {
  bool follow = true;  // false: what exists is the whole trial (no end marker needed)
  std::optional<std::chrono::milliseconds> idle_timeout;  // end when no new step arrives for this long
  std::optional<std::filesystem::path> status_file;
  // Where rules write reports (CreateXgboostReport's HTML); default: the status file's folder,
  // else the current directory.
  std::optional<std::filesystem::path> output_directory;
  StatusBoard::Listener on_status;                          // called on every status change
  std::function<void(const std::string& rule, int level, const std::string& message)> on_log;
  // Called when a trial's walk reaches a new step (at most about once a second per trial).
  std::function<void(const std::string& trial, int64_t step)> on_progress;
  std::chrono::milliseconds poll_interval{20};
  // While a followed trial has no new step, rules that take wall-clock ticks (ABI 1.2
  // invoke_at_time) are called this often.
  std::chrono::milliseconds tick_interval{1000};
  RuleWatcher watcher;
};

// A job's rule resolved against the loaded plugins: the plugin rule that runs it and its parameters.
struct ResolvedRule {
  RuleConfig config;
  plugin_host::RuleType type;
  plugin_host::BoundParams params;
  std::string rule_name;  // RuleToInvoke as reported: the descriptor's name, or the Python rule's class
  std::string profile;    // the profile the parameters' defaults came from
};

// Python rule files (source_s3_uri, rule_to_invoke) are served by the embedded-Python plugin under this id.
inline constexpr std::string_view kPythonRuleId = "vigil.python.CustomRule";

// A Python rule file runs code as a plugin library does, so it passes the plugin loader's trust check
// (docs/reliability.md): the local file named by `source` ("/path" or "file:///path"; s3:// is left
// to the plugin, which refuses it), as its checked real path. A relative path is refused, never
// resolved against the working directory; a missing file is left to the plugin to report (the
// rule's Error status) once the folder it would be in is trusted. Every way of running a rule file
// goes through it: a job's rules (resolve_job) and vigil.rules.load.
[[nodiscard]] Result<std::string> trusted_rule_file(std::string_view source, bool allow_insecure);

// Validates the job and resolves every rule, as Evaluator::create does before anything runs; a rule
// without a profile gets the default one (sagemaker). Errors name the failing field.
[[nodiscard]] Result<std::vector<ResolvedRule>> resolve_job(const plugin_host::PluginRegistry& registry, JobConfig job);

class Evaluator {
 public:
  // Resolves rules, validates parameters and opens trials; errors name the failing field.
  [[nodiscard]] static Result<std::unique_ptr<Evaluator>> create(const plugin_host::PluginRegistry& registry, JobConfig job,
                                                   EvaluatorOptions options);
  ~Evaluator();

  // Runs until every rule has finished or `stop` is requested (rules then go Stopping -> Stopped).
  void run(std::stop_token stop);

  std::vector<RuleStatus> statuses() const;

 private:
  struct Impl;
  explicit Evaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::evaluate
