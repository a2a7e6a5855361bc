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
#include <vector>

#include "evaluate/job_config.h"
#include "evaluate/rule_status.h"
#include "plugins/plugin_loader.h"

namespace vigil::evaluate {

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
};

class Evaluator {
 public:
  // Resolves rules, validates parameters and opens trials; errors name the failing field.
  static Result<std::unique_ptr<Evaluator>> create(const plugins::PluginRegistry& registry, JobConfig job,
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
