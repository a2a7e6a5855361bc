#include "params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vigil/sdk/text.hpp>

namespace vigil::profiler_rules {

using sdk::trim;

std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  if (text.front() == '+') text.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

Result<ParamValues> ParamValues::parse(std::string_view rule, std::span<const sdk::ParamSpec> specs,
                                       const TextParams& given) {
  for (const auto& [name, text] : given) {
    (void)text;
    if (std::none_of(specs.begin(), specs.end(), [&](const sdk::ParamSpec& s) { return s.name() == name; }))
      return sdk::fail(Error::invalid_argument(fmt::format("{} is an invalid parameter name! {} has: {}", name, rule,
                                                           [&] {
                                                             std::string names;
                                                             for (const auto& s : specs)
                                                               names += (names.empty() ? "" : ", ") + std::string(s.name());
                                                             return names;
                                                           }())));
  }
  ParamValues out;
  for (const sdk::ParamSpec& spec : specs) {
    Value v;
    v.name = std::string(spec.name());
    if (auto it = given.find(v.name); it != given.end()) v.text = it->second;
    else if (spec.default_text()) v.text = spec.default_text();
    // Python's str(None): an optional parameter left unset.
    if (v.text && trim(*v.text) == "None" && spec.type() == VIGIL_PARAM_STRING) v.text.reset();
    if (v.text) {
      switch (spec.type()) {
        case VIGIL_PARAM_INT64:
        case VIGIL_PARAM_DOUBLE: {
          const auto n = parse_number(*v.text);
          const bool percentile = spec.has_max();
          const auto refuse = [&] {
            return sdk::fail(Error::invalid_argument(fmt::format(
                "{} {} must be a {}! (got \"{}\")", rule, v.name, percentile ? "valid percentile" : "positive integer",
                *v.text)));
          };
          if (!n || std::isnan(*n)) return refuse();
          if (percentile && !(*n >= 0 && *n <= 100)) return refuse();
          // scan_interval_us's descriptor says >= 1; the rules config's check is > 0 for all of them.
          if (!percentile && spec.has_min() && !(*n > 0 && *n >= spec.min_value())) return refuse();
          if (spec.type() == VIGIL_PARAM_INT64 && (std::floor(*n) != *n || !std::isfinite(*n))) return refuse();
          v.number = *n;
          break;
        }
        case VIGIL_PARAM_BOOL: {
          const auto b = sdk::parse_bool(*v.text);
          if (!b)
            return sdk::fail(
                Error::invalid_argument(fmt::format("{} {} must be True or False (got \"{}\")", rule, v.name, *v.text)));
          v.boolean = *b;
          break;
        }
        default: break;
      }
    }
    out.values_.push_back(std::move(v));
  }
  return out;
}

Result<ParamValues> ParamValues::from_params(std::string_view rule, std::span<const sdk::ParamSpec> specs,
                                             const sdk::Params& params) {
  TextParams given;
  for (const sdk::ParamSpec& spec : specs) {
    if (!params.is_set(spec.name())) continue;
    auto text = params.get<std::string>(spec.name());
    if (!text) return sdk::fail(std::move(text).error());
    given[std::string(spec.name())] = *text;
  }
  return parse(rule, specs, given);
}

const ParamValues::Value* ParamValues::find(std::string_view name) const {
  for (const Value& v : values_)
    if (v.name == name) return &v;
  return nullptr;
}

double ParamValues::number(std::string_view name) const {
  const Value* v = find(name);
  return v ? v->number : 0;
}
int64_t ParamValues::integer(std::string_view name) const { return static_cast<int64_t>(number(name)); }
bool ParamValues::boolean(std::string_view name) const {
  const Value* v = find(name);
  return v && v->boolean;
}
std::optional<std::string> ParamValues::text(std::string_view name) const {
  const Value* v = find(name);
  return v ? v->text : std::nullopt;
}

std::string ParamValues::parameters_text() const {
  std::string out;
  for (const Value& v : values_) {
    if (!out.empty()) out += '\n';
    out += v.name + ":" + (v.text ? std::string(trim(*v.text)) : std::string("None"));
  }
  return out;
}

}  // namespace vigil::profiler_rules
