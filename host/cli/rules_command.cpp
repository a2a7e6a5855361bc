// `vigil rules`: every rule the plugins provide, with its parameters, and every refused plugin.
#include <algorithm>
#include <cmath>
#include <optional>
#include <cstdio>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plugin_options.h"
#include "evaluate/rule_groups.h"
#include "plugin_host/profiles.h"

namespace vigil::cli {
namespace {

constexpr std::string_view kUsage = R"(usage: vigil rules [--plugins DIR]... [--allow-insecure-plugins] [--group NAME] [--json | --markdown]
                   [--groups]

Lists every rule the loaded plugins provide (name = the rule_to_invoke value, id, plugin and its
build_info, parameters with their types, defaults and bounds; the calibrated profile's default where
it differs from SageMaker's) and every plugin that was refused, with why. Plugins are searched in --plugins directories (absolute paths), then VIGIL_PLUGIN_PATH
(':'-separated), then the installation's lib/vigil/plugins. A plugin file, or a folder on its path,
that another user could write or that belongs to neither you nor root is refused.

options:
  --plugins DIR   also load plugins from DIR (repeatable)
  --allow-insecure-plugins
                  load plugins that fail the ownership and permission checks
                  (VIGIL_ALLOW_INSECURE_PLUGINS=1 does the same)
  --group NAME    only the rules of a SageMaker rule group (see --groups)
  --groups        list the rule groups
  --json          machine-readable output
  --markdown      the rules' documentation as Markdown (how docs/rules.md is made)
  -h, --help      show this help
)";

std::string_view type_name(vigil_param_type t) {
  switch (t) {
    case VIGIL_PARAM_BOOL: return "bool";
    case VIGIL_PARAM_INT64: return "int";
    case VIGIL_PARAM_DOUBLE: return "float";
    case VIGIL_PARAM_STRING: return "string";
    case VIGIL_PARAM_STRING_LIST: return "list";
    case VIGIL_PARAM_REGEX: return "regex";
    case VIGIL_PARAM_ENUM: return "enum";
  }
  return "?";
}

// The parameter's default in the calibrated profile when it differs from SageMaker's, else nullptr.
const char* calibrated_default(const vigil_rule_descriptor& d, const vigil_param_spec& p) {
  const char* c = plugin_host::profile_default(d, p, VIGIL_PROFILE_CALIBRATED);
  const bool same = c == p.default_text || (c && p.default_text && std::string_view(c) == p.default_text);
  return same ? nullptr : c;
}

nlohmann::ordered_json param_json(const vigil_rule_descriptor& d, const vigil_param_spec& p) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  j["type"] = type_name(p.type);
  j["required"] = (p.flags & VIGIL_PARAMF_REQUIRED) != 0;
  j["default"] = p.default_text ? nlohmann::ordered_json(p.default_text) : nlohmann::ordered_json(nullptr);
  if (const char* c = calibrated_default(d, p)) j["calibrated_default"] = c;
  if (!std::isnan(p.min_value)) j["min"] = p.min_value;
  if (!std::isnan(p.max_value)) j["max"] = p.max_value;
  if (p.type == VIGIL_PARAM_ENUM) {
    auto choices = nlohmann::ordered_json::array();
    for (auto c = p.choices; c && *c; ++c) choices.push_back(*c);
    j["choices"] = choices;
  }
  j["description"] = p.description ? p.description : "";
  return j;
}

// A '|' ends a Markdown table cell even inside backticks.
std::string escape_pipes(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The rule groups a built-in rule belongs to.
std::vector<std::string> groups_of(std::string_view rule_name) {
  std::vector<std::string> groups;
  for (const auto& g : evaluate::rule_groups())
    if (std::find(g.rules.begin(), g.rules.end(), rule_name) != g.rules.end()) groups.emplace_back(g.name);
  return groups;
}

std::string markdown(const std::vector<const plugin_host::RuleType*>& rules) {
  std::string out;
  for (const auto* r : rules) {
    const auto* d = r->descriptor;
    out += fmt::format("## {}\n\n", d->name);
    out += fmt::format("`rule_to_invoke`: `{}` · id `{}` · plugin `{}`", d->name, d->id, r->plugin_id);
    const auto groups = groups_of(d->name);
    if (!groups.empty()) out += fmt::format(" · groups: {}", fmt::join(groups, ", "));
    out += "\n\n";
    if (d->description && *d->description) out += std::string(d->description) + "\n\n";
    if (d->param_count == 0) {
      out += "Parameters: none.\n\n";
      continue;
    }
    out += "| parameter | type | default | calibrated | bounds | description |\n| --- | --- | --- | --- | --- | --- |\n";
    for (uint32_t i = 0; i < d->param_count; ++i) {
      const auto& p = d->params[i];
      std::string bounds;
      if (!std::isnan(p.min_value)) bounds += fmt::format(">= {}", p.min_value);
      if (!std::isnan(p.max_value)) bounds += fmt::format("{}<= {}", bounds.empty() ? "" : ", ", p.max_value);
      if (p.type == VIGIL_PARAM_ENUM) {
        std::vector<std::string> choices;
        for (auto c = p.choices; c && *c; ++c) choices.emplace_back(*c);
        bounds += fmt::format("one of {}", fmt::join(choices, ", "));
      }
      std::string description = p.description ? p.description : "";
      for (auto& ch : description)
        if (ch == '\n') ch = ' ';
      description = escape_pipes(description);
      const char* calibrated = calibrated_default(*d, p);
      out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", p.name, type_name(p.type),
                         p.default_text ? fmt::format("`{}`", escape_pipes(p.default_text))
                                        : std::string((p.flags & VIGIL_PARAMF_REQUIRED) ? "required" : "none"),
                         calibrated ? fmt::format("`{}`", escape_pipes(calibrated)) : std::string("same"),
                         bounds.empty() ? "—" : bounds, description);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

int run_rules(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  bool allow_insecure = false;
  bool json = false;
  bool md = false;
  std::optional<std::string> group_name;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(kUsage.data(), stdout);
      return kExitOk;
    } else if (args[i] == kAllowInsecurePlugins) {
      allow_insecure = true;
    } else if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--markdown") {
      md = true;
    } else if (args[i] == "--groups") {
      for (const auto& g : evaluate::rule_groups())
        std::cout << fmt::format("{:<26} {}\n{:<26} {}\n", g.name, g.description, "", fmt::join(g.rules, ", "));
      return kExitOk;
    } else if (args[i] == "--group" && i + 1 < args.size()) {
      group_name = args[++i];
    } else if (args[i] == "--plugins" && i + 1 < args.size()) {
      dirs.push_back(args[++i]);
    } else {
      std::fprintf(stderr, "vigil rules: unexpected argument '%s'\n\n%s", args[i].c_str(), kUsage.data());
      return kExitUsage;
    }
  }
  auto registry = load_plugins(dirs, load_options(allow_insecure));
  // The rules to show: all loaded ones, or a group's (in the group's order).
  std::vector<const plugin_host::RuleType*> shown;
  if (group_name) {
    const auto* group = evaluate::find_rule_group(*group_name);
    if (!group) {
      std::fprintf(stderr, "vigil rules: unknown group '%s' (vigil rules --groups lists them)\n", group_name->c_str());
      return kExitUsage;
    }
    for (auto name : group->rules) {
      if (const auto* r = registry.find(name)) shown.push_back(r);
      else std::fprintf(stderr, "vigil rules: rule %.*s of group %s is not loaded\n", int(name.size()), name.data(),
                        group_name->c_str());
    }
  } else {
    for (const auto& r : registry.rules()) shown.push_back(&r);
  }
  if (md) {
    std::cout << markdown(shown);
    return kExitOk;
  }
  if (json) {
    nlohmann::ordered_json out;
    auto rules = nlohmann::ordered_json::array();
    for (const auto* rp : shown) {
      const auto& r = *rp;
      const auto* d = r.descriptor;
      nlohmann::ordered_json j;
      j["name"] = d->name;
      j["id"] = d->id;
      j["version"] = d->version ? d->version : "";
      j["description"] = d->description ? d->description : "";
      j["plugin"] = r.plugin_id;
      j["plugin_path"] = r.plugin_path.string();
      j["build_info"] = r.build_info;
      j["multi_trial"] = (d->flags & VIGIL_RULEF_MULTI_TRIAL) != 0;
      // Which job list runs it: "debug" (DebugRuleConfigurations) or "profiler".
      j["kind"] = evaluate::builtin_rule_kind(d->name) == evaluate::RuleKind::Profiler ? "profiler" : "debug";
      j["groups"] = groups_of(d->name);
      auto params = nlohmann::ordered_json::array();
      for (uint32_t i = 0; i < d->param_count; ++i) params.push_back(param_json(*d, d->params[i]));
      j["parameters"] = params;
      rules.push_back(j);
    }
    out["rules"] = rules;
    auto refused = nlohmann::ordered_json::array();
    for (const auto& r : registry.refused())
      refused.push_back({{"path", r.path.string()}, {"reason", r.reason}, {"status", int(r.code)}});
    out["refused_plugins"] = refused;
    std::cout << out.dump(2) << '\n';
    return kExitOk;
  }
  if (registry.rules().empty()) std::puts("no rules loaded (give --plugins DIR or set VIGIL_PLUGIN_PATH)");
  for (const auto* rp : shown) {
    const auto& r = *rp;
    const auto* d = r.descriptor;
    std::cout << fmt::format("{}  ({}, plugin {}{}{})\n", d->name, d->id, r.plugin_path.filename().string(),
                             r.build_info.empty() ? "" : ", built with ", r.build_info);
    if (d->description && *d->description) std::cout << "    " << d->description << '\n';
    for (uint32_t i = 0; i < d->param_count; ++i) {
      const auto& p = d->params[i];
      std::string bounds;
      if (!std::isnan(p.min_value)) bounds += fmt::format(" min {}", p.min_value);
      if (!std::isnan(p.max_value)) bounds += fmt::format(" max {}", p.max_value);
      const char* calibrated = calibrated_default(*d, p);
      std::cout << fmt::format("    {:<28} {:<7} default {}{}{}{}\n", p.name, type_name(p.type),
                               p.default_text ? fmt::format("\"{}\"", p.default_text) : std::string("(none)"),
                               calibrated ? fmt::format(" (calibrated \"{}\")", calibrated) : std::string(), bounds,
                               (p.flags & VIGIL_PARAMF_REQUIRED) ? " required" : "");
    }
  }
  for (const auto& r : registry.refused())
    std::cout << fmt::format("refused: {}: {}\n", r.path.string(), r.reason);
  return kExitOk;
}

}  // namespace vigil::cli
