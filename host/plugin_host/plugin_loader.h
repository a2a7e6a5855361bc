// Finds, loads and checks rule plugins (Boost.DLL, RTLD_NOW | RTLD_LOCAL, absolute paths only).
// A plugin that cannot be used is refused with a reason and the others are still loaded.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <vigil/vigil.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::plugin_host {

struct LoadedPlugin;  // the library, its entry and its rule factory; unloaded when the last user goes

struct RuleType {
  const vigil_rule_descriptor* descriptor;
  const vigil_rule_factory* factory;
  // ABI 1.4: the plugin's rule preparer (plugin.h), NULL when it offers none or predates 1.4.
  const vigil_rule_preparer* preparer = nullptr;
  std::shared_ptr<LoadedPlugin> plugin;
  std::filesystem::path plugin_path;
  std::string plugin_id;
  std::string build_info;  // the entry's build_info ("" when the plugin gives none)
  uint16_t abi_minor = 0;  // the ABI minor the plugin was built against (what its views may carry)
};

struct PluginRefusal {
  std::filesystem::path path;
  std::string reason;
  ErrorCode code = ErrorCode::PluginFailure;
};

struct LoadOptions {
  // Loads plugins that fail the ownership and permission checks (see trust_problem) instead of
  // refusing them: `--allow-insecure-plugins`, or VIGIL_ALLOW_INSECURE_PLUGINS=1 in the environment.
  bool allow_insecure = false;

  // allow_insecure from VIGIL_ALLOW_INSECURE_PLUGINS ("1" allows; anything else does not).
  static LoadOptions from_environment();
};

class PluginRegistry {
 public:
  explicit PluginRegistry(LoadOptions options = LoadOptions::from_environment());
  ~PluginRegistry();
  PluginRegistry(PluginRegistry&&) noexcept;
  PluginRegistry& operator=(PluginRegistry&&) noexcept;

  // Loads every "*.so" file of an absolute directory, in name order. A relative or missing
  // directory is recorded as a refusal.
  void load_directory(const std::filesystem::path& dir);
  // Loads one plugin; on refusal records it and returns the reason, with the code that says why:
  // InvalidArgument (a relative path, a rule another plugin already provides), Io (cannot open or
  // stat the file, or it fails the trust checks), VersionMismatch (another ABI major, or the
  // plugin declines this host), the plugin's own status when its init fails, and PluginFailure for
  // a library that does not load or breaks the contract (bad entry, factory or descriptor, a C++
  // exception across the ABI).
  Result<void> load_file(const std::filesystem::path& file);

  const std::vector<RuleType>& rules() const { return rules_; }
  const std::vector<PluginRefusal>& refused() const { return refused_; }
  const LoadOptions& options() const { return options_; }
  // By rule_to_invoke name (case-insensitive, like SageMaker's invoker) or by rule id.
  const RuleType* find(std::string_view name_or_id) const;

 private:
  LoadOptions options_;
  std::vector<RuleType> rules_;
  std::vector<PluginRefusal> refused_;
};

// The plugin directories in search order: those given on the command line (--plugins), then
// VIGIL_PLUGIN_PATH (':'-separated), then the installation's own folder (<exe>/../<libdir>/vigil/plugins, GNUInstallDirs).
std::vector<std::filesystem::path> plugin_directories(const std::vector<std::string>& from_command_line);

// Checks a descriptor's fields (ids, names, parameter specs and their defaults); empty when valid.
std::string check_descriptor(const vigil_rule_descriptor* d);

// Why a plugin file, or a folder on the way to it, is not to be trusted by a process running as
// `euid` (empty when it is): another user could write it (group- or world-writable), or it belongs
// to neither `euid` nor root. A root-owned folder with the sticky bit (like /tmp) is trusted, as the
// dynamic loader's secure mode and sshd's StrictModes trust it: only a file's owner can replace it.
std::string trust_problem(const struct stat& st, uid_t euid);

// The one trust check of code Vigil runs (plugin libraries, Python rule files): opens `file` and
// checks it by its descriptor, resolves its real path from the descriptor and checks every folder
// of that path up to / (trusted_folder_chain). Returns the real path, which is what is to be run;
// Io errors say why ("not trusted: the folder /srv/rules is writable by every user ...; pass
// --allow-insecure-plugins ..."). With allow_insecure only the file's kind is checked.
[[nodiscard]] Result<std::filesystem::path> trusted_real_path(const std::filesystem::path& file, bool allow_insecure);
// The folder checks alone, for an absolute path without symlinks (a real path's folder).
[[nodiscard]] Result<void> trusted_folder_chain(const std::filesystem::path& real_dir, bool allow_insecure);

}  // namespace vigil::plugin_host
