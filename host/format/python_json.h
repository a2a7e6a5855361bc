// JSON text exactly as Python's json.dumps writes it with default arguments: separators ", " and
// ": ", non-ASCII escaped as \uXXXX (surrogate pairs above U+FFFF), floats as Python repr
// (NaN / Infinity / -Infinity), keys in insertion order. smdebug's index and collection files are
// written this way, so byte-compatible output needs it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vigil::format {

std::string python_json_dumps(const nlohmann::ordered_json& value);

}  // namespace vigil::format
