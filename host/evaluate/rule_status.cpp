#include "evaluate/rule_status.h"

#include <fmt/format.h>
#include <vigil/sdk/error_record.hpp>

#include <chrono>
#include <cstdio>

#include "common/published_file.h"

namespace vigil::evaluate {

namespace {
constexpr size_t kMaxDetails = 1024;  // bytes of StatusDetails (and of a NotJudgedReason)
}  // namespace

std::string_view status_name(RuleEvaluationStatus s) {
  switch (s) {
    case RuleEvaluationStatus::InProgress: return "InProgress";
    case RuleEvaluationStatus::NoIssuesFound: return "NoIssuesFound";
    case RuleEvaluationStatus::IssuesFound: return "IssuesFound";
    case RuleEvaluationStatus::Error: return "Error";
    case RuleEvaluationStatus::Stopping: return "Stopping";
    case RuleEvaluationStatus::Stopped: return "Stopped";
  }
  return "?";
}

std::optional<RuleEvaluationStatus> parse_status_name(std::string_view name) {
  for (auto s : {RuleEvaluationStatus::InProgress, RuleEvaluationStatus::NoIssuesFound, RuleEvaluationStatus::IssuesFound,
                 RuleEvaluationStatus::Error, RuleEvaluationStatus::Stopping, RuleEvaluationStatus::Stopped})
    if (status_name(s) == name) return s;
  return std::nullopt;
}

nlohmann::ordered_json trigger_to_json(const Trigger& trigger) {
  nlohmann::ordered_json j;
  j["step"] = trigger.step;
  j["evidence"] = trigger.evidence;
  return j;
}

std::optional<Trigger> trigger_from_json(const nlohmann::json& entry) {
  if (!entry.is_object()) return std::nullopt;
  auto step = entry.find("step");
  auto evidence = entry.find("evidence");
  if (step == entry.end() || !step->is_number_integer() || evidence == entry.end() || !evidence->is_array())
    return std::nullopt;
  return Trigger{.step = step->get<int64_t>(), .evidence = evidence->get<std::vector<nlohmann::json>>()};
}

nlohmann::ordered_json judgement_to_json(const Judgement& judgement) {
  nlohmann::ordered_json j;
  j["EnoughData"] = judgement.enough_data();
  j["StepsJudged"] = judgement.steps_judged;
  j["StepsNotJudged"] = judgement.steps_not_judged;
  if (!judgement.reason.empty()) j["NotJudgedReason"] = judgement.reason;
  return j;
}

std::optional<Judgement> judgement_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  auto judged = j.find("StepsJudged");
  auto not_judged = j.find("StepsNotJudged");
  if (judged == j.end() || !judged->is_number_integer() || not_judged == j.end() || !not_judged->is_number_integer())
    return std::nullopt;
  Judgement out{.steps_judged = judged->get<int64_t>(), .steps_not_judged = not_judged->get<int64_t>()};
  if (auto reason = j.find("NotJudgedReason"); reason != j.end() && reason->is_string()) out.reason = reason->get<std::string>();
  return out;
}

double now_epoch_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

StatusBoard::StatusBoard(std::vector<RuleStatus> initial, std::optional<std::filesystem::path> status_file,
                         Listener listener, Clock clock)
    : rules_(std::move(initial)), file_(std::move(status_file)), listener_(std::move(listener)), clock_(std::move(clock)) {
  for (auto& r : rules_) r.last_modified = clock_();
}

void StatusBoard::set(size_t rule, RuleEvaluationStatus status, std::string details) {
  RuleStatus copy;
  {
    std::lock_guard lock(mu_);
    auto& r = rules_.at(rule);
    if (r.status == status && r.details == details) return;
    r.status = status;
    // StatusDetails is at most 1024 characters in SageMaker; cut on a character boundary, since the
    // status file must stay valid UTF-8 JSON.
    details.resize(sdk::utf8_prefix_size(details, kMaxDetails));
    r.details = std::move(details);
    r.last_modified = clock_();
    (void)write_locked();
    copy = r;
  }
  if (listener_) listener_(copy);
}

void StatusBoard::add_trigger(size_t rule, Trigger trigger) {
  std::lock_guard lock(mu_);
  auto& r = rules_.at(rule);
  ++r.trigger_count;
  r.last_trigger_step = trigger.step;
  if (r.triggers.size() < kMaxStoredTriggers) r.triggers.push_back(std::move(trigger));
  write_if_due_locked();
}

void StatusBoard::progress(size_t rule, int64_t step) {
  std::lock_guard lock(mu_);
  rules_.at(rule).current_step = step;
  write_if_due_locked();
}

void StatusBoard::write_if_due_locked() {
  unwritten_ = true;
  if (clock_() - last_write_ >= 1.0) (void)write_locked();
}

void StatusBoard::count_judgement(size_t rule, bool judged, std::string reason, bool reason_from_rule) {
  std::lock_guard lock(mu_);
  auto& j = rules_.at(rule).judgement;
  unwritten_ = true;
  if (judged) {
    ++j.steps_judged;
    return;
  }
  ++j.steps_not_judged;
  if (j.reason_from_rule && !reason_from_rule) return;
  reason.resize(sdk::utf8_prefix_size(reason, kMaxDetails));
  j.reason = std::move(reason);
  j.reason_from_rule = reason_from_rule;
}

void StatusBoard::set_judgement(size_t rule, Judgement judgement) {
  std::lock_guard lock(mu_);
  rules_.at(rule).judgement = std::move(judgement);
  write_if_due_locked();
}

RuleStatus StatusBoard::get(size_t rule) const {
  std::lock_guard lock(mu_);
  return rules_.at(rule);
}

std::vector<RuleStatus> StatusBoard::all() const {
  std::lock_guard lock(mu_);
  return rules_;
}

Result<void> StatusBoard::flush() {
  std::lock_guard lock(mu_);
  return write_locked();
}

Result<void> StatusBoard::flush_if_unwritten() {
  std::lock_guard lock(mu_);
  if (!unwritten_) return {};
  return write_locked();
}

nlohmann::ordered_json StatusBoard::to_json() const {
  nlohmann::ordered_json debug = nlohmann::ordered_json::array(), profiler = nlohmann::ordered_json::array();
  for (const auto& r : rules_) {
    nlohmann::ordered_json j;
    j["RuleConfigurationName"] = r.configuration_name;
    j["RuleEvaluationStatus"] = status_name(r.status);
    if (!r.details.empty()) j["StatusDetails"] = r.details;
    j["LastModifiedTime"] = r.last_modified;
    // Vigil's additions (not in SageMaker's shape): the rule, its profile, its progress (a profiler
    // rule's is its time window), whether it had the data to judge, and the evidence.
    j["RuleToInvoke"] = r.rule_name;
    if (!r.profile.empty()) j["Profile"] = r.profile;
    if (r.current_step) j["CurrentStep"] = *r.current_step;
    j["Judgement"] = judgement_to_json(r.judgement);
    nlohmann::ordered_json triggers = nlohmann::ordered_json::array();
    for (const auto& t : r.triggers) triggers.push_back(trigger_to_json(t));
    j["Triggers"] = std::move(triggers);
    j["TriggerCount"] = r.trigger_count;
    (r.kind == RuleKind::Profiler ? profiler : debug).push_back(std::move(j));
  }
  // As DescribeTrainingJob: one list per kind of rule, each in configuration order.
  nlohmann::ordered_json out = {{"DebugRuleEvaluationStatuses", std::move(debug)}};
  if (!profiler.empty()) out["ProfilerRuleEvaluationStatuses"] = std::move(profiler);
  return out;
}

uint64_t StatusBoard::writes() const {
  std::lock_guard lock(mu_);
  return writes_;
}

Result<void> StatusBoard::write_locked() {
  last_write_ = clock_();
  unwritten_ = false;
  if (!file_) return {};
  ++writes_;
  return publish_file(*file_, file_->string() + ".tmp", to_json().dump(2) + '\n');
}

}  // namespace vigil::evaluate
