// The one way the host compiles a regex that comes from outside (collection files, rule parameters,
// queries) for Python's re.search semantics: the limits of regex_limits.h first, then std::regex
// (ECMAScript). ECMAScript has no look-behind, which smdebug's XGBoost `losses` collection uses at
// the end of its pattern (`^[a-zA-z]+-.+(?<!(auc|map))$`); a trailing negative look-behind of
// literal alternatives before `$` is rewritten into the equivalent look-ahead at the start.
#pragma once

#include <regex>
#include <string>
#include <string_view>

#include "common/error.h"

namespace vigil {

// InvalidArgument naming the pattern (cut to 100 characters) and why.
[[nodiscard]] Result<std::regex> compile_search_regex(std::string_view pattern);

// re.search of `text` with a pattern from compile_search_regex: no match, without matching, for a
// text longer than kMaxRegexSubjectLength (regex_limits.h), and where std::regex gives up
// (error_complexity, error_stack) rather than an exception.
[[nodiscard]] bool regex_search_bounded(std::string_view text, const std::regex& re);

// The pattern std::regex is given: `pattern`, or its look-ahead form (see above).
std::string ecmascript_form(std::string_view pattern);

}  // namespace vigil
