// A SageMaker CreateTrainingJob request (sagemaker-api §2.9) as `vigil train JOB.json` receives it,
// validated as SageMaker validates it before anything runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace vigil::jobs {

struct TrainingJobRequest {
  nlohmann::json document;  // the request as sent (DescribeTrainingJob echoes it)
  std::string name;         // TrainingJobName
  int instance_count = 1;   // ResourceConfig.InstanceCount
  std::map<std::string, std::string> hyperparameters;  // HyperParameters: values as strings
  std::map<std::string, std::string> environment;      // Environment
  std::optional<int64_t> max_runtime_seconds;          // StoppingCondition.MaxRuntimeInSeconds
  bool network_isolation = false;  // EnableNetworkIsolation
  bool remote_debug = false;       // RemoteDebugConfig.EnableRemoteDebug
  bool debug_hook = false;         // DebugHookConfig present
  bool tensorboard = false;        // TensorBoardOutputConfig present
  bool profiler = false;  // ProfilerConfig present and not DisableProfiler (ProfilingStatus Enabled)
  bool checkpointing = false;  // CheckpointConfig present
  size_t debug_rules = 0, profiler_rules = 0;  // entries of DebugRuleConfigurations, ProfilerRuleConfigurations
};

// The number of ProcessingInstanceType values (InstanceType of rule configurations; sagemaker-api §1).
inline constexpr size_t kProcessingInstanceTypeCount = 133;

// Parses and validates `json_text`. Every error is InvalidArgument with a message that starts with
// "ValidationException: ":
// * text that is not JSON, or not an object: "ValidationException: the request is not valid JSON: ..."
//   / "... must be a JSON object";
// * model-level violations (sagemaker-api §1, §2, §9.2 and the service model's shapes of the other
//   members), all of them in one message in the AWS format of §9.1: "N validation error(s)
//   detected: " then "; "-joined "Value '<v>' at '<lowerCamel path, 1-based list indices>' failed to
//   satisfy constraint: <constraint>" ("Value null at ..." for a missing required member). One
//   item per failed constraint, in the order of the request's members. Local spellings (documented
//   here, not AWS's): a wrong JSON type ("Member must be a string", "... an integer", "... a
//   boolean", "... an object", "... a list", "... a map"; map entries are named
//   '<map path>.<key>'), a missing CollectionName (smdebug refuses the hook file without one),
//   ResourceConfig.InstanceCount < 1 (the model allows 0, which runs no host), a
//   ProfilingIntervalInMilliseconds outside format::sagemaker::kProfilingIntervalsMs ("Member must satisfy enum value
//   set: [...]": the hosts' profiler refuses the file otherwise); values are printed as text,
//   numbers in decimal, maps as Java's {k=v, ...}, lists and objects as compact JSON;
// * then, for a request without such violations, a RuleConfigurationName used twice over the two
//   rule lists (local wording); output paths vigil train cannot write, in the format of §9.1 with
//   local constraint texts (jobs/job_outputs.h: every S3OutputPath must be an s3:// location with a
//   valid bucket name or a file:// folder — file:// is accepted beside the model's pattern, as
//   SageMaker local mode takes it —, https:// is refused, and a RuleConfigurationName must name one
//   folder); and, for a request with DebugHookConfig, TensorBoardOutputConfig
//   (what smdebug's hook serves) or rules (what the evaluator runs; it refuses the same setups),
//   Debugger's unsupported setups with SageMaker's wording (evaluate::check_debugger_supported, e.g. "ValidationException: SMDebug Does
//   Not Currently Support Distributed Training Jobs With Checkpointing Enabled").
// Members the model does not name are kept in `document` and not judged; TrainingInstanceType is
// not checked against an enum (the spec has no list for it; locally it only labels the hosts).
[[nodiscard]] Result<TrainingJobRequest> parse_training_job_request(std::string_view json_text);

}  // namespace vigil::jobs
