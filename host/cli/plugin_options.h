// Command-line handling shared by `vigil rules` and `vigil evaluate`: plugin directories and
// --allow-insecure-plugins.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "plugin_host/plugin_loader.h"

namespace vigil::cli {

// Loads plugins that fail the ownership and permission checks (VIGIL_ALLOW_INSECURE_PLUGINS=1 too).
inline constexpr const char* kAllowInsecurePlugins = "--allow-insecure-plugins";

// The loader's options: from the environment, and --allow-insecure-plugins when given.
inline plugin_host::LoadOptions load_options(bool allow_insecure_flag) {
  auto options = plugin_host::LoadOptions::from_environment();
  options.allow_insecure = options.allow_insecure || allow_insecure_flag;
  return options;
}

// Loads every plugin from the search path (--plugins dirs, VIGIL_PLUGIN_PATH, the install folder).
inline plugin_host::PluginRegistry load_plugins(const std::vector<std::string>& plugin_dirs,
                                            plugin_host::LoadOptions options) {
  plugin_host::PluginRegistry registry(options);
  for (const auto& dir : plugin_host::plugin_directories(plugin_dirs)) registry.load_directory(dir);
  return registry;
}

inline void print_refusals(const plugin_host::PluginRegistry& registry, std::FILE* out) {
  for (const auto& r : registry.refused())
    std::fprintf(out, "vigil: refused plugin %s: %s\n", r.path.c_str(), r.reason.c_str());
}

}  // namespace vigil::cli
