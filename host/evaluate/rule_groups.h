// SageMaker's rule groups (builtin-rules §6): named sets of built-in rules, for
// `vigil rules --group NAME` and `vigil evaluate --group NAME`.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "evaluate/job_config.h"

namespace vigil::evaluate {

struct RuleGroup {
  std::string_view name;         // lower case; matched case-insensitively
  std::string_view description;
  std::vector<std::string_view> rules;  // rule_to_invoke names
  RuleKind kind = RuleKind::Debug;      // which list of the job its rules go to
};

std::span<const RuleGroup> rule_groups();
const RuleGroup* find_rule_group(std::string_view name);
// Profiler for the built-in profiler rules (the profiler group), else Debug: where `--rule NAME`
// puts a rule.
RuleKind builtin_rule_kind(std::string_view rule_name);

}  // namespace vigil::evaluate
