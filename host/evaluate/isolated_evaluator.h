// `vigil evaluate --isolate`: the evaluator with fault containment by process. The job's rules are
// grouped by the plugin that provides them; each group runs in its own child process (the `vigil`
// executable again, started with posix_spawn, running the ordinary Evaluator on its rules) that
// reports every status change, trigger and rule call back over a pipe. The parent merges them into
// one status board, so the status file looks as without --isolate. A child that dies (a signal,
// exit()), runs a rule call for longer than the rule timeout, or grows past the memory limit gives
// Error to each of its rules that had not finished; every other child goes on.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "evaluate/evaluator.h"

namespace vigil::evaluate {

struct IsolationOptions {
  // The `vigil` executable that runs the children (`evaluate --isolated-child ...`). The default,
  // the running executable itself, is right inside `vigil`; other programs must name it.
  std::filesystem::path executable = "/proc/self/exe";
  std::vector<std::string> child_arguments;  // appended to every child's command line (--quiet)
  // The longest one call into a rule's code (create, one step, destroy) may take.
  std::optional<std::chrono::milliseconds> rule_timeout;
  // The most resident memory of its own (not file-backed) a child may use, in MiB; 0 for no limit.
  uint64_t memory_limit_mib = 4096;
};

class IsolatedEvaluator {
 public:
  // Resolves and validates the job against `registry` exactly as Evaluator::create does.
  [[nodiscard]] static Result<std::unique_ptr<IsolatedEvaluator>> create(const plugin_host::PluginRegistry& registry, JobConfig job,
                                                           EvaluatorOptions options, IsolationOptions isolation);
  ~IsolatedEvaluator();

  // Runs until every child has ended. A stop request is passed on to the children (SIGTERM:
  // Stopping, then Stopped); one that has not ended a few seconds later is killed.
  void run(std::stop_token stop);

  std::vector<RuleStatus> statuses() const;

 private:
  struct Impl;
  explicit IsolatedEvaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::evaluate
