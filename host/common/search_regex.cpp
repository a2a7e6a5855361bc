#include "common/search_regex.h"

#include <fmt/format.h>

#include <cctype>

#include "common/regex_limits.h"

namespace vigil {

namespace {

// Literal alternatives "a|b|c": letters, digits, '_' and '-' only, so that matching them at the end
// of the name is all the look-behind did.
bool literal_alternatives(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '|')) return false;
  return s.front() != '|' && s.back() != '|' && s.find("||") == std::string_view::npos;
}

}  // namespace

std::string ecmascript_form(std::string_view pattern) {
  // "<body>(?<!(<alts>))$" or "<body>(?<!<alts>)$": the name must not end with one of <alts>.
  if (!pattern.ends_with(")$")) return std::string(pattern);
  const size_t at = pattern.rfind("(?<!");
  if (at == std::string_view::npos) return std::string(pattern);
  std::string_view inner = pattern.substr(at + 4, pattern.size() - 2 - (at + 4));
  if (inner.size() >= 2 && inner.front() == '(' && inner.back() == ')') inner = inner.substr(1, inner.size() - 2);
  if (!literal_alternatives(inner)) return std::string(pattern);
  std::string_view body = pattern.substr(0, at);
  const bool anchored = body.starts_with("^");
  if (anchored) body.remove_prefix(1);
  // The look-ahead, checked once at the start, says the same of the whole name.
  return fmt::format("^(?!.*(?:{})$){}(?:{})$", inner, anchored ? "" : ".*?", body);
}

Result<std::regex> compile_search_regex(std::string_view pattern) {
  const std::string shown = pattern.size() > 100 ? std::string(pattern.substr(0, 100)) + "..." : std::string(pattern);
  if (auto why = regex_limit_violation(pattern))
    return fail(Error::invalid_argument(fmt::format("invalid regex '{}': {}", shown, *why)));
  try {
    return std::regex(ecmascript_form(pattern), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return fail(Error::invalid_argument(fmt::format("invalid regex '{}': {}", shown, e.what())));
  }
}

bool regex_search_bounded(std::string_view text, const std::regex& re) {
  if (text.size() > kMaxRegexSubjectLength) return false;
  try {
    return std::regex_search(text.begin(), text.end(), re);
  } catch (const std::regex_error&) {
    return false;
  }
}

}  // namespace vigil
