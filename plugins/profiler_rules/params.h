// Profiler-rule parameters as SageMaker's rules config checks them (builtin-rules §4, sagemaker-api
// §4.3): one parser for a rule run on its own (the host's typed values, as text) and for
// ProfilerReport's `<RuleName>_<param>` overrides (plain strings). The check of a parameter follows
// from its ParamSpec, so kParams stays the single declaration:
//   * a double with range(0, 100): validate_percentile (0 <= v <= 100);
//   * a number with a lower bound and no upper one: validate_positive_integer, which despite its name
//     only requires v > 0 (an INT64 must also be a whole number);
//   * strings and booleans: taken as given.
#pragma once

#include <vigil/sdk.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vigil::profiler_rules {

using sdk::Error;
using sdk::Result;

// A percentile threshold (0..100).
constexpr sdk::ParamSpec param_percentile(const char* name, const char* default_text, const char* description) {
  return sdk::param_double(name, default_text, description).range(0, 100);
}
// A positive number (> 0; the descriptor can only say >= 0, the parser refuses 0).
constexpr sdk::ParamSpec param_positive(const char* name, const char* default_text, const char* description) {
  return sdk::param_double(name, default_text, description).min(0);
}
// A positive whole number.
constexpr sdk::ParamSpec param_positive_int(const char* name, const char* default_text, const char* description) {
  return sdk::param_int(name, default_text, description).min(1);
}
// Every profiler rule's window length (a double so that "6e7" and "60000000" both parse).
inline constexpr sdk::ParamSpec kScanInterval =
    sdk::param_double("scan_interval_us", "60000000", "The length of a time window in µs (SageMaker's 6e7 = 60 s).")
        .min(1);

using TextParams = std::map<std::string, std::string>;

// A rule's parameters, validated, with defaults filled in.
class ParamValues {
 public:
  // `given` maps parameter names to their text; names not in `specs` are refused ("<p> is an
  // invalid parameter name!"), and values that fail their check name the rule and the key.
  static Result<ParamValues> parse(std::string_view rule, std::span<const sdk::ParamSpec> specs, const TextParams& given);
  // The same from a rule's Params (the host has parsed them; their text is re-checked here).
  static Result<ParamValues> from_params(std::string_view rule, std::span<const sdk::ParamSpec> specs,
                                         const sdk::Params& params);

  double number(std::string_view name) const;
  int64_t integer(std::string_view name) const;
  bool boolean(std::string_view name) const;
  std::optional<std::string> text(std::string_view name) const;  // nullopt when unset (no default)
  // RuleParameters of the report: "name:value" lines in declaration order ("None" for unset).
  std::string parameters_text() const;

 private:
  struct Value {
    std::string name;
    std::optional<std::string> text;
    double number = 0;
    bool boolean = false;
  };
  const Value* find(std::string_view name) const;
  std::vector<Value> values_;
};

// A parameter text as a number (Python float(): surrounding spaces allowed, nothing after); nullopt
// when it is not one.
std::optional<double> parse_number(std::string_view text);

}  // namespace vigil::profiler_rules
