// SageMaker's request validation: the service model's shapes, and the one validator that reports
// their violations as the service does (ValidationException: "N validation errors detected: Value 'x'
// at 'path' failed to satisfy constraint: ..."). Used for CreateTrainingJob requests
// (jobs/training_job_request.h) and for the rule configurations of job files (job_config.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace vigil::evaluate::validation {

using json = nlohmann::json;

// ---- the service model's string shapes --------------------------------------------------------

enum class Pattern {
  AnyLine,          // .*  (Java: no line terminators)
  Anything,         // [\S\s]*
  TrainingJobName,  // [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}
  S3Uri,            // (https|s3)://([^/]+)/?(.*)
  OutputUri,        // S3Uri, or file://.* (SageMaker local mode's output paths); shown as S3Uri
  RoleArn,          // arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+
  EnvironmentKey,   // [a-zA-Z_][a-zA-Z0-9_]*
  ChannelName,      // [A-Za-z0-9\.\-_]+
  KmsKeyId,         // [a-zA-Z0-9:/_-]*
};

struct StringShape {
  size_t min = 0;
  size_t max = 0;
  Pattern pattern = Pattern::AnyLine;
};

constexpr StringShape kTrainingJobName{1, 63, Pattern::TrainingJobName};
constexpr StringShape kRoleArn{20, 2048, Pattern::RoleArn};
constexpr StringShape kS3Uri{0, 1024, Pattern::S3Uri};
// The S3OutputPath members: where vigil train puts the job's outputs (jobs/job_outputs.h).
constexpr StringShape kOutputUri{0, 1024, Pattern::OutputUri};
constexpr StringShape kDirectoryPath{0, 4096, Pattern::AnyLine};
constexpr StringShape kAlgorithmImage{0, 255, Pattern::AnyLine};
constexpr StringShape kRuleConfigurationName{1, 256, Pattern::AnyLine};
constexpr StringShape kCollectionName{1, 256, Pattern::AnyLine};
constexpr StringShape kConfigKey{1, 256, Pattern::AnyLine};
constexpr StringShape kConfigValue{0, 256, Pattern::AnyLine};
constexpr StringShape kHyperParameterKey{0, 256, Pattern::AnyLine};
constexpr StringShape kHyperParameterValue{0, 2500, Pattern::AnyLine};
constexpr StringShape kEnvironmentKey{0, 512, Pattern::EnvironmentKey};
constexpr StringShape kEnvironmentValue{0, 512, Pattern::Anything};
constexpr StringShape kChannelName{1, 64, Pattern::ChannelName};
constexpr StringShape kContentType{0, 256, Pattern::AnyLine};
constexpr StringShape kKmsKeyId{0, 2048, Pattern::KmsKeyId};

struct MapShape {
  size_t max_entries = 0;
  StringShape key, value;
};

constexpr MapShape kHyperParameters{100, kHyperParameterKey, kHyperParameterValue};
constexpr MapShape kEnvironment{100, kEnvironmentKey, kEnvironmentValue};
constexpr MapShape kHookParameters{20, kConfigKey, kConfigValue};  // also CollectionParameters, ProfilingParameters
constexpr MapShape kRuleParameters{100, kConfigKey, kConfigValue};

constexpr size_t kMaxCollections = 20;
constexpr size_t kMaxChannels = 20;

// Java's String.length(): UTF-16 code units, what the service's length constraints count.
size_t java_length(std::string_view s);

using Enum = std::span<const std::string_view>;

// "S3OutputPath" -> "s3OutputPath": the service's spelling of member paths.
std::string lower_camel(std::string_view member);
std::string child_path(std::string_view parent, std::string_view member);

// Collects violations in the service's wording; each check reads the document only through
// find/is_*/get of checked types, so it never throws.
class Validator {
 public:
  std::vector<std::string> violations;

  void violation(const json* value, std::string_view path, std::string_view constraint, bool as_map = false);

  // The member `name` of `object`, nullptr when it is absent or null (AWS JSON reads null as absent);
  // a missing required member is a violation.
  const json* member(const json& object, std::string_view name, std::string_view parent, bool required = false);

  // Checks a string against its shape; the string when it is one.
  const std::string* string(const json& v, const std::string& path, const StringShape& shape);

  const std::string* string_member(const json& object, std::string_view name, std::string_view parent,
                                   const StringShape& shape, bool required = false);

  // An integer (Java int, or long where `is_long`) within [min, max].
  std::optional<int64_t> integer_member(const json& object, std::string_view name, std::string_view parent, int64_t min,
                                        std::optional<int64_t> max = std::nullopt, bool is_long = false);

  std::optional<bool> boolean_member(const json& object, std::string_view name, std::string_view parent);

  void enum_member(const json& object, std::string_view name, std::string_view parent, Enum values,
                   bool required = false);

  // A structure member: the object, or nullptr when absent (or not an object: a violation).
  const json* object_member(const json& object, std::string_view name, std::string_view parent, bool required = false);

  // A list member with its length limits: the list, or nullptr.
  const json* list_member(const json& object, std::string_view name, std::string_view parent, size_t min, size_t max);

  // A string-to-string map: its size, then one violation for all bad keys and one for all bad values,
  // as the service reports maps.
  void map_member(const json& object, std::string_view name, std::string_view parent, const MapShape& shape);
};

// The members of each rule configuration in `list`, the value of DebugRuleConfigurations or
// ProfilerRuleConfigurations (sagemaker-api §2.3, §2.4: the same members). The service model requires
// RuleEvaluatorImage; the evaluator, which runs the rules itself, does not need it (`image_required`).
void check_rule_configurations(Validator& v, const json& list, std::string_view list_name, bool image_required);

// A RuleConfigurationName used by two rules: both lists share one namespace (sagemaker-api §2.3).
// `first` and `second` say where, as "debugRuleConfigurations.1". Local wording: the service
// documents no message for it.
[[nodiscard]] Error rule_name_used_twice(std::string_view name, std::string_view first, std::string_view second);

// An InvalidArgument "ValidationException: <message>".
[[nodiscard]] Error validation_exception(std::string_view message);
// The ValidationException of `violations` (not empty): "N validation error(s) detected: a; b".
[[nodiscard]] Error validation_errors(const std::vector<std::string>& violations);

}  // namespace vigil::evaluate::validation
