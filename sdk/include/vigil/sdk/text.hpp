// Vigil C++ SDK: the text helpers of rules and of the host (which shares this header:
// check_layering.cmake's sdk_shared_with_host). ASCII only, locale-independent: the texts are
// SageMaker's names, parameters and headers, never prose.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vigil::sdk::inline v1 {

[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
[[nodiscard]] constexpr char ascii_upper(char c) noexcept {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}

[[nodiscard]] inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}
[[nodiscard]] inline std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_upper(c);
  return out;
}

[[nodiscard]] constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// `s` without leading and trailing whitespace.
[[nodiscard]] constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

// SageMaker's string booleans, the one rule for every map of strings (RuleParameters, HookParameters,
// CollectionParameters, ProfilingParameters: sagemaker-api §0): "true"/"false" in any case (the SDK
// writes Python's str(), "True"), or "1"/"0", around whitespace. nullopt: anything else.
[[nodiscard]] constexpr std::optional<bool> parse_bool(std::string_view text) noexcept {
  const std::string_view t = trim(text);
  if (iequals(t, "true") || t == "1") return true;
  if (iequals(t, "false") || t == "0") return false;
  return std::nullopt;
}

}  // namespace vigil::sdk::inline v1
