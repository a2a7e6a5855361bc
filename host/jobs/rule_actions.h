// The built-in actions of a debug rule (sagemaker-api §5): RuleParameters["action_json"] as the SDK
// writes it (quotes backslash-escaped inside the string), read as the rule container reads it
// (un-escaped as a Python string literal, lower-cased whole, then JSON: one object or a list), and
// the StopTraining action's choice of the job to stop.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::jobs {

struct RuleAction {
  enum class Kind { StopTraining, Email, Sms } kind;
  std::string training_job_prefix;  // StopTraining
  std::string endpoint;             // Email: the address; Sms: the phone number (E.164)
};

struct RuleActions {
  std::vector<RuleAction> actions;    // in the order given
  std::vector<std::string> warnings;  // one per entry skipped, naming it and why (smdebug logs these)
};

// Parses `action_json`. Text holding `\"` is first un-escaped as a Python string literal (`\"`,
// `\\`, `\'`, `\n`, `\t`, `\r`, `\xhh`, `\uXXXX`, ...; unknown escapes stay as written, as in
// Python), then lower-cased as smdebug does (ASCII letters only: non-ASCII text is kept), so
// prefixes and endpoints come out lower-case. Entries: {"name": "stoptraining",
// "training_job_prefix": P} with P matching ^[A-Za-z0-9\-]+$ (`default_job_name`, lower-cased, where
// the key is missing: the SDK fills in the job's name); {"name": "email", "endpoint": E} with E
// matching ^[a-z0-9]+[@]\w+[.]\w{2,3}$; {"name": "sms", "endpoint": N} with N matching ^\+\d{1,15}$.
// Entries that are not objects, unknown names, missing, non-string or invalid keys are skipped with
// a warning; JSON that is neither an object nor a list gives no actions and a warning. Text that is
// not JSON (after un-escaping) is InvalidArgument.
[[nodiscard]] Result<RuleActions> parse_rule_actions(std::string_view action_json, std::string_view default_job_name);

// smdebug's StopTraining choice among the names of the InProgress jobs: the one job whose name
// starts with `prefix` (case-sensitively, as smdebug's startswith; names listed twice count once);
// none, with the reason, when no name or more than one does.
std::expected<std::string, std::string> choose_job_to_stop(std::string_view prefix,
                                                          const std::vector<std::string>& in_progress_jobs);

}  // namespace vigil::jobs
