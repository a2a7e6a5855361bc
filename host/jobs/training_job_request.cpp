#include "jobs/training_job_request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <span>
#include <vector>

#include "evaluate/job_config.h"
#include "format/json_limits.h"
#include "format/sagemaker_container.h"
#include "jobs/job_outputs.h"

namespace vigil::jobs {

namespace {

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

std::string_view pattern_text(Pattern p) {
  switch (p) {
    case Pattern::AnyLine: return ".*";
    case Pattern::Anything: return "[\\S\\s]*";
    case Pattern::TrainingJobName: return "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}";
    case Pattern::S3Uri:
    case Pattern::OutputUri: return "(https|s3)://([^/]+)/?(.*)";
    case Pattern::RoleArn: return "arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+";
    case Pattern::EnvironmentKey: return "[a-zA-Z_][a-zA-Z0-9_]*";
    case Pattern::ChannelName: return "[A-Za-z0-9\\.\\-_]+";
    case Pattern::KmsKeyId: return "[a-zA-Z0-9:/_-]*";
  }
  return "";
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Whether `s` holds a character Java's `.` does not match: \n, \r, U+0085, U+2028, U+2029.
bool has_line_terminator(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r') return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) return true;
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
      return true;
  }
  return false;
}

// Whole-string matches (the service applies each pattern to the whole value), written out by hand:
// no regex engine recursion on long values.
bool matches(Pattern p, std::string_view s) {
  switch (p) {
    case Pattern::AnyLine: return !has_line_terminator(s);
    case Pattern::Anything: return true;
    case Pattern::TrainingJobName: {
      // Alphanumerics joined by runs of '-', at most 63 alphanumerics.
      if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
      if (!std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '-'; })) return false;
      return std::count_if(s.begin(), s.end(), is_alnum) <= 63;
    }
    case Pattern::S3Uri: {
      std::string_view rest;
      if (s.starts_with("s3://")) rest = s.substr(5);
      else if (s.starts_with("https://")) rest = s.substr(8);
      else return false;
      const size_t slash = rest.find('/');
      if (slash == 0 || rest.empty()) return false;  // ([^/]+) needs one character
      // The host part may hold anything but '/'; what follows it (after one optional '/') is `.*`.
      return slash == std::string_view::npos || !has_line_terminator(rest.substr(slash + 1));
    }
    case Pattern::OutputUri:
      return matches(Pattern::S3Uri, s) || (s.starts_with("file://") && !has_line_terminator(s));
    case Pattern::RoleArn: {
      if (!s.starts_with("arn:aws")) return false;
      std::string_view rest = s.substr(7);
      while (!rest.empty() && ((rest.front() >= 'a' && rest.front() <= 'z') || rest.front() == '-')) rest.remove_prefix(1);
      if (!rest.starts_with(":iam::")) return false;
      rest.remove_prefix(6);
      if (rest.size() < 12 || !std::all_of(rest.begin(), rest.begin() + 12, is_digit)) return false;
      rest.remove_prefix(12);
      if (!rest.starts_with(":role")) return false;
      rest.remove_prefix(5);
      // "/?" then one or more of the class, which itself holds '/'.
      return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) {
        return is_alnum(c) || std::string_view("_+=,.@-/").find(c) != std::string_view::npos;
      });
    }
    case Pattern::EnvironmentKey:
      return !s.empty() && !is_digit(s.front()) &&
             std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '_'; });
    case Pattern::ChannelName:
      return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return is_alnum(c) || c == '.' || c == '-' || c == '_';
      });
    case Pattern::KmsKeyId:
      return std::all_of(s.begin(), s.end(), [](char c) {
        return is_alnum(c) || c == ':' || c == '/' || c == '_' || c == '-';
      });
  }
  return false;
}

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

constexpr size_t kMaxRuleConfigurations = 20;  // each of the two lists
constexpr size_t kMaxCollections = 20;
constexpr size_t kMaxChannels = 20;

// Java's String.length(): UTF-16 code units, what the service's length constraints count.
size_t java_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;  // a character starts here
    if (c >= 0xF0) ++n;           // outside the BMP: a surrogate pair
  }
  return n;
}

// ---- enum sets ----------------------------------------------------------------------------------

using Enum = std::span<const std::string_view>;

constexpr std::string_view kTrainingInputModes[] = {"Pipe", "File", "FastFile"};
constexpr std::string_view kS3DataTypes[] = {"ManifestFile", "S3Prefix", "AugmentedManifestFile", "Converse"};
constexpr std::string_view kS3DataDistributions[] = {"FullyReplicated", "ShardedByS3Key"};
constexpr std::string_view kCompressionTypes[] = {"None", "Gzip"};
constexpr std::string_view kRecordWrappers[] = {"None", "RecordIO"};
constexpr std::string_view kOutputCompressionTypes[] = {"GZIP", "NONE"};

// ProcessingInstanceType (sagemaker-api §1), in the service model's order: "ml." + family + size.
const std::vector<std::string_view>& processing_instance_types() {
  static const std::vector<std::string> names = [] {
    constexpr std::string_view size8[] = {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"};
    constexpr std::string_view size9_48[] = {"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"};
    constexpr std::string_view size6_g7[] = {"2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"};
    const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> families = {
        {"t3", {"medium", "large", "xlarge", "2xlarge"}},
        {"m4", {"xlarge", "2xlarge", "4xlarge", "10xlarge", "16xlarge"}},
        {"c4", {"xlarge", "2xlarge", "4xlarge", "8xlarge"}},
        {"p2", {"xlarge", "8xlarge", "16xlarge"}},
        {"p3", {"2xlarge", "8xlarge", "16xlarge"}},
        {"c5", {"xlarge", "2xlarge", "4xlarge", "9xlarge", "18xlarge"}},
        {"m5", {"large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge"}},
        {"r5", {"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"}},
        {"g4dn", {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"}},
        {"g5", {"xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "12xlarge", "24xlarge", "48xlarge"}},
        {"r5d", {"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"}},
        {"g6", {std::begin(size8), std::end(size8)}},
        {"g6e", {std::begin(size8), std::end(size8)}},
        {"m6i", {"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "32xlarge"}},
        {"c6i", {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "32xlarge"}},
        {"m7i", {std::begin(size9_48), std::end(size9_48)}},
        {"c7i", {std::begin(size9_48), std::end(size9_48)}},
        {"r7i", {std::begin(size9_48), std::end(size9_48)}},
        {"p5", {"4xlarge"}},
        {"g7e", {std::begin(size6_g7), std::end(size6_g7)}},
        {"g7", {std::begin(size6_g7), std::end(size6_g7)}},
    };
    std::vector<std::string> out;
    for (const auto& [family, sizes] : families)
      for (auto size : sizes) out.push_back(fmt::format("ml.{}.{}", family, size));
    return out;
  }();
  static const std::vector<std::string_view> views(names.begin(), names.end());
  return views;
}

// ---- the validator ------------------------------------------------------------------------------

// "S3OutputPath" -> "s3OutputPath": the service's spelling of member paths.
std::string lower_camel(std::string_view member) {
  std::string out(member);
  if (!out.empty() && out[0] >= 'A' && out[0] <= 'Z') out[0] = char(out[0] - 'A' + 'a');
  return out;
}

std::string child_path(std::string_view parent, std::string_view member) {
  return parent.empty() ? lower_camel(member) : fmt::format("{}.{}", parent, lower_camel(member));
}

std::string compact(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// How a value appears in a violation: strings as they are, other scalars in JSON, maps as Java
// prints them ({k=v, k2=v2}), other values in compact JSON.
std::string display(const json& v, bool as_map = false) {
  if (v.is_string()) return v.get<std::string>();
  if (as_map && v.is_object()) {
    std::vector<std::string> items;
    for (const auto& [k, e] : v.items()) items.push_back(fmt::format("{}={}", k, display(e)));
    return fmt::format("{{{}}}", fmt::join(items, ", "));
  }
  return compact(v);
}

// The constraints of a shape as the service lists them for map keys and values.
std::string describe(const StringShape& shape) {
  std::vector<std::string> parts{fmt::format("Member must have length less than or equal to {}", shape.max)};
  if (shape.min > 0) parts.push_back(fmt::format("Member must have length greater than or equal to {}", shape.min));
  parts.push_back(fmt::format("Member must satisfy regular expression pattern: {}", pattern_text(shape.pattern)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

bool fits(const StringShape& shape, std::string_view s) {
  const size_t n = java_length(s);
  return n <= shape.max && n >= shape.min && matches(shape.pattern, s);
}

class Validator {
 public:
  std::vector<std::string> violations;

  void violation(const json* value, std::string_view path, std::string_view constraint, bool as_map = false) {
    violations.push_back(value ? fmt::format("Value '{}' at '{}' failed to satisfy constraint: {}", display(*value, as_map),
                                             path, constraint)
                               : fmt::format("Value null at '{}' failed to satisfy constraint: {}", path, constraint));
  }

  // The member `name` of `object`, nullptr when it is absent or null (AWS JSON reads null as absent);
  // a missing required member is a violation.
  const json* member(const json& object, std::string_view name, std::string_view parent, bool required = false) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) {
      if (required) violation(nullptr, child_path(parent, name), "Member must not be null");
      return nullptr;
    }
    return &*it;
  }

  // Checks a string against its shape; the string when it is one.
  const std::string* string(const json& v, const std::string& path, const StringShape& shape) {
    if (!v.is_string()) {
      violation(&v, path, "Member must be a string");
      return nullptr;
    }
    const auto& s = v.get_ref<const std::string&>();
    const size_t n = java_length(s);
    if (n > shape.max) violation(&v, path, fmt::format("Member must have length less than or equal to {}", shape.max));
    if (n < shape.min) violation(&v, path, fmt::format("Member must have length greater than or equal to {}", shape.min));
    if (!matches(shape.pattern, s))
      violation(&v, path, fmt::format("Member must satisfy regular expression pattern: {}", pattern_text(shape.pattern)));
    return &s;
  }

  const std::string* string_member(const json& object, std::string_view name, std::string_view parent,
                                   const StringShape& shape, bool required = false) {
    const json* v = member(object, name, parent, required);
    return v ? string(*v, child_path(parent, name), shape) : nullptr;
  }

  // An integer (Java int, or long where `is_long`) within [min, max].
  std::optional<int64_t> integer_member(const json& object, std::string_view name, std::string_view parent, int64_t min,
                                        std::optional<int64_t> max = std::nullopt, bool is_long = false) {
    const json* v = member(object, name, parent);
    if (!v) return std::nullopt;
    const std::string path = child_path(parent, name);
    const int64_t lowest = is_long ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
    const int64_t highest = is_long ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
    const bool representable =
        v->is_number_integer() &&
        (v->is_number_unsigned() ? v->get<uint64_t>() <= uint64_t(highest)
                                 : v->get<int64_t>() >= lowest && v->get<int64_t>() <= highest);
    if (!representable) {
      violation(v, path, is_long ? "Member must be a long integer" : "Member must be an integer");
      return std::nullopt;
    }
    const int64_t n = v->get<int64_t>();
    if (n < min) violation(v, path, fmt::format("Member must have value greater than or equal to {}", min));
    if (max && n > *max) violation(v, path, fmt::format("Member must have value less than or equal to {}", *max));
    return n;
  }

  std::optional<bool> boolean_member(const json& object, std::string_view name, std::string_view parent) {
    const json* v = member(object, name, parent);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) {
      violation(v, child_path(parent, name), "Member must be a boolean");
      return std::nullopt;
    }
    return v->get<bool>();
  }

  void enum_member(const json& object, std::string_view name, std::string_view parent, Enum values,
                   bool required = false) {
    const json* v = member(object, name, parent, required);
    if (!v) return;
    const std::string path = child_path(parent, name);
    if (!v->is_string()) {
      violation(v, path, "Member must be a string");
      return;
    }
    if (std::find(values.begin(), values.end(), v->get_ref<const std::string&>()) == values.end())
      violation(v, path, fmt::format("Member must satisfy enum value set: [{}]", fmt::join(values, ", ")));
  }

  // A structure member: the object, or nullptr when absent (or not an object: a violation).
  const json* object_member(const json& object, std::string_view name, std::string_view parent, bool required = false) {
    const json* v = member(object, name, parent, required);
    if (v && !v->is_object()) {
      violation(v, child_path(parent, name), "Member must be an object");
      return nullptr;
    }
    return v;
  }

  // A list member with its length limits: the list, or nullptr.
  const json* list_member(const json& object, std::string_view name, std::string_view parent, size_t min, size_t max) {
    const json* v = member(object, name, parent);
    if (!v) return nullptr;
    const std::string path = child_path(parent, name);
    if (!v->is_array()) {
      violation(v, path, "Member must be a list");
      return nullptr;
    }
    if (v->size() > max) violation(v, path, fmt::format("Member must have length less than or equal to {}", max));
    if (v->size() < min) violation(v, path, fmt::format("Member must have length greater than or equal to {}", min));
    return v;
  }

  // A string-to-string map: its size, then one violation for all bad keys and one for all bad values,
  // as the service reports maps.
  void map_member(const json& object, std::string_view name, std::string_view parent, const MapShape& shape) {
    const json* v = member(object, name, parent);
    if (!v) return;
    const std::string path = child_path(parent, name);
    if (!v->is_object()) {
      violation(v, path, "Member must be a map");
      return;
    }
    if (v->size() > shape.max_entries)
      violation(v, path, fmt::format("Member must have length less than or equal to {}", shape.max_entries), true);
    bool bad_key = false, bad_value = false;
    for (const auto& [key, value] : v->items()) {
      if (!value.is_string()) {
        violation(&value, fmt::format("{}.{}", path, key), "Member must be a string");
        continue;
      }
      bad_key |= !fits(shape.key, key);
      bad_value |= !fits(shape.value, value.get_ref<const std::string&>());
    }
    if (bad_key) violation(v, path, fmt::format("Map keys must satisfy constraint: [{}]", describe(shape.key)), true);
    if (bad_value) violation(v, path, fmt::format("Map value must satisfy constraint: [{}]", describe(shape.value)), true);
  }
};

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

// DebugRuleConfigurations / ProfilerRuleConfigurations (sagemaker-api §2.3, §2.4: the same members).
void check_rule_configurations(Validator& v, const json& request, std::string_view list_name) {
  const json* rules = v.list_member(request, list_name, "", 0, kMaxRuleConfigurations);
  if (!rules) return;
  for (size_t i = 0; i < rules->size(); ++i) {
    const std::string path = fmt::format("{}.{}.member", lower_camel(list_name), i + 1);
    const json& rule = (*rules)[i];
    if (!rule.is_object()) {
      v.violation(&rule, path, "Member must be an object");
      continue;
    }
    v.string_member(rule, "RuleConfigurationName", path, kRuleConfigurationName, /*required=*/true);
    v.string_member(rule, "LocalPath", path, kDirectoryPath);
    v.string_member(rule, "S3OutputPath", path, kOutputUri);
    v.string_member(rule, "RuleEvaluatorImage", path, kAlgorithmImage, /*required=*/true);
    const auto& types = processing_instance_types();
    v.enum_member(rule, "InstanceType", path, Enum(types.data(), types.size()));
    v.integer_member(rule, "VolumeSizeInGB", path, 0);
    v.map_member(rule, "RuleParameters", path, kRuleParameters);
  }
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
  check_rule_configurations(v, request, "DebugRuleConfigurations");
  check_tensorboard_output_config(v, request);
  check_profiler_config(v, request);
  check_rule_configurations(v, request, "ProfilerRuleConfigurations");
  v.map_member(request, "Environment", "", kEnvironment);
  check_remote_debug_config(v, request);
  return std::move(v.violations);
}

[[nodiscard]] Error validation_exception(std::string_view message) {
  return Error::invalid_argument(fmt::format("ValidationException: {}", message));
}

// The names of both rule lists share one namespace (sagemaker-api §2.3). Local wording: the service
// documents no message for it.
Result<void> check_unique_rule_names(const json& request) {
  std::map<std::string, std::string> seen;  // name -> where
  for (const char* list : {"DebugRuleConfigurations", "ProfilerRuleConfigurations"}) {
    auto rules = request.find(list);
    if (rules == request.end() || !rules->is_array()) continue;
    for (size_t i = 0; i < rules->size(); ++i) {
      const std::string& name = (*rules)[i].at("RuleConfigurationName").get_ref<const std::string&>();
      const std::string where = fmt::format("{}.{}", lower_camel(list), i + 1);
      if (auto [it, fresh] = seen.emplace(name, where); !fresh)
        return fail(validation_exception(fmt::format(
            "RuleConfigurationName '{}' is used by both {} and {}: rule configuration names must be unique within a job",
            name, it->second, where)));
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
  return fail(validation_exception(fmt::format("{} validation error{} detected: {}", v.violations.size(),
                                               v.violations.size() == 1 ? "" : "s", fmt::join(v.violations, "; "))));
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
  if (auto violations = model_violations(doc); !violations.empty())
    return fail(validation_exception(fmt::format("{} validation error{} detected: {}", violations.size(),
                                                 violations.size() == 1 ? "" : "s", fmt::join(violations, "; "))));
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
