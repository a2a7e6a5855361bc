// What `vigil evaluate --isolate` and its children say to each other. The parent starts one child
// per plugin (`vigil evaluate --isolated-child --plugin-file FILE`), hands it its share of the job
// on stdin (a ChildWork document) and reads one JSON line per event from the child's fd 3:
//
//   {"rule": 0, "RuleEvaluationStatus": "IssuesFound", "StatusDetails": "..."}   a status change
//   {"rule": 0, "Trigger": {"step": 4, "evidence": [...]}}                        a trigger (as in Triggers)
//   {"rule": 0, "CurrentStep": 4}                                                 progress
//   {"rule": 0, "Judgement": {"StepsJudged": 4, ...}}                           as the rule ends
//   {"rule": 0, "call": "step", "step": 4}     the rule's code was entered (create, step, destroy)
//   {"rule": 0, "call_ended": true}            ... and left
//   {"rule": 0, "finished": true}              the rule reached its verdict (or Stopping)
//
// `rule` is the index in the child's share of the job. Everything here is internal: both ends are
// the same executable.
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evaluate/evaluator.h"
#include "evaluate/job_config.h"
#include "evaluate/rule_status.h"

namespace vigil::evaluate {

// The fd a child writes its events to.
inline constexpr int kChildEventsFd = 3;

// A child's share of the job, with the evaluator options that decide its results.
struct ChildWork {
  JobConfig job;  // already validated and resolved by the parent; rule_to_invoke is the rule's id
  bool follow = true;
  std::optional<std::chrono::milliseconds> idle_timeout;
  std::chrono::milliseconds poll_interval{20};
  std::optional<std::filesystem::path> output_directory;
};

// Lossless: the rules are not re-checked against SageMaker's limits (the parent did that).
std::string encode_child_work(const ChildWork& work);
[[nodiscard]] Result<ChildWork> decode_child_work(std::string_view text);

struct ChildEvent {
  enum class Kind { Status, Trigger, Progress, Judgement, CallBegan, CallEnded, Finished };
  Kind kind = Kind::Status;
  size_t rule = 0;
  RuleEvaluationStatus status = RuleEvaluationStatus::InProgress;  // Status
  std::string details;                                             // Status
  Trigger trigger;                                                 // Trigger
  Judgement judgement;                                             // Judgement
  int64_t step = 0;                                                // Progress, CallBegan
  RuleCall call = RuleCall::Step;                                  // CallBegan
};

// One line (without its newline); nullopt for a line that is not an event.
std::optional<ChildEvent> parse_child_event(std::string_view line);

// The child's side: installs hooks in `options` that write every event of the job's rules to `fd`.
// Must outlive the evaluator that uses the options.
class ChildEventWriter {
 public:
  ChildEventWriter(int fd, const JobConfig& job);
  void attach(EvaluatorOptions& options);

 private:
  void write(size_t rule, nlohmann::json event);
  int fd_;
  std::vector<std::string> configuration_names_;  // to find a status's rule
  std::mutex mu_;                                 // one line at a time from the evaluator's threads
};

}  // namespace vigil::evaluate
