// Limits on regular expressions that come from outside (trial files, rule parameters, queries),
// checked before std::regex sees them. libstdc++ 12's regex compiler recurses once per pattern
// element, so a long enough pattern overflows the stack (about 100,000 characters; half that under
// ASan), and it reads the numbers of "{m,n}" and "\N" into a long without an overflow check
// (undefined behaviour; found by fuzz/param_values_fuzzer).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

inline constexpr size_t kMaxRegexLength = 4096;
// The longest text such a pattern is matched against (a tensor name, a file name). libstdc++'s matcher
// recurses once per character of the text too, several hundred bytes of stack each: a tensor name
// of 30,000 characters overflowed an 8 MiB stack. Names are refused beyond it where a trial's files
// are parsed (format/index_json.h); regex_search_bounded (common/search_regex.h) guards every match.
inline constexpr size_t kMaxRegexSubjectLength = 1024;
// Repetition counts and back-references up to 999,999,999: far beyond any sensible pattern.
inline constexpr size_t kMaxRegexNumberDigits = 9;

// Why `pattern` must not be compiled, or nullopt when it is within the limits.
inline std::optional<std::string> regex_limit_violation(std::string_view pattern) {
  if (pattern.size() > kMaxRegexLength)
    return fmt::format("it is {} characters long (at most {})", pattern.size(), kMaxRegexLength);
  auto digits_from = [&](size_t i) {
    size_t n = 0;
    while (i + n < pattern.size() && pattern[i + n] >= '0' && pattern[i + n] <= '9') ++n;
    return n;
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    size_t digits = 0;
    if (pattern[i] == '\\') {
      digits = digits_from(i + 1);  // a back-reference "\N"
      ++i;                          // the escaped character is never special
    } else if (pattern[i] == '{') {
      digits = digits_from(i + 1);  // "{m", then ",n"
      const size_t comma = i + 1 + digits;
      if (comma < pattern.size() && pattern[comma] == ',') digits = std::max(digits, digits_from(comma + 1));
    }
    if (digits > kMaxRegexNumberDigits)
      return fmt::format("it holds a {}-digit repetition count or back-reference (at most {} digits)", digits,
                         kMaxRegexNumberDigits);
  }
  return std::nullopt;
}

}  // namespace vigil
