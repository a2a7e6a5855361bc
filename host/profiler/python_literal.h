// The Python dict literals that ProfilingParameters' *ProfilingConfig strings hold
// ("{'StartStep': 5, 'NumSteps': 3, }"). smdebug eval()s them; Vigil parses the literal subset
// they use and nothing more: a flat dict with string keys and values that are strings (' or "),
// ints, floats, True, False or None. Anything else is refused, never evaluated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/error.h"

namespace vigil::profiler {

struct PythonNone {
  bool operator==(const PythonNone&) const = default;
};
using PythonScalar = std::variant<PythonNone, bool, int64_t, double, std::string>;

// The entries in the order written (keys as written; a key given twice is refused).
using PythonDict = std::vector<std::pair<std::string, PythonScalar>>;

// Parses `text` as one dict literal (whitespace, a trailing comma and an empty dict allowed).
// Errors are InvalidArgument saying what was expected and at which character.
[[nodiscard]] Result<PythonDict> parse_python_dict(std::string_view text);

// How Python's repr would show the value (for error messages).
[[nodiscard]] std::string python_repr(const PythonScalar& value);

}  // namespace vigil::profiler
