#include "evaluate/request_validation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "evaluate/job_config.h"

namespace vigil::evaluate::validation {

namespace {

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

}  // namespace

// Java's String.length(): UTF-16 code units, what the service's length constraints count.
size_t java_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;  // a character starts here
    if (c >= 0xF0) ++n;           // outside the BMP: a surrogate pair
  }
  return n;
}

std::string lower_camel(std::string_view member) {
  std::string out(member);
  if (!out.empty() && out[0] >= 'A' && out[0] <= 'Z') out[0] = char(out[0] - 'A' + 'a');
  return out;
}

std::string child_path(std::string_view parent, std::string_view member) {
  return parent.empty() ? lower_camel(member) : fmt::format("{}.{}", parent, lower_camel(member));
}

void Validator::violation(const json* value, std::string_view path, std::string_view constraint, bool as_map) {
  violations.push_back(value ? fmt::format("Value '{}' at '{}' failed to satisfy constraint: {}", display(*value, as_map),
                                           path, constraint)
                             : fmt::format("Value null at '{}' failed to satisfy constraint: {}", path, constraint));
}

const json* Validator::member(const json& object, std::string_view name, std::string_view parent, bool required) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) {
    if (required) violation(nullptr, child_path(parent, name), "Member must not be null");
    return nullptr;
  }
  return &*it;
}

const std::string* Validator::string(const json& v, const std::string& path, const StringShape& shape) {
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

const std::string* Validator::string_member(const json& object, std::string_view name, std::string_view parent,
                                 const StringShape& shape, bool required) {
  const json* v = member(object, name, parent, required);
  return v ? string(*v, child_path(parent, name), shape) : nullptr;
}

std::optional<int64_t> Validator::integer_member(const json& object, std::string_view name, std::string_view parent, int64_t min,
                                      std::optional<int64_t> max, bool is_long) {
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

std::optional<bool> Validator::boolean_member(const json& object, std::string_view name, std::string_view parent) {
  const json* v = member(object, name, parent);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    violation(v, child_path(parent, name), "Member must be a boolean");
    return std::nullopt;
  }
  return v->get<bool>();
}

void Validator::enum_member(const json& object, std::string_view name, std::string_view parent, Enum values,
                 bool required) {
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

const json* Validator::object_member(const json& object, std::string_view name, std::string_view parent, bool required) {
  const json* v = member(object, name, parent, required);
  if (v && !v->is_object()) {
    violation(v, child_path(parent, name), "Member must be an object");
    return nullptr;
  }
  return v;
}

const json* Validator::list_member(const json& object, std::string_view name, std::string_view parent, size_t min, size_t max) {
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

void Validator::map_member(const json& object, std::string_view name, std::string_view parent, const MapShape& shape) {
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

void check_rule_configurations(Validator& v, const json& list, std::string_view list_name, bool image_required) {
  const std::string list_path = lower_camel(list_name);
  if (!list.is_array()) {
    v.violation(&list, list_path, "Member must be a list");
    return;
  }
  if (list.size() > kMaxRules)
    v.violation(&list, list_path, fmt::format("Member must have length less than or equal to {}", kMaxRules));
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("{}.{}.member", list_path, i + 1);
    const json& rule = list[i];
    if (!rule.is_object()) {
      v.violation(&rule, path, "Member must be an object");
      continue;
    }
    v.string_member(rule, "RuleConfigurationName", path, kRuleConfigurationName, /*required=*/true);
    v.string_member(rule, "LocalPath", path, kDirectoryPath);
    v.string_member(rule, "S3OutputPath", path, kOutputUri);
    v.string_member(rule, "RuleEvaluatorImage", path, kAlgorithmImage, image_required);
    const auto& types = processing_instance_types();
    v.enum_member(rule, "InstanceType", path, Enum(types.data(), types.size()));
    v.integer_member(rule, "VolumeSizeInGB", path, 0);
    v.map_member(rule, "RuleParameters", path, kRuleParameters);
  }
}

Error rule_name_used_twice(std::string_view name, std::string_view first, std::string_view second) {
  return validation_exception(fmt::format(
      "RuleConfigurationName '{}' is used by both {} and {}: rule configuration names must be unique within a job", name,
      first, second));
}

Error validation_exception(std::string_view message) {
  return Error::invalid_argument(fmt::format("ValidationException: {}", message));
}

Error validation_errors(const std::vector<std::string>& violations) {
  return validation_exception(fmt::format("{} validation error{} detected: {}", violations.size(),
                                          violations.size() == 1 ? "" : "s", fmt::join(violations, "; ")));
}

}  // namespace vigil::evaluate::validation
