// `vigil rules`: every rule the plugins provide, with its parameters, and every refused plugin.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plugin_options.h"

namespace vigil::cli {
namespace {

constexpr std::string_view kUsage = R"(usage: vigil rules [--plugins DIR]... [--json]

Lists every rule the loaded plugins provide (name = the rule_to_invoke value, id, plugin,
parameters with their types, defaults and bounds) and every plugin that was refused, with why.
Plugins are searched in --plugins directories (absolute paths), then VIGIL_PLUGIN_PATH
(':'-separated), then the installation's lib/vigil/plugins.

options:
  --plugins DIR   also load plugins from DIR (repeatable)
  --json          machine-readable output
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

nlohmann::ordered_json param_json(const vigil_param_spec& p) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  j["type"] = type_name(p.type);
  j["required"] = (p.flags & VIGIL_PARAMF_REQUIRED) != 0;
  j["default"] = p.default_text ? nlohmann::ordered_json(p.default_text) : nlohmann::ordered_json(nullptr);
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

}  // namespace

int run_rules(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(kUsage.data(), stdout);
      return kExitOk;
    } else if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--plugins" && i + 1 < args.size()) {
      dirs.push_back(args[++i]);
    } else {
      std::fprintf(stderr, "vigil rules: unexpected argument '%s'\n\n%s", args[i].c_str(), kUsage.data());
      return kExitUsage;
    }
  }
  auto registry = load_plugins(dirs);
  if (json) {
    nlohmann::ordered_json out;
    auto rules = nlohmann::ordered_json::array();
    for (const auto& r : registry.rules()) {
      const auto* d = r.descriptor;
      nlohmann::ordered_json j;
      j["name"] = d->name;
      j["id"] = d->id;
      j["version"] = d->version ? d->version : "";
      j["description"] = d->description ? d->description : "";
      j["plugin"] = r.plugin_id;
      j["plugin_path"] = r.plugin_path.string();
      j["multi_trial"] = (d->flags & VIGIL_RULEF_MULTI_TRIAL) != 0;
      auto params = nlohmann::ordered_json::array();
      for (uint32_t i = 0; i < d->param_count; ++i) params.push_back(param_json(d->params[i]));
      j["parameters"] = params;
      rules.push_back(j);
    }
    out["rules"] = rules;
    auto refused = nlohmann::ordered_json::array();
    for (const auto& r : registry.refused()) refused.push_back({{"path", r.path.string()}, {"reason", r.reason}});
    out["refused_plugins"] = refused;
    std::cout << out.dump(2) << '\n';
    return kExitOk;
  }
  if (registry.rules().empty()) std::puts("no rules loaded (give --plugins DIR or set VIGIL_PLUGIN_PATH)");
  for (const auto& r : registry.rules()) {
    const auto* d = r.descriptor;
    std::cout << fmt::format("{}  ({}, plugin {})\n", d->name, d->id, r.plugin_path.filename().string());
    if (d->description && *d->description) std::cout << "    " << d->description << '\n';
    for (uint32_t i = 0; i < d->param_count; ++i) {
      const auto& p = d->params[i];
      std::string bounds;
      if (!std::isnan(p.min_value)) bounds += fmt::format(" min {}", p.min_value);
      if (!std::isnan(p.max_value)) bounds += fmt::format(" max {}", p.max_value);
      std::cout << fmt::format("    {:<28} {:<7} default {}{}{}\n", p.name, type_name(p.type),
                               p.default_text ? fmt::format("\"{}\"", p.default_text) : std::string("(none)"), bounds,
                               (p.flags & VIGIL_PARAMF_REQUIRED) ? " required" : "");
    }
  }
  for (const auto& r : registry.refused())
    std::cout << fmt::format("refused: {}: {}\n", r.path.string(), r.reason);
  return kExitOk;
}

}  // namespace vigil::cli
