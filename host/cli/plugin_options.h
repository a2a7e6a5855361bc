// Command-line handling shared by `vigil rules` and `vigil evaluate`: plugin directories.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "plugin_host/plugin_loader.h"

namespace vigil::cli {

// Loads every plugin from the search path (--plugins dirs, VIGIL_PLUGIN_PATH, the install folder).
inline plugins::PluginRegistry load_plugins(const std::vector<std::string>& plugin_dirs) {
  plugins::PluginRegistry registry;
  for (const auto& dir : plugins::plugin_directories(plugin_dirs)) registry.load_directory(dir);
  return registry;
}

inline void print_refusals(const plugins::PluginRegistry& registry, std::FILE* out) {
  for (const auto& r : registry.refused())
    std::fprintf(out, "vigil: refused plugin %s: %s\n", r.path.c_str(), r.reason.c_str());
}

}  // namespace vigil::cli
