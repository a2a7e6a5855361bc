// Rule parameters: SageMaker passes every RuleParameters value as a string; the host parses and
// validates each against the rule's parameter schema before the rule is created.
#pragma once

#include <vigil/vigil.h>

#include <expected>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::plugin_host {

struct ParsedParam {
  vigil_param_type type = VIGIL_PARAM_STRING;
  bool is_set = false;
  std::string text;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::vector<std::string> list;
};

// Parses `text` as the spec's type and checks bounds/choices; the error says why in a few words.
[[nodiscard]] std::expected<ParsedParam, std::string> parse_param_value(const vigil_param_spec& spec, std::string_view text);

// The validated values of one rule instance, with the storage the C array points into.
class BoundParams {
 public:
  // `given` maps parameter names to their strings; a parameter left out takes its default in
  // `profile` (profiles.h). Errors name the rule, the parameter and the value: an unknown parameter
  // (unless the rule takes extra parameters), a missing required one, an unparsable or out-of-range
  // value.
  [[nodiscard]] static Result<BoundParams> bind(const vigil_rule_descriptor& rule, const std::map<std::string, std::string>& given,
                                  std::string_view configuration_name,
                                  std::string_view profile = VIGIL_PROFILE_SAGEMAKER);
  BoundParams() = default;
  BoundParams(BoundParams&&) = default;
  BoundParams& operator=(BoundParams&&) = default;
  BoundParams(const BoundParams&) = delete;

  const vigil_param_value* data() const { return values_.data(); }
  uint32_t size() const { return uint32_t(values_.size()); }
  const std::vector<ParsedParam>& parsed() const { return parsed_; }
  // Parameters the rule does not declare, kept for rules flagged VIGIL_RULEF_EXTRA_PARAMS (ABI 1.1).
  const char* const* extra_names() const { return extra_name_ptrs_.data(); }
  const char* const* extra_values() const { return extra_value_ptrs_.data(); }
  uint32_t extra_count() const { return uint32_t(extras_.size()); }

 private:
  void rebuild_views();
  std::vector<ParsedParam> parsed_;
  std::vector<std::vector<const char*>> list_pointers_;
  std::vector<vigil_param_value> values_;
  std::vector<std::pair<std::string, std::string>> extras_;
  std::vector<const char*> extra_name_ptrs_;
  std::vector<const char*> extra_value_ptrs_;
};

}  // namespace vigil::plugin_host
