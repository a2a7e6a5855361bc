// DebugRuleEvaluationStatus and ProfilerRuleEvaluationStatus records (sagemaker-api §2.7, §4.7) and
// the status file that holds them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "evaluate/job_config.h"

namespace vigil::evaluate {

enum class RuleEvaluationStatus { InProgress, NoIssuesFound, IssuesFound, Error, Stopping, Stopped };
std::string_view status_name(RuleEvaluationStatus s);
std::optional<RuleEvaluationStatus> parse_status_name(std::string_view name);

// One step at which a rule's condition was met, with the evidence the rule reported.
struct Trigger {
  int64_t step = 0;
  std::vector<nlohmann::json> evidence;
};

// A Triggers entry of the status file: {"step": ..., "evidence": [...]}, and back.
nlohmann::ordered_json trigger_to_json(const Trigger& trigger);
std::optional<Trigger> trigger_from_json(const nlohmann::json& entry);

// Whether the rule had the data to judge, Vigil's addition beside RuleEvaluationStatus: a rule that
// never judged ends NoIssuesFound in SageMaker's shape but says so here. A call judged unless it
// returned a skip status (TensorUnavailableForStep, ...) or the rule said not_judged (ABI 1.2).
struct Judgement {
  int64_t steps_judged = 0;
  int64_t steps_not_judged = 0;
  std::string reason;  // why: the rule's last not_judged reason, else the last skip status's details
  bool reason_from_rule = false;
  bool enough_data() const { return steps_judged > 0; }
};

// The status file's "Judgement" object, and back.
nlohmann::ordered_json judgement_to_json(const Judgement& judgement);
std::optional<Judgement> judgement_from_json(const nlohmann::json& j);

struct RuleStatus {
  std::string configuration_name;
  std::string rule_name;  // rule_to_invoke as resolved (the rule class name)
  std::string profile;    // the rule profile its parameters' defaults came from
  RuleKind kind = RuleKind::Debug;  // which list of the status file it is in
  RuleEvaluationStatus status = RuleEvaluationStatus::InProgress;
  std::string details;    // StatusDetails; empty = absent
  double last_modified = 0;  // epoch seconds
  std::optional<int64_t> current_step;
  std::vector<Trigger> triggers;  // the first kMaxStoredTriggers
  int64_t trigger_count = 0;      // all of them
  std::optional<int64_t> last_trigger_step;
  Judgement judgement;
};

// A rule may fire at every step of a long job: the status file keeps the first triggers and a count
// (docs/reliability.md, "Bounds against other users and long jobs").
inline constexpr size_t kMaxStoredTriggers = 100;

double now_epoch_seconds();

// All rules' statuses. Every status change is written at once, atomically (temp file + rename), to
// the status file and reported to the listener; triggers, `CurrentStep` progress and judgements are
// written with it, or at most once a second (by `clock`, epoch seconds) when nothing else changes.
class StatusBoard {
 public:
  using Listener = std::function<void(const RuleStatus&)>;
  using Clock = std::function<double()>;
  StatusBoard(std::vector<RuleStatus> initial, std::optional<std::filesystem::path> status_file, Listener listener,
              Clock clock = now_epoch_seconds);

  void set(size_t rule, RuleEvaluationStatus status, std::string details = {});
  void add_trigger(size_t rule, Trigger trigger);
  void progress(size_t rule, int64_t step);
  // Counts one call (written with the next change or progress write); `reason_from_rule`: the rule's
  // own not_judged reason, which a later skip status's details do not replace.
  void count_judgement(size_t rule, bool judged, std::string reason = {}, bool reason_from_rule = false);
  void set_judgement(size_t rule, Judgement judgement);
  RuleStatus get(size_t rule) const;
  std::vector<RuleStatus> all() const;
  // Writes the file now (also used for the first write).
  [[nodiscard]] Result<void> flush();
  // Writes what changed since the last write, if anything: the evaluator calls it before it waits
  // for a step that has not arrived, so that a change held back by the once-a-second write is not
  // held while nothing else happens (a live job's last trigger).
  [[nodiscard]] Result<void> flush_if_unwritten();
  nlohmann::ordered_json to_json() const;
  // How many times the status file was written (tests and bench/ count them).
  uint64_t writes() const;

 private:
  [[nodiscard]] Result<void> write_locked();
  void write_if_due_locked();
  mutable std::mutex mu_;
  std::vector<RuleStatus> rules_;
  std::optional<std::filesystem::path> file_;
  Listener listener_;
  Clock clock_;
  double last_write_ = 0;
  bool unwritten_ = false;  // a change since the last write
  uint64_t writes_ = 0;
};

}  // namespace vigil::evaluate
