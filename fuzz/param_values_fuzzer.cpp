// Rule parameters (host/plugin_host/param_values.*): string RuleParameters checked against a fixed rule
// descriptor with a spec of every kind. The first input byte picks the mode:
//   even: one value, byte 2 picks the spec and the rest is the value text (parse_param_value);
//   odd:  a whole parameter set, "name=value" lines (BoundParams::bind); bit 1 allows extra parameters.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "plugin_host/param_values.h"

using namespace vigil::plugin_host;

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::quiet_NaN();
const char* const kReductionChoices[] = {"min", "max", "mean", "L2_norm", nullptr};

vigil_param_spec spec(const char* name, vigil_param_type type, const char* default_text, double min_value,
                      double max_value, uint32_t flags = 0, const char* const* choices = nullptr) {
  return vigil_param_spec{.struct_size = sizeof(vigil_param_spec),
                          .name = name,
                          .type = type,
                          .flags = flags,
                          .default_text = default_text,
                          .min_value = min_value,
                          .max_value = max_value,
                          .choices = choices,
                          .description = "fuzz"};
}

const vigil_param_spec kSpecs[] = {
    spec("percent", VIGIL_PARAM_INT64, "50", 0, 100),
    spec("any_int", VIGIL_PARAM_INT64, nullptr, kUnbounded, kUnbounded),
    spec("positive_int", VIGIL_PARAM_INT64, "1", 1, kUnbounded),
    spec("required_small_int", VIGIL_PARAM_INT64, nullptr, -10, 10, VIGIL_PARAMF_REQUIRED),
    spec("unit_interval", VIGIL_PARAM_DOUBLE, "0.5", 0, 1),
    spec("at_most_a_million", VIGIL_PARAM_DOUBLE, nullptr, kUnbounded, 1e6),
    spec("any_double", VIGIL_PARAM_DOUBLE, "1e-7", kUnbounded, kUnbounded),
    spec("flag", VIGIL_PARAM_BOOL, "False", kUnbounded, kUnbounded),
    spec("label", VIGIL_PARAM_STRING, "", kUnbounded, kUnbounded),
    spec("names", VIGIL_PARAM_STRING_LIST, "a, b", kUnbounded, kUnbounded),
    spec("pattern", VIGIL_PARAM_REGEX, ".*relu.*", kUnbounded, kUnbounded),
    spec("reduction", VIGIL_PARAM_ENUM, "mean", kUnbounded, kUnbounded, 0, kReductionChoices),
};
constexpr uint32_t kSpecCount = sizeof(kSpecs) / sizeof(kSpecs[0]);

bool in_bounds(const vigil_param_spec& s, double v) {
  return (std::isnan(s.min_value) || v >= s.min_value) && (std::isnan(s.max_value) || v <= s.max_value);
}

void check_parsed(const vigil_param_spec& s, const ParsedParam& p) {
  FUZZ_CHECK(p.type == s.type && p.is_set);
  switch (s.type) {
    case VIGIL_PARAM_INT64: FUZZ_CHECK(in_bounds(s, double(p.i))); break;
    case VIGIL_PARAM_DOUBLE: FUZZ_CHECK(!std::isnan(p.d) && in_bounds(s, p.d)); break;
    case VIGIL_PARAM_ENUM: {
      bool is_choice = false;
      for (auto c = s.choices; *c; ++c) is_choice |= p.text == *c;
      FUZZ_CHECK(is_choice);
      break;
    }
    case VIGIL_PARAM_STRING_LIST:
      for (const auto& item : p.list) FUZZ_CHECK(!item.empty() && item.find(',') == std::string::npos);
      break;
    default: break;
  }
}

void fuzz_one_value(std::string_view input) {
  if (input.empty()) return;
  const vigil_param_spec& s = kSpecs[uint8_t(input.front()) % kSpecCount];
  auto parsed = parse_param_value(s, input.substr(1));
  if (parsed) check_parsed(s, *parsed);
  else FUZZ_CHECK(!parsed.error().empty());
}

void fuzz_parameter_set(std::string_view input, bool extra_params) {
  std::map<std::string, std::string> given;
  while (!input.empty()) {
    const size_t newline = input.find('\n');
    const std::string_view line = input.substr(0, newline);
    const size_t equals = line.find('=');
    given[std::string(line.substr(0, equals))] = equals == std::string_view::npos ? "" : std::string(line.substr(equals + 1));
    if (newline == std::string_view::npos) break;
    input.remove_prefix(newline + 1);
  }
  const vigil_rule_descriptor rule{.struct_size = sizeof(vigil_rule_descriptor),
                                   .id = "fuzz.AllKinds",
                                   .name = "AllKinds",
                                   .version = "1",
                                   .description = "every parameter kind",
                                   .params = kSpecs,
                                   .param_count = kSpecCount,
                                   .flags = extra_params ? uint32_t(VIGIL_RULEF_EXTRA_PARAMS) : 0u};
  auto bound = BoundParams::bind(rule, given, "fuzz");
  if (!bound) {
    FUZZ_CHECK(!bound.error().message.empty());
    return;
  }
  // The C views a plugin receives must survive a move of the BoundParams and agree with the parse.
  BoundParams params = std::move(*bound);
  FUZZ_CHECK(params.size() == kSpecCount);
  for (uint32_t i = 0; i < params.size(); ++i) {
    const vigil_param_value& v = params.data()[i];
    const ParsedParam& p = params.parsed()[i];
    FUZZ_CHECK(v.type == kSpecs[i].type && v.is_set == p.is_set);
    if (!v.is_set) continue;
    check_parsed(kSpecs[i], p);
    FUZZ_CHECK(v.text != nullptr && std::strlen(v.text) == std::strlen(p.text.c_str()));
    FUZZ_CHECK(v.list_count == p.list.size() && v.list[v.list_count] == nullptr);
    for (size_t k = 0; k < v.list_count; ++k) FUZZ_CHECK(p.list[k] == v.list[k]);
  }
  for (uint32_t i = 0; i < params.extra_count(); ++i)
    FUZZ_CHECK(given.at(params.extra_names()[i]) == params.extra_values()[i]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) fuzz_one_value(input);
  else fuzz_parameter_set(input, (data[0] & 2) != 0);
  return 0;
}
