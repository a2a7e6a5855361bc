// parse_training_job_request: SageMaker's CreateTrainingJob validation (sagemaker-api §1, §2, §9),
// the exact ValidationException texts, and Debugger's refusals through evaluate::check_debugger_supported.
#include "jobs/training_job_request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "request_examples.h"
#include "test_support.h"

namespace vigil::jobs {
namespace {

using nlohmann::json;

// The example request of sagemaker-api §10, read from the spec itself.
std::string example_request() {
  const std::string spec = test::read_file(test::shared_dir() / "spec" / "sagemaker-api.md");
  const size_t section = spec.find("## 10. Example CreateTrainingJob request");
  EXPECT_NE(section, std::string::npos);
  const size_t start = spec.find("```json\n", section) + 8;
  const size_t end = spec.find("```", start);
  return spec.substr(start, end - start);
}

using test_requests::minimal;
using test_requests::rule;

// The error message parse_training_job_request gives for `request` ("" when it accepts it).
std::string refusal(const json& request) {
  auto parsed = parse_training_job_request(request.dump());
  if (parsed) return "";
  EXPECT_EQ(parsed.error().code, ErrorCode::InvalidArgument);
  return parsed.error().message;
}

std::string one_error(std::string_view item) { return fmt::format("ValidationException: 1 validation error detected: {}", item); }

TEST(TrainingJobRequest, TheSpecExampleValidates) {
  const std::string text = example_request();
  auto parsed = parse_training_job_request(text);
  ASSERT_VIGIL_OK(parsed);
  EXPECT_EQ(parsed->name, "resnet-dbg-2024-06-01-12-00-00-000");
  EXPECT_EQ(parsed->instance_count, 1);
  EXPECT_EQ(parsed->max_runtime_seconds, 7200);
  EXPECT_TRUE(parsed->debug_hook);
  EXPECT_TRUE(parsed->tensorboard);
  EXPECT_TRUE(parsed->profiler);
  EXPECT_FALSE(parsed->checkpointing);
  EXPECT_FALSE(parsed->remote_debug);
  EXPECT_FALSE(parsed->network_isolation);
  EXPECT_EQ(parsed->debug_rules, 3u);
  EXPECT_EQ(parsed->profiler_rules, 1u);
  EXPECT_TRUE(parsed->hyperparameters.empty());
  EXPECT_EQ(parsed->document, json::parse(text));
}

TEST(TrainingJobRequest, MinimalRequestAndItsDefaults) {
  json request = minimal();
  request["HyperParameters"] = {{"epochs", "6"}};
  request["Environment"] = {{"USE_SMDEBUG", "0"}};
  request["EnableNetworkIsolation"] = true;
  request["RemoteDebugConfig"] = {{"EnableRemoteDebug", true}};
  request["ProfilerConfig"] = {{"DisableProfiler", true}};
  request["CheckpointConfig"] = {{"S3Uri", "s3://bucket/ckpt"}};
  auto parsed = parse_training_job_request(request.dump());
  ASSERT_VIGIL_OK(parsed);
  EXPECT_EQ(parsed->instance_count, 1);
  EXPECT_FALSE(parsed->max_runtime_seconds.has_value());
  EXPECT_EQ(parsed->hyperparameters, (std::map<std::string, std::string>{{"epochs", "6"}}));
  EXPECT_EQ(parsed->environment, (std::map<std::string, std::string>{{"USE_SMDEBUG", "0"}}));
  EXPECT_TRUE(parsed->network_isolation);
  EXPECT_TRUE(parsed->remote_debug);
  EXPECT_FALSE(parsed->profiler);  // DisableProfiler: ProfilingStatus Disabled
  EXPECT_TRUE(parsed->checkpointing);
  EXPECT_FALSE(parsed->debug_hook);
  EXPECT_EQ(parsed->debug_rules, 0u);
}

TEST(TrainingJobRequest, MissingRequiredMembers) {
  EXPECT_EQ(refusal(json::object()),
            "ValidationException: 3 validation errors detected: "
            "Value null at 'trainingJobName' failed to satisfy constraint: Member must not be null; "
            "Value null at 'roleArn' failed to satisfy constraint: Member must not be null; "
            "Value null at 'outputDataConfig' failed to satisfy constraint: Member must not be null");
  json request = minimal();
  request["OutputDataConfig"] = json::object();
  EXPECT_EQ(refusal(request),
            one_error("Value null at 'outputDataConfig.s3OutputPath' failed to satisfy constraint: Member must not be null"));
  request = minimal();
  request["RoleArn"] = nullptr;  // null reads as absent
  EXPECT_EQ(refusal(request), one_error("Value null at 'roleArn' failed to satisfy constraint: Member must not be null"));
  request = minimal();
  request["CheckpointConfig"] = {{"LocalPath", "/opt/ml/checkpoints"}};
  EXPECT_EQ(refusal(request),
            one_error("Value null at 'checkpointConfig.s3Uri' failed to satisfy constraint: Member must not be null"));
  request = minimal();
  request["DebugRuleConfigurations"] = {rule("a"), {{"RuleConfigurationName", "b"}}};
  request["DebugHookConfig"] = {{"S3OutputPath", "s3://b/p"}, {"CollectionConfigurations", {{{"CollectionParameters", json::object()}}}}};
  EXPECT_EQ(refusal(request),
            "ValidationException: 2 validation errors detected: "
            "Value null at 'debugHookConfig.collectionConfigurations.1.member.collectionName' failed to satisfy "
            "constraint: Member must not be null; "
            "Value null at 'debugRuleConfigurations.2.member.ruleEvaluatorImage' failed to satisfy constraint: Member "
            "must not be null");
}

TEST(TrainingJobRequest, TrainingJobNamePattern) {
  const std::string pattern = "Member must satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}";
  for (const char* good : {"a", "a-b", "a--b", "Resnet-1-2", "0"}) {
    json request = minimal();
    request["TrainingJobName"] = good;
    EXPECT_EQ(refusal(request), "") << good;
  }
  for (const char* bad : {"bad_name", "-a", "a-", "a.b", "a b"}) {
    json request = minimal();
    request["TrainingJobName"] = bad;
    EXPECT_EQ(refusal(request), one_error(fmt::format("Value '{}' at 'trainingJobName' failed to satisfy constraint: {}", bad, pattern)));
  }
  json request = minimal();
  request["TrainingJobName"] = std::string(63, 'a');
  EXPECT_EQ(refusal(request), "");
  const std::string long_name(64, 'a');
  request["TrainingJobName"] = long_name;
  EXPECT_EQ(refusal(request),
            fmt::format("ValidationException: 2 validation errors detected: Value '{0}' at 'trainingJobName' failed to "
                        "satisfy constraint: Member must have length less than or equal to 63; Value '{0}' at "
                        "'trainingJobName' failed to satisfy constraint: {1}",
                        long_name, pattern));
  request["TrainingJobName"] = "";
  EXPECT_EQ(refusal(request),
            fmt::format("ValidationException: 2 validation errors detected: Value '' at 'trainingJobName' failed to "
                        "satisfy constraint: Member must have length greater than or equal to 1; Value '' at "
                        "'trainingJobName' failed to satisfy constraint: {}",
                        pattern));
}

// One mutation of the minimal request and the one violation it must give.
struct Case {
  const char* what;
  std::function<void(json&)> mutate;
  std::string violation;
};

TEST(TrainingJobRequest, EachViolationKindInTheServiceFormat) {
  const std::string s3_pattern = "Member must satisfy regular expression pattern: (https|s3)://([^/]+)/?(.*)";
  const std::string long_uri = "s3://b/" + std::string(1018, 'k');  // 1025 characters
  const std::string value_257(257, 'v');
  const std::vector<Case> cases = {
      {"S3Uri pattern", [](json& r) { r["OutputDataConfig"]["S3OutputPath"] = "bucket/jobs"; },
       "Value 'bucket/jobs' at 'outputDataConfig.s3OutputPath' failed to satisfy constraint: " + s3_pattern},
      {"S3Uri without a bucket", [](json& r) { r["DebugHookConfig"] = {{"S3OutputPath", "s3:///x"}}; },
       "Value 's3:///x' at 'debugHookConfig.s3OutputPath' failed to satisfy constraint: " + s3_pattern},
      {"S3Uri with a line break", [](json& r) { r["TensorBoardOutputConfig"] = {{"S3OutputPath", "s3://b/a\nb"}}; },
       "Value 's3://b/a\nb' at 'tensorBoardOutputConfig.s3OutputPath' failed to satisfy constraint: " + s3_pattern},
      {"S3Uri length", [&](json& r) { r["CheckpointConfig"] = {{"S3Uri", long_uri}}; },
       "Value '" + long_uri + "' at 'checkpointConfig.s3Uri' failed to satisfy constraint: Member must have length less than or equal to 1024"},
      {"RoleArn pattern", [](json& r) { r["RoleArn"] = "arn:aws:iam::1111222233:role/SageMaker"; },
       "Value 'arn:aws:iam::1111222233:role/SageMaker' at 'roleArn' failed to satisfy constraint: Member must satisfy "
       "regular expression pattern: arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+"},
      {"enum", [](json& r) { r["AlgorithmSpecification"] = {{"TrainingInputMode", "Stream"}}; },
       "Value 'Stream' at 'algorithmSpecification.trainingInputMode' failed to satisfy constraint: Member must satisfy "
       "enum value set: [Pipe, File, FastFile]"},
      {"InstanceCount", [](json& r) { r["ResourceConfig"] = {{"InstanceType", "ml.g5.xlarge"}, {"InstanceCount", 0}}; },
       "Value '0' at 'resourceConfig.instanceCount' failed to satisfy constraint: Member must have value greater than or equal to 1"},
      {"MaxRuntimeInSeconds", [](json& r) { r["StoppingCondition"] = {{"MaxRuntimeInSeconds", 0}}; },
       "Value '0' at 'stoppingCondition.maxRuntimeInSeconds' failed to satisfy constraint: Member must have value "
       "greater than or equal to 1"},
      {"rule name length", [](json& r) { r["DebugRuleConfigurations"] = {rule("")}; },
       "Value '' at 'debugRuleConfigurations.1.member.ruleConfigurationName' failed to satisfy constraint: Member must "
       "have length greater than or equal to 1"},
      {"rule image length", [](json& r) { r["ProfilerRuleConfigurations"] = {rule("p")}; r["ProfilerRuleConfigurations"][0]["RuleEvaluatorImage"] = std::string(256, 'i'); },
       "Value '" + std::string(256, 'i') + "' at 'profilerRuleConfigurations.1.member.ruleEvaluatorImage' failed to "
       "satisfy constraint: Member must have length less than or equal to 255"},
      {"rule parameter value length", [&](json& r) { r["DebugRuleConfigurations"] = {rule("r")}; r["DebugRuleConfigurations"][0]["RuleParameters"] = {{"threshold", value_257}}; },
       "Value '{threshold=" + value_257 + "}' at 'debugRuleConfigurations.1.member.ruleParameters' failed to satisfy "
       "constraint: Map value must satisfy constraint: [Member must have length less than or equal to 256, Member "
       "must satisfy regular expression pattern: .*]"},
      {"hook parameter key empty", [](json& r) { r["DebugHookConfig"] = {{"S3OutputPath", "s3://b/p"}, {"HookParameters", {{"", "1"}}}}; },
       "Value '{=1}' at 'debugHookConfig.hookParameters' failed to satisfy constraint: Map keys must satisfy "
       "constraint: [Member must have length less than or equal to 256, Member must have length greater than or "
       "equal to 1, Member must satisfy regular expression pattern: .*]"},
      {"hook parameter value with a line break", [](json& r) { r["DebugHookConfig"] = {{"S3OutputPath", "s3://b/p"}, {"HookParameters", {{"include_regex", "a\nb"}}}}; },
       "Value '{include_regex=a\nb}' at 'debugHookConfig.hookParameters' failed to satisfy constraint: Map value "
       "must satisfy constraint: [Member must have length less than or equal to 256, Member must satisfy regular "
       "expression pattern: .*]"},
      {"profiling interval", [](json& r) { r["ProfilerConfig"] = {{"ProfilingIntervalInMilliseconds", 300}}; },
       "Value '300' at 'profilerConfig.profilingIntervalInMilliseconds' failed to satisfy constraint: Member must "
       "satisfy enum value set: [100, 200, 500, 1000, 5000, 60000]"},
      {"environment key", [](json& r) { r["Environment"] = {{"1BAD", "x"}}; },
       "Value '{1BAD=x}' at 'environment' failed to satisfy constraint: Map keys must satisfy constraint: [Member "
       "must have length less than or equal to 512, Member must satisfy regular expression pattern: "
       "[a-zA-Z_][a-zA-Z0-9_]*]"},
      {"environment value", [](json& r) { r["Environment"] = {{"A", std::string(513, 'x')}}; },
       "Value '{A=" + std::string(513, 'x') + "}' at 'environment' failed to satisfy constraint: Map value must "
       "satisfy constraint: [Member must have length less than or equal to 512, Member must satisfy regular "
       "expression pattern: [\\S\\s]*]"},
      {"hyperparameter value", [](json& r) { r["HyperParameters"] = {{"h", std::string(2501, 'x')}}; },
       "Value '{h=" + std::string(2501, 'x') + "}' at 'hyperParameters' failed to satisfy constraint: Map value must "
       "satisfy constraint: [Member must have length less than or equal to 2500, Member must satisfy regular "
       "expression pattern: .*]"},
      {"channel name", [](json& r) { r["InputDataConfig"] = {{{"ChannelName", "tr ain"}, {"DataSource", {{"S3DataSource", {{"S3DataType", "S3Prefix"}, {"S3Uri", "s3://b/d"}}}}}}}; },
       "Value 'tr ain' at 'inputDataConfig.1.member.channelName' failed to satisfy constraint: Member must satisfy "
       "regular expression pattern: [A-Za-z0-9\\.\\-_]+"},
      // Wrong JSON types (local wording, in the same format).
      {"string type", [](json& r) { r["TrainingJobName"] = 5; },
       "Value '5' at 'trainingJobName' failed to satisfy constraint: Member must be a string"},
      {"map value type", [](json& r) { r["HyperParameters"] = {{"epochs", 6}}; },
       "Value '6' at 'hyperParameters.epochs' failed to satisfy constraint: Member must be a string"},
      {"boolean type", [](json& r) { r["EnableNetworkIsolation"] = "yes"; },
       "Value 'yes' at 'enableNetworkIsolation' failed to satisfy constraint: Member must be a boolean"},
      {"integer type", [](json& r) { r["ResourceConfig"] = {{"InstanceCount", "2"}}; },
       "Value '2' at 'resourceConfig.instanceCount' failed to satisfy constraint: Member must be an integer"},
      {"integer beyond 32 bits", [](json& r) { r["StoppingCondition"] = {{"MaxRuntimeInSeconds", 4294967296}}; },
       "Value '4294967296' at 'stoppingCondition.maxRuntimeInSeconds' failed to satisfy constraint: Member must be an integer"},
      {"structure type", [](json& r) { r["DebugHookConfig"] = json::array(); },
       "Value '[]' at 'debugHookConfig' failed to satisfy constraint: Member must be an object"},
      {"list type", [](json& r) { r["DebugRuleConfigurations"] = json::object(); },
       "Value '{}' at 'debugRuleConfigurations' failed to satisfy constraint: Member must be a list"},
  };
  for (const auto& c : cases) {
    json request = minimal();
    c.mutate(request);
    EXPECT_EQ(refusal(request), one_error(c.violation)) << c.what;
  }
}

TEST(TrainingJobRequest, ListAndMapLimits) {
  auto constraint_of = [](const json& request) {
    const std::string message = refusal(request);
    EXPECT_TRUE(message.starts_with("ValidationException: 1 validation error detected: Value '")) << message;
    return message.substr(message.rfind("' at '") + 6);
  };
  json request = minimal();
  for (int i = 0; i < 21; ++i) request["DebugRuleConfigurations"].push_back(rule(fmt::format("r{}", i)));
  EXPECT_EQ(constraint_of(request),
            "debugRuleConfigurations' failed to satisfy constraint: Member must have length less than or equal to 20");
  request.erase("DebugRuleConfigurations");
  request["DebugRuleConfigurations"] = json::array();
  for (int i = 0; i < 20; ++i) request["DebugRuleConfigurations"].push_back(rule(fmt::format("r{}", i)));
  EXPECT_EQ(refusal(request), "");  // 20 is allowed

  request = minimal();
  for (int i = 0; i < 21; ++i) request["ProfilerRuleConfigurations"].push_back(rule(fmt::format("p{}", i)));
  EXPECT_EQ(constraint_of(request),
            "profilerRuleConfigurations' failed to satisfy constraint: Member must have length less than or equal to 20");

  request = minimal();
  request["DebugHookConfig"] = {{"S3OutputPath", "s3://b/p"}, {"CollectionConfigurations", json::array()}};
  for (int i = 0; i < 21; ++i) request["DebugHookConfig"]["CollectionConfigurations"].push_back({{"CollectionName", fmt::format("c{}", i)}});
  EXPECT_EQ(constraint_of(request), "debugHookConfig.collectionConfigurations' failed to satisfy constraint: Member must have length less than or equal to 20");

  auto map_of = [](int n) {
    json m = json::object();
    for (int i = 0; i < n; ++i) m[fmt::format("k{:03}", i)] = "v";
    return m;
  };
  request = minimal();
  request["DebugHookConfig"] = {{"S3OutputPath", "s3://bucket/p"}, {"HookParameters", map_of(21)}};
  EXPECT_EQ(constraint_of(request), "debugHookConfig.hookParameters' failed to satisfy constraint: Member must have length less than or equal to 20");
  request["DebugHookConfig"]["HookParameters"] = map_of(20);
  EXPECT_EQ(refusal(request), "");
  request = minimal();
  request["DebugHookConfig"] = {{"S3OutputPath", "s3://b/p"}, {"CollectionConfigurations", {{{"CollectionName", "c"}, {"CollectionParameters", map_of(21)}}}}};
  EXPECT_EQ(constraint_of(request), "debugHookConfig.collectionConfigurations.1.member.collectionParameters' failed to satisfy constraint: Member must have length less than or equal to 20");
  request = minimal();
  request["ProfilerConfig"] = {{"ProfilingParameters", map_of(21)}};
  EXPECT_EQ(constraint_of(request), "profilerConfig.profilingParameters' failed to satisfy constraint: Member must have length less than or equal to 20");
  request = minimal();
  request["DebugRuleConfigurations"] = {rule("r")};
  request["DebugRuleConfigurations"][0]["RuleParameters"] = map_of(101);
  EXPECT_EQ(constraint_of(request), "debugRuleConfigurations.1.member.ruleParameters' failed to satisfy constraint: Member must have length less than or equal to 100");
  request["DebugRuleConfigurations"][0]["RuleParameters"] = map_of(100);
  EXPECT_EQ(refusal(request), "");
  for (const char* member : {"Environment", "HyperParameters"}) {
    request = minimal();
    request[member] = map_of(101);
    EXPECT_EQ(constraint_of(request), fmt::format("{}' failed to satisfy constraint: Member must have length less than or equal to 100",
                                                  member == std::string("Environment") ? "environment" : "hyperParameters"));
  }
}

// The service counts characters (UTF-16 units), not bytes.
TEST(TrainingJobRequest, LengthsCountCharacters) {
  json request = minimal();
  std::string euros;
  for (int i = 0; i < 2500; ++i) euros += "\xE2\x82\xAC";  // U+20AC, three bytes
  request["HyperParameters"] = {{"currency", euros}};
  EXPECT_EQ(refusal(request), "");
  std::string faces;
  for (int i = 0; i < 1251; ++i) faces += "\xF0\x9F\x98\x80";  // U+1F600: a surrogate pair, 2502 units
  request["HyperParameters"] = {{"mood", faces}};
  EXPECT_NE(refusal(request).find("Map value must satisfy constraint: [Member must have length less than or equal to 2500"),
            std::string::npos);
}

TEST(TrainingJobRequest, RuleInstanceTypesAreTheProcessingInstanceTypes) {
  json request = minimal();
  request["DebugRuleConfigurations"] = {rule("r")};
  for (const char* good : {"ml.t3.medium", "ml.g5.12xlarge", "ml.p5.4xlarge", "ml.g7.48xlarge"}) {
    request["DebugRuleConfigurations"][0]["InstanceType"] = good;
    EXPECT_EQ(refusal(request), "") << good;
  }
  request["DebugRuleConfigurations"][0]["InstanceType"] = "ml.x1.huge";
  const std::string message = refusal(request);
  const std::string prefix = one_error(
      "Value 'ml.x1.huge' at 'debugRuleConfigurations.1.member.instanceType' failed to satisfy constraint: Member must "
      "satisfy enum value set: [ml.t3.medium, ml.t3.large, ");
  ASSERT_TRUE(message.starts_with(prefix)) << message;
  EXPECT_TRUE(message.ends_with(", ml.g7.24xlarge, ml.g7.48xlarge]")) << message;
  const auto values = std::count(message.begin() + message.find('['), message.end(), ',') + 1;
  EXPECT_EQ(size_t(values), kProcessingInstanceTypeCount);
}

TEST(TrainingJobRequest, SeveralViolationsAreCountedAndJoinedInMemberOrder) {
  json request = minimal();
  request["TrainingJobName"] = "bad_name";
  request.erase("RoleArn");
  request["ResourceConfig"] = {{"InstanceCount", 0}};
  request["Environment"] = {{"A-B", "1"}};
  EXPECT_EQ(refusal(request),
            "ValidationException: 4 validation errors detected: "
            "Value 'bad_name' at 'trainingJobName' failed to satisfy constraint: Member must satisfy regular expression "
            "pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; "
            "Value null at 'roleArn' failed to satisfy constraint: Member must not be null; "
            "Value '0' at 'resourceConfig.instanceCount' failed to satisfy constraint: Member must have value greater "
            "than or equal to 1; "
            "Value '{A-B=1}' at 'environment' failed to satisfy constraint: Map keys must satisfy constraint: [Member "
            "must have length less than or equal to 512, Member must satisfy regular expression pattern: "
            "[a-zA-Z_][a-zA-Z0-9_]*]");
}

TEST(TrainingJobRequest, TextThatIsNotARequest) {
  for (const std::string& text : {std::string("{"), std::string("not json"), std::string(R"({"ResourceConfig": {"InstanceCount": 1e400}})")}) {
    auto parsed = parse_training_job_request(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::InvalidArgument);
    EXPECT_TRUE(parsed.error().message.starts_with("ValidationException: the request is not valid JSON")) << parsed.error().message;
  }
  for (const char* text : {"[]", "\"job\"", "5"}) {
    auto parsed = parse_training_job_request(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().message, "ValidationException: the request must be a JSON object (CreateTrainingJob's members)");
  }
  auto deep = parse_training_job_request(R"({"HyperParameters": )" + std::string(100000, '[') + std::string(100000, ']') + "}");
  ASSERT_FALSE(deep.has_value());
  EXPECT_EQ(deep.error().message, "ValidationException: the request nests deeper than 128 levels");
}

TEST(TrainingJobRequest, DistributedTrainingWithCheckpointsRefusesDebugger) {
  json request = minimal();
  request["ResourceConfig"] = {{"InstanceType", "ml.g5.xlarge"}, {"InstanceCount", 2}};
  request["CheckpointConfig"] = {{"S3Uri", "s3://bucket/ckpt"}, {"LocalPath", "/opt/ml/checkpoints"}};
  // Without Debugger's hook or rules the job runs: two hosts, checkpoints, a profiler, remote debugging.
  request["RemoteDebugConfig"] = {{"EnableRemoteDebug", true}};
  request["ProfilerConfig"] = {{"ProfilingIntervalInMilliseconds", 500}};
  auto plain = parse_training_job_request(request.dump());
  ASSERT_VIGIL_OK(plain);
  EXPECT_EQ(plain->instance_count, 2);
  EXPECT_TRUE(plain->checkpointing);
  const std::string smdebug = "ValidationException: SMDebug Does Not Currently Support Distributed Training Jobs With Checkpointing Enabled";
  for (const char* member : {"DebugHookConfig", "DebugRuleConfigurations", "TensorBoardOutputConfig", "ProfilerRuleConfigurations"}) {
    json with = request;
    if (std::string(member).ends_with("RuleConfigurations")) with[member] = {rule("r")};
    else with[member] = {{"S3OutputPath", "s3://bucket/out"}};
    auto parsed = parse_training_job_request(with.dump());
    ASSERT_FALSE(parsed.has_value()) << member;
    EXPECT_EQ(parsed.error().code, ErrorCode::InvalidArgument);
    EXPECT_EQ(parsed.error().message, smdebug) << member;
  }
  // One host with checkpoints is fine; so is the example job.
  request["ResourceConfig"]["InstanceCount"] = 1;
  request["DebugHookConfig"] = {{"S3OutputPath", "s3://bucket/out"}};
  EXPECT_EQ(refusal(request), "");
  // Data parallel through a hyperparameter counts as distributed (the evaluator's table).
  request["HyperParameters"] = {{"sagemaker_distributed_dataparallel_enabled", "true"}};
  EXPECT_EQ(refusal(request), smdebug);
  request["HyperParameters"] = {{"sagemaker_parameter_server_enabled", "true"}};
  EXPECT_EQ(refusal(request), "ValidationException: Amazon SageMaker Debugger does not currently support Parameter Server distribution");
}

TEST(TrainingJobRequest, RuleConfigurationNamesAreUniqueOverBothLists) {
  json request = minimal();
  request["DebugRuleConfigurations"] = {rule("Report"), rule("Other")};
  request["ProfilerRuleConfigurations"] = {rule("Report")};
  EXPECT_EQ(refusal(request),
            "ValidationException: RuleConfigurationName 'Report' is used by both debugRuleConfigurations.1 and "
            "profilerRuleConfigurations.1: rule configuration names must be unique within a job");
}

}  // namespace
}  // namespace vigil::jobs
