// The evaluation job: which rules run on which trials, in SageMaker's JSON shapes
// (a DebugRuleConfigurations list whose RuleParameters values are strings), or built from
// `--rule NAME --param k=v` on the command line. Validated before anything runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/error.h"

namespace vigil::evaluate {

inline constexpr size_t kMaxRules = 20;  // SageMaker's limit on each of the two lists below

// Which list of the job a rule comes from: DebugRuleConfigurations rules walk a tensor trial's steps;
// ProfilerRuleConfigurations rules read the job's profiler folder by time window (the extension
// vigil.profiler/1) and report ProfilerRuleEvaluationStatuses.
enum class RuleKind { Debug, Profiler };
std::string_view rule_list_name(RuleKind kind);  // "DebugRuleConfigurations", "ProfilerRuleConfigurations"

struct RuleConfig {
  std::string configuration_name;   // RuleConfigurationName
  std::string rule_to_invoke;       // the rule's name (or plugin id)
  std::map<std::string, std::string> parameters;  // the rule's own parameters (reserved keys removed)
  std::string base_trial;           // RuleParameters base_trial, else the job's --trial
  std::vector<std::string> other_trials;  // other_trial_0, other_trial_1, ... or other_trials (comma-separated)
  int64_t start_step = 0;
  std::optional<int64_t> end_step;  // exclusive
  std::optional<std::string> action_json;
  std::optional<std::string> source;  // source_s3_uri (custom rule files)
  std::optional<std::string> profile;  // vigil_profile (plugin_host/profiles.h); nullopt: the job's default
  RuleKind kind = RuleKind::Debug;  // for Profiler, base_trial is the profiler folder
};

struct JobConfig {
  std::vector<RuleConfig> rules;
};

// Parses a job file: either an object with DebugRuleConfigurations and/or ProfilerRuleConfigurations
// plus optional CreateTrainingJob members that decide whether Debugger supports the job
// (CheckpointConfig, ResourceConfig, HyperParameters, Distribution), or a bare list of debug rule
// configurations. `default_trial` fills debug rules without a base_trial, `default_profiler_trial`
// profiler rules. Errors are InvalidArgument: the rule configurations' members are checked as
// CreateTrainingJob checks them, reported as its ValidationException (evaluate/request_validation.h);
// what the evaluator needs beyond them names the failing field.
[[nodiscard]] Result<JobConfig> parse_job_json(std::string_view text, const std::string& default_trial,
                                               const std::string& default_profiler_trial = {});

// Names the job's relative rule files (source_s3_uri) from the job file's folder, as a configuration
// file's paths are read, never from the working directory: "rules.py" beside the job file.
void anchor_rule_files(JobConfig& job, const std::filesystem::path& job_file);

// Debugger's unsupported setups (sagemaker-api §9.3), read from the members of a CreateTrainingJob
// request (or of a job file holding them): HyperParameters, Distribution, ResourceConfig.InstanceCount,
// CheckpointConfig. NotSupported with SageMaker's wording ("SMDebug Does Not Currently Support
// Distributed Training Jobs With Checkpointing Enabled", parameter server, model parallel); the one
// table of these facts, used by parse_job_json and by jobs::parse_training_job_request.
[[nodiscard]] Result<void> check_debugger_supported(const nlohmann::json& create_training_job);

// Checks what the JSON parser and the command line share: names (unique over both lists), counts,
// step ranges, trials.
[[nodiscard]] Result<void> validate_job(const JobConfig& job);

// Gives every rule that names no profile of its own `profile` (`vigil evaluate --profile`); an
// unknown name is InvalidArgument naming the profiles.
[[nodiscard]] Result<void> apply_default_profile(JobConfig& job, const std::string& profile);

// Splits reserved RuleParameters keys (rule_to_invoke, base_trial, other_trial_N, other_trials,
// start_step, end_step, action_json, source_s3_uri, and Vigil's vigil_profile) from the rule's own
// parameters.
[[nodiscard]] Result<RuleConfig> rule_from_parameters(std::string configuration_name, const std::map<std::string, std::string>& params,
                                        const std::string& default_trial, std::string_view field,
                                        RuleKind kind = RuleKind::Debug);

// "DebugRuleConfigurations[2]": where job.rules[i] is in its list, for error messages.
std::string rule_field(const JobConfig& job, size_t i);

}  // namespace vigil::evaluate
