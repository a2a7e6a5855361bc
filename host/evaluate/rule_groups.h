// SageMaker's rule groups (builtin-rules §6): named sets of built-in rules, for
// `vigil rules --group NAME` and `vigil evaluate --group NAME`.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace vigil::evaluate {

struct RuleGroup {
  std::string_view name;         // lower case; matched case-insensitively
  std::string_view description;
  std::vector<std::string_view> rules;  // rule_to_invoke names
};

std::span<const RuleGroup> rule_groups();
const RuleGroup* find_rule_group(std::string_view name);

}  // namespace vigil::evaluate
