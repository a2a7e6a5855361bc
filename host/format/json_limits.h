// A nesting limit for JSON read from trial files and job configurations, checked before parsing.
// nlohmann::json parses iteratively, but copies, compares and prints values recursively, so a few
// hundred kilobytes of "[[[[..." overflowed the stack (found by feeding the fuzz harnesses deeply
// nested inputs). Real files nest a handful of levels.
#pragma once

#include <string_view>

namespace vigil::format {

inline constexpr int kMaxJsonDepth = 128;

// True when `text` nests arrays and objects deeper than `max_depth`. Brackets inside strings do not
// count; the text need not be valid JSON (the parser judges that afterwards).
inline bool json_nesting_exceeds(std::string_view text, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace vigil::format
