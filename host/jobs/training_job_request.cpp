#include "jobs/training_job_request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "evaluate/job_config.h"
#include "evaluate/request_validation.h"
#include "format/json_limits.h"
#include "format/sagemaker_container.h"
#include "jobs/job_outputs.h"

namespace vigil::jobs {

namespace {

using namespace evaluate::validation;

// ---- enum sets ----------------------------------------------------------------------------------

constexpr std::string_view kTrainingInputModes[] = {"Pipe", "File", "FastFile"};
constexpr std::string_view kS3DataTypes[] = {"ManifestFile", "S3Prefix", "AugmentedManifestFile", "Converse"};
constexpr std::string_view kS3DataDistributions[] = {"FullyReplicated", "ShardedByS3Key"};
constexpr std::string_view kCompressionTypes[] = {"None", "Gzip"};
constexpr std::string_view kRecordWrappers[] = {"None", "RecordIO"};
constexpr std::string_view kOutputCompressionTypes[] = {"GZIP", "NONE"};

// ---- the request's members ----------------------------------------------------------------------

void check_algorithm_specification(Validator& v, const json& request) {
  const json* spec = v.object_member(request, "AlgorithmSpecification", "");
  if (!spec) return;
  const std::string path = "algorithmSpecification";
  v.string_member(*spec, "TrainingImage", path, kAlgorithmImage);
  v.enum_member(*spec, "TrainingInputMode", path, kTrainingInputModes, /*required=*/true);
}

void check_input_data_config(Validator& v, const json& request) {
  const json* channels = v.list_member(request, "InputDataConfig", "", 1, kMaxChannels);
  if (!channels) return;
  for (size_t i = 0; i < channels->size(); ++i) {
    const std::string path = fmt::format("inputDataConfig.{}.member", i + 1);
    const json& channel = (*channels)[i];
    if (!channel.is_object()) {
      v.violation(&channel, path, "Member must be an object");
      continue;
    }
    v.string_member(channel, "ChannelName", path, kChannelName, /*required=*/true);
    if (const json* source = v.object_member(channel, "DataSource", path, /*required=*/true)) {
      const std::string source_path = path + ".dataSource";
      if (const json* s3 = v.object_member(*source, "S3DataSource", source_path)) {
        const std::string s3_path = source_path + ".s3DataSource";
        v.enum_member(*s3, "S3DataType", s3_path, kS3DataTypes, /*required=*/true);
        v.string_member(*s3, "S3Uri", s3_path, kS3Uri, /*required=*/true);
        v.enum_member(*s3, "S3DataDistributionType", s3_path, kS3DataDistributions);
      }
    }
    v.string_member(channel, "ContentType", path, kContentType);
    v.enum_member(channel, "CompressionType", path, kCompressionTypes);
    v.enum_member(channel, "RecordWrapperType", path, kRecordWrappers);
    v.enum_member(channel, "InputMode", path, kTrainingInputModes);
  }
}

void check_output_data_config(Validator& v, const json& request) {
  const json* output = v.object_member(request, "OutputDataConfig", "", /*required=*/true);
  if (!output) return;
  v.string_member(*output, "KmsKeyId", "outputDataConfig", kKmsKeyId);
  v.string_member(*output, "S3OutputPath", "outputDataConfig", kOutputUri, /*required=*/true);
  v.enum_member(*output, "CompressionType", "outputDataConfig", kOutputCompressionTypes);
}

void check_resource_config(Validator& v, const json& request) {
  const json* resources = v.object_member(request, "ResourceConfig", "");
  if (!resources) return;
  const std::string path = "resourceConfig";
  if (const json* type = v.member(*resources, "InstanceType", path); type && !type->is_string())
    v.violation(type, child_path(path, "InstanceType"), "Member must be a string");
  v.integer_member(*resources, "InstanceCount", path, 1);  // the model says min 0; a job of 0 hosts runs nothing
  v.integer_member(*resources, "VolumeSizeInGB", path, 0);
  v.string_member(*resources, "VolumeKmsKeyId", path, kKmsKeyId);
  v.integer_member(*resources, "KeepAlivePeriodInSeconds", path, 0, 21600);
}

void check_stopping_condition(Validator& v, const json& request) {
  const json* stopping = v.object_member(request, "StoppingCondition", "");
  if (!stopping) return;
  v.integer_member(*stopping, "MaxRuntimeInSeconds", "stoppingCondition", 1);
  v.integer_member(*stopping, "MaxWaitTimeInSeconds", "stoppingCondition", 1);
  v.integer_member(*stopping, "MaxPendingTimeInSeconds", "stoppingCondition", 7200, 2419200);
}

void check_checkpoint_config(Validator& v, const json& request) {
  const json* checkpoints = v.object_member(request, "CheckpointConfig", "");
  if (!checkpoints) return;
  v.string_member(*checkpoints, "S3Uri", "checkpointConfig", kS3Uri, /*required=*/true);
  v.string_member(*checkpoints, "LocalPath", "checkpointConfig", kDirectoryPath);
}

void check_debug_hook_config(Validator& v, const json& request) {
  const json* hook = v.object_member(request, "DebugHookConfig", "");
  if (!hook) return;
  const std::string path = "debugHookConfig";
  v.string_member(*hook, "LocalPath", path, kDirectoryPath);
  v.string_member(*hook, "S3OutputPath", path, kOutputUri, /*required=*/true);
  v.map_member(*hook, "HookParameters", path, kHookParameters);
  const json* collections = v.list_member(*hook, "CollectionConfigurations", path, 0, kMaxCollections);
  if (!collections) return;
  for (size_t i = 0; i < collections->size(); ++i) {
    const std::string entry_path = fmt::format("{}.collectionConfigurations.{}.member", path, i + 1);
    const json& entry = (*collections)[i];
    if (!entry.is_object()) {
      v.violation(&entry, entry_path, "Member must be an object");
      continue;
    }
    // Optional in the model; required here because smdebug (and Vigil's hook) refuse the file without it.
    v.string_member(entry, "CollectionName", entry_path, kCollectionName, /*required=*/true);
    v.map_member(entry, "CollectionParameters", entry_path, kHookParameters);
  }
}

void check_rule_list(Validator& v, const json& request, std::string_view list_name) {
  if (const json* rules = v.member(request, list_name, ""))
    check_rule_configurations(v, *rules, list_name, /*image_required=*/true);
}

void check_tensorboard_output_config(Validator& v, const json& request) {
  const json* tensorboard = v.object_member(request, "TensorBoardOutputConfig", "");
  if (!tensorboard) return;
  v.string_member(*tensorboard, "LocalPath", "tensorBoardOutputConfig", kDirectoryPath);
  v.string_member(*tensorboard, "S3OutputPath", "tensorBoardOutputConfig", kOutputUri, /*required=*/true);
}

void check_profiler_config(Validator& v, const json& request) {
  const json* profiler = v.object_member(request, "ProfilerConfig", "");
  if (!profiler) return;
  const std::string path = "profilerConfig";
  v.string_member(*profiler, "S3OutputPath", path, kOutputUri);
  const auto& intervals = format::sagemaker::kProfilingIntervalsMs;
  if (auto interval = v.integer_member(*profiler, "ProfilingIntervalInMilliseconds", path,
                                       std::numeric_limits<int64_t>::min(), std::nullopt, /*is_long=*/true);
      interval && std::find(intervals.begin(), intervals.end(), *interval) == intervals.end())
    v.violation(v.member(*profiler, "ProfilingIntervalInMilliseconds", path),
                child_path(path, "ProfilingIntervalInMilliseconds"),
                fmt::format("Member must satisfy enum value set: [{}]", fmt::join(intervals, ", ")));
  v.map_member(*profiler, "ProfilingParameters", path, kHookParameters);
  v.boolean_member(*profiler, "DisableProfiler", path);
}

void check_remote_debug_config(Validator& v, const json& request) {
  const json* remote = v.object_member(request, "RemoteDebugConfig", "");
  if (!remote) return;
  v.boolean_member(*remote, "EnableRemoteDebug", "remoteDebugConfig");
}

// Every model-level violation, in the order of CreateTrainingJob's members.
std::vector<std::string> model_violations(const json& request) {
  Validator v;
  v.string_member(request, "TrainingJobName", "", kTrainingJobName, /*required=*/true);
  v.map_member(request, "HyperParameters", "", kHyperParameters);
  check_algorithm_specification(v, request);
  v.string_member(request, "RoleArn", "", kRoleArn, /*required=*/true);
  check_input_data_config(v, request);
  check_output_data_config(v, request);
  check_resource_config(v, request);
  check_stopping_condition(v, request);
  for (const char* flag : {"EnableNetworkIsolation", "EnableInterContainerTrafficEncryption", "EnableManagedSpotTraining"})
    v.boolean_member(request, flag, "");
  check_checkpoint_config(v, request);
  check_debug_hook_config(v, request);
  check_rule_list(v, request, "DebugRuleConfigurations");
  check_tensorboard_output_config(v, request);
  check_profiler_config(v, request);
  check_rule_list(v, request, "ProfilerRuleConfigurations");
  v.map_member(request, "Environment", "", kEnvironment);
  check_remote_debug_config(v, request);
  return std::move(v.violations);
}

// The names of both rule lists share one namespace.
Result<void> check_unique_rule_names(const json& request) {
  std::map<std::string, std::string> seen;  // name -> where
  for (const char* list : {"DebugRuleConfigurations", "ProfilerRuleConfigurations"}) {
    auto rules = request.find(list);
    if (rules == request.end() || !rules->is_array()) continue;
    for (size_t i = 0; i < rules->size(); ++i) {
      const std::string& name = (*rules)[i].at("RuleConfigurationName").get_ref<const std::string&>();
      const std::string where = fmt::format("{}.{}", lower_camel(list), i + 1);
      if (auto [it, fresh] = seen.emplace(name, where); !fresh)
        return fail(rule_name_used_twice(name, it->second, where));
    }
  }
  return {};
}

// Where the job's outputs go, beyond the pattern (a local check, in the format of §9.1): each
// S3OutputPath must be a location vigil train can write (an s3:// location with a valid bucket name,
// or a file:// folder), and each rule's name must name its output folder rule-output/<name>/.
Result<void> check_output_locations(const json& request) {
  Validator v;
  auto check = [&](const json& object, const std::string& path) {
    auto it = object.find("S3OutputPath");
    if (it == object.end() || !it->is_string()) return;
    if (auto problem = output_location_problem(it->get_ref<const std::string&>()))
      v.violation(&*it, child_path(path, "S3OutputPath"), *problem);
  };
  for (const char* member : {"OutputDataConfig", "DebugHookConfig", "TensorBoardOutputConfig", "ProfilerConfig"})
    if (auto it = request.find(member); it != request.end() && it->is_object()) check(*it, lower_camel(member));
  for (const char* list : {"DebugRuleConfigurations", "ProfilerRuleConfigurations"}) {
    auto rules = request.find(list);
    if (rules == request.end() || !rules->is_array()) continue;
    for (size_t i = 0; i < rules->size(); ++i) {
      const std::string path = fmt::format("{}.{}.member", lower_camel(list), i + 1);
      check((*rules)[i], path);
      const json& name = (*rules)[i].at("RuleConfigurationName");
      if (auto problem = rule_output_name_problem(name.get_ref<const std::string&>()))
        v.violation(&name, child_path(path, "RuleConfigurationName"),
                    "Member must name one folder (rule-output/<RuleConfigurationName>/): not '.' or '..', no '/'");
    }
  }
  if (v.violations.empty()) return {};
  return fail(validation_errors(v.violations));
}

std::map<std::string, std::string> string_map(const json& request, std::string_view name) {
  std::map<std::string, std::string> out;
  if (auto it = request.find(name); it != request.end() && it->is_object())
    for (const auto& [k, v] : it->items()) out[k] = v.get<std::string>();
  return out;
}

bool present(const json& request, std::string_view name) {
  auto it = request.find(name);
  return it != request.end() && !it->is_null();
}

size_t list_size(const json& request, std::string_view name) {
  auto it = request.find(name);
  return it != request.end() && it->is_array() ? it->size() : 0;
}

// The whole parse; parse_training_job_request only guards it.
Result<TrainingJobRequest> parse_request(std::string_view json_text) {
  if (format::json_nesting_exceeds(json_text))
    return fail(validation_exception(fmt::format("the request nests deeper than {} levels", format::kMaxJsonDepth)));
  TrainingJobRequest request;
  try {
    request.document = json::parse(json_text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    return fail(validation_exception(fmt::format("the request is not valid JSON: {}", e.what())));
  }
  const json& doc = request.document;
  if (!doc.is_object()) return fail(validation_exception("the request must be a JSON object (CreateTrainingJob's members)"));

  // Validation reads the document only through find/is_*/get of checked types: nothing below throws
  // for a document that passed it.
  if (auto violations = model_violations(doc); !violations.empty()) return fail(validation_errors(violations));
  if (auto r = check_unique_rule_names(doc); !r) return fail(r.error());
  if (auto r = check_output_locations(doc); !r) return fail(r.error());
  // What needs smdebug's hook, or the evaluator (which applies the same refusals to any job file
  // with rules): a profiler without rules, or remote debugging, runs in any setup.
  const bool uses_debugger = present(doc, "DebugHookConfig") || present(doc, "TensorBoardOutputConfig") ||
                             list_size(doc, "DebugRuleConfigurations") > 0 ||
                             list_size(doc, "ProfilerRuleConfigurations") > 0;
  if (uses_debugger)
    if (auto r = evaluate::check_debugger_supported(doc); !r) return fail(validation_exception(r.error().message));

  request.name = doc.at("TrainingJobName").get<std::string>();
  request.hyperparameters = string_map(doc, "HyperParameters");
  request.environment = string_map(doc, "Environment");
  if (auto rc = doc.find("ResourceConfig"); rc != doc.end() && rc->is_object())
    if (auto n = rc->find("InstanceCount"); n != rc->end() && !n->is_null()) request.instance_count = n->get<int>();
  if (auto sc = doc.find("StoppingCondition"); sc != doc.end() && sc->is_object())
    if (auto n = sc->find("MaxRuntimeInSeconds"); n != sc->end() && !n->is_null())
      request.max_runtime_seconds = n->get<int64_t>();
  if (auto b = doc.find("EnableNetworkIsolation"); b != doc.end() && b->is_boolean()) request.network_isolation = b->get<bool>();
  if (auto rd = doc.find("RemoteDebugConfig"); rd != doc.end() && rd->is_object())
    if (auto b = rd->find("EnableRemoteDebug"); b != rd->end() && b->is_boolean()) request.remote_debug = b->get<bool>();
  request.debug_hook = present(doc, "DebugHookConfig");
  request.tensorboard = present(doc, "TensorBoardOutputConfig");
  if (auto pc = doc.find("ProfilerConfig"); pc != doc.end() && pc->is_object()) {
    auto disable = pc->find("DisableProfiler");
    request.profiler = !(disable != pc->end() && disable->is_boolean() && disable->get<bool>());
  }
  request.checkpointing = present(doc, "CheckpointConfig");
  request.debug_rules = list_size(doc, "DebugRuleConfigurations");
  request.profiler_rules = list_size(doc, "ProfilerRuleConfigurations");
  return request;
}

}  // namespace

Result<TrainingJobRequest> parse_training_job_request(std::string_view json_text) {
  try {
    return parse_request(json_text);
  } catch (const json::exception& e) {  // not expected: parse_request reads only what it has checked
    return fail(Error::internal(fmt::format("reading the CreateTrainingJob request: {}", e.what())));
  }
}

}  // namespace vigil::jobs
