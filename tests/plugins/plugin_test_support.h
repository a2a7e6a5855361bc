// Shared helpers for the plugin and evaluator tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "plugins/plugin_loader.h"

namespace vigil::testing {

inline std::filesystem::path variant_dir(const std::string& name) {
  return std::filesystem::path(VIGIL_TEST_PLUGIN_DIR) / name;
}

inline plugins::PluginRegistry registry_with(std::initializer_list<const char*> variants) {
  plugins::PluginRegistry registry;
  for (const char* v : variants) registry.load_directory(variant_dir(v));
  return registry;
}

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(VIGIL_SHARED_DIR) / "fixtures" / "smdebug-real" / name;
}

}  // namespace vigil::testing
