// Vigil C++ SDK: a tiny JSON object writer for evidence (Rule::report_evidence), so plugins need no
// JSON library.   JsonObject().add("tensor", name).add("mean_abs", v).str()
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <concepts>
#include <span>
#include <string>
#include <string_view>

#include "vigil/sdk/version.hpp"

namespace vigil::sdk::inline v1 {

// `text` as a JSON string literal, quotes included. UTF-8 passes through; control characters, quotes
// and backslashes are escaped.
inline std::string json_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

// A JSON number (shortest round-trip form); null for NaN and infinities, which JSON cannot hold.
inline std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

// A JSON array of already-serialised JSON values (objects, numbers, quoted strings).
inline std::string json_array(std::span<const std::string> items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  return out + "]";
}

// A JSON array of strings.
inline std::string json_string_array(std::span<const std::string> items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += json_quote(items[i]);
  }
  return out + "]";
}

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value) { return add_raw(key, json_quote(value)); }
  JsonObject& add(std::string_view key, const char* value) {
    return add_raw(key, value ? json_quote(value) : std::string("null"));
  }
  JsonObject& add(std::string_view key, const std::string& value) { return add_raw(key, json_quote(value)); }
  JsonObject& add(std::string_view key, double value) { return add_raw(key, json_number(value)); }
  JsonObject& add(std::string_view key, bool value) { return add_raw(key, value ? "true" : "false"); }
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  JsonObject& add(std::string_view key, T value) {
    return add_raw(key, fmt::format("{}", value));
  }
  // `json` must already be valid JSON (a nested object or array).
  JsonObject& add_raw(std::string_view key, std::string_view json) {
    body_ += body_.empty() ? "" : ",";
    body_ += json_quote(key);
    body_ += ':';
    body_ += json;
    return *this;
  }

  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace vigil::sdk::inline v1
