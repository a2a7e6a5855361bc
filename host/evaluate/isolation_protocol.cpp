#include "evaluate/isolation_protocol.h"

#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "common/os.h"

namespace vigil::evaluate {

namespace {

// Rule details and evidence come from plugins and may hold invalid UTF-8: replace it rather than throw.
std::string dump_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
}

[[nodiscard]] Error bad_work(std::string what) {
  return Error::invalid_argument("the isolated child's job is malformed: " + std::move(what));
}

}  // namespace

std::string encode_child_work(const ChildWork& work) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : work.job.rules) {
    nlohmann::json j;
    j["configuration_name"] = r.configuration_name;
    j["rule_to_invoke"] = r.rule_to_invoke;
    j["parameters"] = r.parameters;
    j["base_trial"] = r.base_trial;
    j["other_trials"] = r.other_trials;
    j["start_step"] = r.start_step;
    if (r.end_step) j["end_step"] = *r.end_step;
    if (r.action_json) j["action_json"] = *r.action_json;
    if (r.source) j["source"] = *r.source;
    if (r.profile) j["profile"] = *r.profile;
    if (r.kind == RuleKind::Profiler) j["kind"] = "profiler";
    rules.push_back(std::move(j));
  }
  nlohmann::json doc;
  doc["rules"] = std::move(rules);
  doc["follow"] = work.follow;
  if (work.idle_timeout) doc["idle_timeout_ms"] = work.idle_timeout->count();
  doc["poll_interval_ms"] = work.poll_interval.count();
  if (work.output_directory) doc["output_directory"] = work.output_directory->string();
  return dump_line(doc);
}

Result<ChildWork> decode_child_work(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return fail(bad_work("not a JSON object"));
  try {
    ChildWork work;
    work.follow = doc.at("follow").get<bool>();
    if (doc.contains("idle_timeout_ms"))
      work.idle_timeout = std::chrono::milliseconds(doc["idle_timeout_ms"].get<int64_t>());
    work.poll_interval = std::chrono::milliseconds(doc.at("poll_interval_ms").get<int64_t>());
    if (doc.contains("output_directory")) work.output_directory = doc["output_directory"].get<std::string>();
    for (const auto& j : doc.at("rules")) {
      RuleConfig r;
      r.configuration_name = j.at("configuration_name").get<std::string>();
      r.rule_to_invoke = j.at("rule_to_invoke").get<std::string>();
      r.parameters = j.at("parameters").get<std::map<std::string, std::string>>();
      r.base_trial = j.at("base_trial").get<std::string>();
      r.other_trials = j.at("other_trials").get<std::vector<std::string>>();
      r.start_step = j.at("start_step").get<int64_t>();
      if (j.contains("end_step")) r.end_step = j["end_step"].get<int64_t>();
      if (j.contains("action_json")) r.action_json = j["action_json"].get<std::string>();
      if (j.contains("source")) r.source = j["source"].get<std::string>();
      if (j.contains("profile")) r.profile = j["profile"].get<std::string>();
      if (j.contains("kind")) {
        if (j["kind"] != "profiler") return fail(bad_work("unknown rule kind " + j["kind"].dump()));
        r.kind = RuleKind::Profiler;
      }
      work.job.rules.push_back(std::move(r));
    }
    return work;
  } catch (const nlohmann::json::exception& e) {
    return fail(bad_work(e.what()));
  }
}

std::optional<ChildEvent> parse_child_event(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto rule = j.find("rule");
  if (rule == j.end() || !rule->is_number_unsigned()) return std::nullopt;
  ChildEvent e;
  e.rule = rule->get<size_t>();
  auto integer = [&](const char* key) -> std::optional<int64_t> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  if (auto status = j.find("RuleEvaluationStatus"); status != j.end()) {
    auto parsed = status->is_string() ? parse_status_name(status->get<std::string>()) : std::nullopt;
    if (!parsed) return std::nullopt;
    e.kind = ChildEvent::Kind::Status;
    e.status = *parsed;
    if (auto details = j.find("StatusDetails"); details != j.end() && details->is_string())
      e.details = details->get<std::string>();
  } else if (auto trigger = j.find("Trigger"); trigger != j.end()) {
    auto parsed = trigger_from_json(*trigger);
    if (!parsed) return std::nullopt;
    e.kind = ChildEvent::Kind::Trigger;
    e.trigger = std::move(*parsed);
  } else if (auto judgement = j.find("Judgement"); judgement != j.end()) {
    auto parsed = judgement_from_json(*judgement);
    if (!parsed) return std::nullopt;
    e.kind = ChildEvent::Kind::Judgement;
    e.judgement = std::move(*parsed);
  } else if (auto step = integer("CurrentStep")) {
    e.kind = ChildEvent::Kind::Progress;
    e.step = *step;
  } else if (auto call = j.find("call"); call != j.end()) {
    auto kind = call->is_string() ? parse_rule_call(call->get<std::string>()) : std::nullopt;
    auto at = integer("step");
    if (!kind || !at) return std::nullopt;
    e.kind = ChildEvent::Kind::CallBegan;
    e.call = *kind;
    e.step = *at;
  } else if (j.contains("call_ended")) {
    e.kind = ChildEvent::Kind::CallEnded;
  } else if (j.contains("finished")) {
    e.kind = ChildEvent::Kind::Finished;
  } else {
    return std::nullopt;
  }
  return e;
}

ChildEventWriter::ChildEventWriter(int fd, const JobConfig& job) : fd_(fd) {
  for (const auto& r : job.rules) configuration_names_.push_back(r.configuration_name);
}

void ChildEventWriter::write(size_t rule, nlohmann::json event) {
  event["rule"] = rule;
  const std::string line = dump_line(event);
  std::lock_guard lock(mu_);
  (void)os::write_all(fd_, line);  // EPIPE: the parent is gone, nobody is listening any more
}

void ChildEventWriter::attach(EvaluatorOptions& options) {
  options.on_status = [this](const RuleStatus& s) {
    for (size_t i = 0; i < configuration_names_.size(); ++i)
      if (configuration_names_[i] == s.configuration_name) {
        nlohmann::json j{{"RuleEvaluationStatus", status_name(s.status)}};
        if (!s.details.empty()) j["StatusDetails"] = s.details;
        write(i, std::move(j));
        return;
      }
  };
  RuleWatcher& w = options.watcher;
  w.call_began = [this](size_t rule, RuleCall call, int64_t step) {
    write(rule, {{"call", rule_call_name(call)}, {"step", step}});
  };
  w.call_ended = [this](size_t rule) { write(rule, {{"call_ended", true}}); };
  w.trigger_added = [this](size_t rule, const Trigger& t) { write(rule, {{"Trigger", trigger_to_json(t)}}); };
  w.step_done = [this](size_t rule, int64_t step) { write(rule, {{"CurrentStep", step}}); };
  w.judged = [this](size_t rule, const Judgement& j) { write(rule, {{"Judgement", judgement_to_json(j)}}); };
  w.finished = [this](size_t rule) { write(rule, {{"finished", true}}); };
}

}  // namespace vigil::evaluate
