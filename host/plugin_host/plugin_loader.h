// Finds, loads and checks rule plugins (Boost.DLL, RTLD_NOW | RTLD_LOCAL, absolute paths only).
// A plugin that cannot be used is refused with a reason and the others are still loaded.
#pragma once

#include <vigil/vigil.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::plugins {

struct LoadedPlugin;  // the library, its entry and its rule factory; unloaded when the last user goes

struct RuleType {
  const vigil_rule_descriptor* descriptor;
  const vigil_rule_factory* factory;
  std::shared_ptr<LoadedPlugin> plugin;
  std::filesystem::path plugin_path;
  std::string plugin_id;
};

struct PluginRefusal {
  std::filesystem::path path;
  std::string reason;
};

class PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();
  PluginRegistry(PluginRegistry&&) noexcept;
  PluginRegistry& operator=(PluginRegistry&&) noexcept;

  // Loads every "*.so" file of an absolute directory, in name order. A relative or missing
  // directory is recorded as a refusal.
  void load_directory(const std::filesystem::path& dir);
  // Loads one plugin; on refusal records it and returns the reason.
  Result<void> load_file(const std::filesystem::path& file);

  const std::vector<RuleType>& rules() const { return rules_; }
  const std::vector<PluginRefusal>& refused() const { return refused_; }
  // By rule_to_invoke name (case-insensitive, like SageMaker's invoker) or by rule id.
  const RuleType* find(std::string_view name_or_id) const;

 private:
  std::vector<RuleType> rules_;
  std::vector<PluginRefusal> refused_;
};

// The plugin directories in search order: those given on the command line (--plugins), then
// VIGIL_PLUGIN_PATH (':'-separated), then the installation's own folder (<exe>/../<libdir>/vigil/plugins, GNUInstallDirs).
std::vector<std::filesystem::path> plugin_directories(const std::vector<std::string>& from_command_line);

// Checks a descriptor's fields (ids, names, parameter specs and their defaults); empty when valid.
std::string check_descriptor(const vigil_rule_descriptor* d);

}  // namespace vigil::plugins
