#include "evaluate/job_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "evaluate/request_validation.h"
#include "format/json_limits.h"
#include "plugin_host/profiles.h"
#include <vigil/sdk/text.hpp>

namespace vigil::evaluate {

namespace {

[[nodiscard]] Error invalid(std::string_view field, std::string_view what) {
  return Error::invalid_argument(fmt::format("{}: {}", field, what));
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool truthy(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return sdk::parse_bool(v.get_ref<const std::string&>()).value_or(false);
  return false;
}

// Vigil's refusal beyond the service model: a member the evaluator does not know is a mistake
// (a misspelt RuleParameters, say) rather than something to ignore.
void check_known_members(validation::Validator& v, const nlohmann::json& list, std::string_view list_name) {
  static constexpr std::string_view known[] = {"RuleConfigurationName", "RuleEvaluatorImage", "RuleParameters",
                                               "LocalPath", "S3OutputPath", "InstanceType", "VolumeSizeInGB"};
  if (!list.is_array()) return;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object()) continue;
    for (const auto& [k, value] : list[i].items())
      if (std::find(std::begin(known), std::end(known), k) == std::end(known))
        v.violation(&value, fmt::format("{}.{}.member.{}", validation::lower_camel(list_name), i + 1, k),
                    fmt::format("Member must be one of RuleConfiguration's members: {}", fmt::join(known, ", ")));
  }
}

// The rules of one list that passed the checks above.
[[nodiscard]] Result<void> read_rule_list(const nlohmann::json& list, RuleKind kind, const std::string& default_trial,
                                          JobConfig& job) {
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& entry = list[i];
    const std::string field = fmt::format("{}[{}]", rule_list_name(kind), i);
    std::map<std::string, std::string> params;
    if (auto rp = entry.find("RuleParameters"); rp != entry.end() && rp->is_object())
      for (const auto& [k, v] : rp->items()) params[k] = v.get<std::string>();
    auto rule = rule_from_parameters(entry.at("RuleConfigurationName").get<std::string>(), params, default_trial,
                                     field + ".RuleParameters", kind);
    if (!rule) return fail(rule.error());
    job.rules.push_back(std::move(*rule));
  }
  return {};
}

}  // namespace

Result<void> check_debugger_supported(const nlohmann::json& job) {
  if (!job.is_object()) return fail(Error::invalid_argument("a CreateTrainingJob request must be a JSON object"));
  const auto hp = job.value("HyperParameters", nlohmann::json::object());
  const auto dist = job.value("Distribution", nlohmann::json::object());
  auto hp_true = [&](const char* key) { return hp.is_object() && hp.contains(key) && truthy(hp[key]); };
  auto dist_enabled = [&](std::initializer_list<const char*> path) {
    const nlohmann::json* cur = &dist;
    for (const char* key : path) {
      if (!cur->is_object() || !cur->contains(key)) return false;
      cur = &(*cur)[key];
    }
    return cur->is_object() ? truthy(cur->value("enabled", nlohmann::json(false))) : truthy(*cur);
  };
  if (hp_true("sagemaker_parameter_server_enabled") || dist_enabled({"parameter_server"}))
    return fail(Error::not_supported("Amazon SageMaker Debugger does not currently support Parameter Server distribution"));
  if (dist_enabled({"smdistributed", "modelparallel"}) || hp.contains("mp_parameters"))
    return fail(Error::not_supported("Amazon SageMaker Debugger does not support SageMaker model parallel training jobs"));

  int64_t instances = 1;
  if (auto rc = job.find("ResourceConfig"); rc != job.end() && rc->is_object() && rc->contains("InstanceCount")) {
    const auto& n = (*rc)["InstanceCount"];
    if (!n.is_number_integer() || n.get<int64_t>() < 1)
      return fail(invalid("ResourceConfig.InstanceCount", "must be an integer >= 1"));
    instances = n.get<int64_t>();
  }
  const bool distributed = instances > 1 || hp_true("sagemaker_distributed_dataparallel_enabled") ||
                           hp_true("sagemaker_mpi_enabled") || dist_enabled({"smdistributed", "dataparallel"}) ||
                           dist_enabled({"mpi"}) || dist_enabled({"torch_distributed"}) || dist_enabled({"pytorchddp"});
  bool checkpointing = false;
  if (auto cc = job.find("CheckpointConfig"); cc != job.end() && cc->is_object()) {
    for (const char* key : {"S3Uri", "LocalPath"}) {
      auto it = cc->find(key);
      if (it == cc->end()) continue;
      // Checked here: reading a non-string as a string would throw out of the parser.
      if (!it->is_string()) return fail(invalid(fmt::format("CheckpointConfig.{}", key), "must be a string"));
      checkpointing |= !it->get_ref<const std::string&>().empty();
    }
  }
  if (distributed && checkpointing)
    return fail(Error::not_supported("SMDebug Does Not Currently Support Distributed Training Jobs With Checkpointing Enabled"));
  return {};
}

std::string_view rule_list_name(RuleKind kind) {
  return kind == RuleKind::Profiler ? "ProfilerRuleConfigurations" : "DebugRuleConfigurations";
}

namespace {

// Where job.rules[i] is in its list, counted from 0.
size_t index_in_list(const JobConfig& job, size_t i) {
  const RuleKind kind = job.rules.at(i).kind;
  return size_t(std::count_if(job.rules.begin(), job.rules.begin() + static_cast<std::ptrdiff_t>(i),
                              [&](const RuleConfig& r) { return r.kind == kind; }));
}

// "debugRuleConfigurations.3": where job.rules[i] is, as the service's messages say it.
std::string service_path(const JobConfig& job, size_t i) {
  return fmt::format("{}.{}", validation::lower_camel(rule_list_name(job.rules[i].kind)), index_in_list(job, i) + 1);
}

}  // namespace

std::string rule_field(const JobConfig& job, size_t i) {
  return fmt::format("{}[{}]", rule_list_name(job.rules.at(i).kind), index_in_list(job, i));
}

Result<RuleConfig> rule_from_parameters(std::string configuration_name, const std::map<std::string, std::string>& params,
                                        const std::string& default_trial, std::string_view field, RuleKind kind) {
  RuleConfig rule;
  rule.kind = kind;
  rule.configuration_name = std::move(configuration_name);
  rule.base_trial = default_trial;
  std::map<int64_t, std::string> numbered_others;
  for (const auto& [key, value] : params) {
    const std::string where = fmt::format("{}.{}", field, key);
    if (key.empty() || key.size() > 256) return fail(invalid(where, "keys must be 1 to 256 characters"));
    if (value.size() > 256) return fail(invalid(where, "values must be at most 256 characters"));
    if (key == "rule_to_invoke") {
      rule.rule_to_invoke = value;
    } else if (key == "base_trial") {
      rule.base_trial = value;
    } else if (key == "start_step" || key == "end_step") {
      auto v = parse_int(value);
      if (!v || *v < 0) return fail(invalid(where, fmt::format("'{}' is not a non-negative integer", value)));
      if (key == "start_step") rule.start_step = *v;
      else rule.end_step = *v;
    } else if (key == "other_trials") {
      std::string_view rest = value;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string item(rest.substr(0, comma));
        if (!item.empty()) rule.other_trials.push_back(item);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else if (key.starts_with("other_trial_")) {
      auto n = parse_int(std::string_view(key).substr(12));
      if (!n || *n < 0) return fail(invalid(where, "other trials are numbered other_trial_0, other_trial_1, ..."));
      numbered_others[*n] = value;
    } else if (key == "action_json") {
      rule.action_json = value;
    } else if (key == "source_s3_uri") {
      rule.source = value;
    } else if (key == VIGIL_PROFILE_PARAM) {
      if (!plugin_host::find_profile(value))
        return fail(invalid(where, fmt::format("unknown profile '{}' (profiles: {})", value, plugin_host::profile_names())));
      rule.profile = value;
    } else {
      rule.parameters[key] = value;
    }
  }
  for (auto& [n, path] : numbered_others) rule.other_trials.push_back(path);
  if (rule.rule_to_invoke.empty()) return fail(invalid(fmt::format("{}.rule_to_invoke", field), "is required"));
  if (rule.end_step && *rule.end_step <= rule.start_step)
    return fail(invalid(fmt::format("{}.end_step", field),
                        fmt::format("must be greater than start_step ({} <= {})", *rule.end_step, rule.start_step)));
  return rule;
}

Result<JobConfig> parse_job_json(std::string_view text, const std::string& default_trial,
                                 const std::string& default_profiler_trial) {
  if (format::json_nesting_exceeds(text))
    return fail(Error::invalid_argument(fmt::format("the job file nests deeper than {} levels", format::kMaxJsonDepth)));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    return fail(Error::invalid_argument(fmt::format("the job file is not valid JSON: {}", e.what())));
  }
  // The lists, with their kind and default trial: a bare list (or any other value that is no object)
  // stands for DebugRuleConfigurations.
  struct RuleList {
    const nlohmann::json* list;
    RuleKind kind;
    const std::string* default_trial;
  };
  std::vector<RuleList> lists;
  if (doc.is_object()) {
    if (auto r = check_debugger_supported(doc); !r) return fail(r.error());
    const auto debug = doc.find("DebugRuleConfigurations"), profiler = doc.find("ProfilerRuleConfigurations");
    if (debug == doc.end() && profiler == doc.end())
      return fail(invalid("DebugRuleConfigurations", "is missing (and so is ProfilerRuleConfigurations)"));
    if (debug != doc.end()) lists.push_back({&*debug, RuleKind::Debug, &default_trial});
    if (profiler != doc.end()) lists.push_back({&*profiler, RuleKind::Profiler, &default_profiler_trial});
  } else {
    lists.push_back({&doc, RuleKind::Debug, &default_trial});
  }
  // The members of every rule configuration, as CreateTrainingJob checks them, before any is read.
  validation::Validator v;
  for (const auto& [list, kind, trial] : lists) {
    validation::check_rule_configurations(v, *list, rule_list_name(kind), /*image_required=*/false);
    check_known_members(v, *list, rule_list_name(kind));
  }
  if (!v.violations.empty()) return fail(validation::validation_errors(v.violations));
  JobConfig job;
  for (const auto& [list, kind, trial] : lists)
    if (auto r = read_rule_list(*list, kind, *trial, job); !r) return fail(r.error());
  if (auto r = validate_job(job); !r) return fail(r.error());
  return job;
}

Result<void> validate_job(const JobConfig& job) {
  if (job.rules.empty()) return fail(invalid("DebugRuleConfigurations", "no rule to run"));
  for (RuleKind kind : {RuleKind::Debug, RuleKind::Profiler}) {
    const auto n = std::count_if(job.rules.begin(), job.rules.end(), [&](const RuleConfig& r) { return r.kind == kind; });
    if (size_t(n) > kMaxRules)
      return fail(invalid(rule_list_name(kind), fmt::format("{} rules given; SageMaker allows at most {}", n, kMaxRules)));
  }
  // The names, as CreateTrainingJob checks them (those of a job file were checked as it was read;
  // these checks are for the command line's --rule).
  validation::Validator v;
  std::map<std::string, std::string> seen;  // name -> where
  for (size_t i = 0; i < job.rules.size(); ++i) {
    const auto& name = job.rules[i].configuration_name;
    const std::string where = service_path(job, i);
    v.string(nlohmann::json(name), where + ".member.ruleConfigurationName", validation::kRuleConfigurationName);
    if (!v.violations.empty()) return fail(validation::validation_errors(v.violations));
    if (auto [it, fresh] = seen.emplace(name, where); !fresh)
      return fail(validation::rule_name_used_twice(name, it->second, where));
  }
  for (size_t i = 0; i < job.rules.size(); ++i) {
    const auto& r = job.rules[i];
    const std::string field = rule_field(job, i);
    if (r.base_trial.empty())
      return fail(invalid(field, r.kind == RuleKind::Profiler
                                     ? "no profiler data folder: give --profiler-trial PATH or a base_trial rule parameter"
                                     : "no trial: give --trial PATH or a base_trial rule parameter"));
    if (r.kind == RuleKind::Profiler && !r.other_trials.empty())
      return fail(invalid(field, "a profiler rule reads one profiler folder: other_trials are for debug rules"));
  }
  return {};
}

Result<void> apply_default_profile(JobConfig& job, const std::string& profile) {
  if (!plugin_host::find_profile(profile))
    return fail(invalid("--profile", fmt::format("unknown profile '{}' (profiles: {})", profile, plugin_host::profile_names())));
  for (auto& rule : job.rules)
    if (!rule.profile) rule.profile = profile;
  return {};
}

void anchor_rule_files(JobConfig& job, const std::filesystem::path& job_file) {
  const std::filesystem::path folder = std::filesystem::absolute(job_file).parent_path();
  for (auto& rule : job.rules) {
    if (!rule.source) continue;
    std::string_view path = *rule.source;
    if (path.starts_with("file://")) path.remove_prefix(7);
    if (path.empty() || path.starts_with('/') || rule.source->starts_with("s3://")) continue;
    rule.source = (folder / std::string(path)).lexically_normal().string();
  }
}

}  // namespace vigil::evaluate
