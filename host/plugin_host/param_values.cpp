#include "plugin_host/param_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "common/regex_limits.h"
#include "plugin_host/profiles.h"
#include <vigil/sdk/text.hpp>

namespace vigil::plugin_host {

namespace {

using sdk::lower;
using sdk::trim;

std::string bounds_text(const vigil_param_spec& spec) {
  if (!std::isnan(spec.min_value) && !std::isnan(spec.max_value))
    return fmt::format("between {} and {}", spec.min_value, spec.max_value);
  if (!std::isnan(spec.min_value)) return fmt::format(">= {}", spec.min_value);
  return fmt::format("<= {}", spec.max_value);
}

bool in_bounds(const vigil_param_spec& spec, double v) {
  return (std::isnan(spec.min_value) || v >= spec.min_value) && (std::isnan(spec.max_value) || v <= spec.max_value);
}

}  // namespace

std::expected<ParsedParam, std::string> parse_param_value(const vigil_param_spec& spec, std::string_view raw) {
  ParsedParam p;
  p.type = spec.type;
  p.is_set = true;
  p.text = std::string(raw);
  const std::string_view text = trim(raw);
  switch (spec.type) {
    case VIGIL_PARAM_BOOL: {
      const auto b = sdk::parse_bool(text);
      if (!b) return std::unexpected("expected True or False");
      p.b = *b;
      return p;
    }
    case VIGIL_PARAM_INT64: {
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), p.i);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::unexpected("expected an integer");
      if (!in_bounds(spec, double(p.i))) return std::unexpected("must be " + bounds_text(spec));
      return p;
    }
    case VIGIL_PARAM_DOUBLE: {
      std::string t(text);
      char* end = nullptr;
      p.d = std::strtod(t.c_str(), &end);
      if (t.empty() || end != t.c_str() + t.size() || std::isnan(p.d)) return std::unexpected("expected a number");
      if (!in_bounds(spec, p.d)) return std::unexpected("must be " + bounds_text(spec));
      return p;
    }
    case VIGIL_PARAM_STRING: return p;
    case VIGIL_PARAM_STRING_LIST: {
      std::string_view rest = raw;
      while (true) {
        auto comma = rest.find(',');
        auto item = trim(rest.substr(0, comma));
        if (!item.empty()) p.list.emplace_back(item);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
      return p;
    }
    case VIGIL_PARAM_REGEX: {
      if (auto why = regex_limit_violation(p.text)) return std::unexpected("not an accepted regular expression: " + *why);
      try {
        std::regex re(p.text, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return std::unexpected(fmt::format("not a valid regular expression ({})", e.what()));
      }
      return p;
    }
    case VIGIL_PARAM_ENUM: {
      for (auto c = spec.choices; c && *c; ++c)
        if (lower(*c) == lower(text)) {
          p.text = *c;
          return p;
        }
      std::string options;
      for (auto c = spec.choices; c && *c; ++c) options += (options.empty() ? "" : ", ") + std::string(*c);
      return std::unexpected("expected one of " + options);
    }
  }
  return std::unexpected("unknown parameter type");
}

Result<BoundParams> BoundParams::bind(const vigil_rule_descriptor& rule, const std::map<std::string, std::string>& given,
                                      std::string_view configuration_name, std::string_view profile) {
  BoundParams out;
  for (const auto& [name, value] : given) {
    // Names and values reach the rule as C strings: an embedded NUL would silently cut them short
    // (JSON can carry one as "\u0000"), so such a parameter is refused instead.
    if (name.find('\0') != std::string::npos || value.find('\0') != std::string::npos)
      return fail(Error::invalid_argument(fmt::format("rule {} ({}): parameter '{}' contains a NUL character",
                                                      configuration_name, rule.name,
                                                      name.substr(0, name.find('\0')))));
    bool known = false;
    for (uint32_t i = 0; i < rule.param_count; ++i) known |= name == rule.params[i].name;
    if (!known && (rule.flags & VIGIL_RULEF_EXTRA_PARAMS)) {
      out.extras_.emplace_back(name, value);
      continue;
    }
    if (!known) {
      std::string names;
      for (uint32_t i = 0; i < rule.param_count; ++i) names += (i ? ", " : "") + std::string(rule.params[i].name);
      return fail(Error::invalid_argument(fmt::format("rule {} ({}): unknown parameter '{}' (parameters: {})",
                                                      configuration_name, rule.name, name,
                                                      names.empty() ? "none" : names)));
    }
  }
  for (uint32_t i = 0; i < rule.param_count; ++i) {
    const vigil_param_spec& spec = rule.params[i];
    auto it = given.find(spec.name);
    const char* text = it != given.end() ? it->second.c_str() : profile_default(rule, spec, profile);
    if (!text) {
      if (spec.flags & VIGIL_PARAMF_REQUIRED)
        return fail(Error::invalid_argument(
            fmt::format("rule {} ({}): required parameter '{}' is missing", configuration_name, rule.name, spec.name)));
      out.parsed_.push_back(ParsedParam{.type = spec.type, .is_set = false});
      continue;
    }
    auto parsed = parse_param_value(spec, text);
    if (!parsed)
      return fail(Error::invalid_argument(fmt::format("rule {} ({}): parameter '{}' has invalid value '{}': {}",
                                                      configuration_name, rule.name, spec.name, text, parsed.error())));
    out.parsed_.push_back(std::move(*parsed));
  }
  out.rebuild_views();
  return out;
}

void BoundParams::rebuild_views() {
  list_pointers_.clear();
  values_.clear();
  extra_name_ptrs_.clear();
  extra_value_ptrs_.clear();
  for (const auto& [name, value] : extras_) {
    extra_name_ptrs_.push_back(name.c_str());
    extra_value_ptrs_.push_back(value.c_str());
  }
  for (const auto& p : parsed_) {
    auto& ptrs = list_pointers_.emplace_back();
    for (const auto& s : p.list) ptrs.push_back(s.c_str());
    ptrs.push_back(nullptr);
  }
  for (size_t k = 0; k < parsed_.size(); ++k) {
    const auto& p = parsed_[k];
    vigil_param_value v{};
    v.type = p.type;
    v.is_set = p.is_set;
    v.text = p.is_set ? p.text.c_str() : nullptr;
    switch (p.type) {
      case VIGIL_PARAM_BOOL: v.v.b = p.b; break;
      case VIGIL_PARAM_INT64: v.v.i = p.i; break;
      case VIGIL_PARAM_DOUBLE: v.v.d = p.d; break;
      default: v.v.s = v.text; break;
    }
    v.list = list_pointers_[k].data();
    v.list_count = p.list.size();
    values_.push_back(v);
  }
}

}  // namespace vigil::plugin_host
