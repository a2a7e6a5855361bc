#include "plugin_host/plugin_loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "common/os.h"
#include "plugin_host/elf_search_path.h"
#include "plugin_host/host_services.h"
#include "plugin_host/param_values.h"
#include "plugin_host/profiles.h"
#include <vigil/sdk/text.hpp>

namespace vigil::plugin_host {

namespace fs = std::filesystem;

namespace {

using sdk::iequals;

// Which plugin libraries are initialised, process-wide. A library loaded again while it is loaded
// (by another registry, or through another path to the same file) is the same mapped code, so it has
// the same entry: init runs for its first user only and deinit after its last, as plugin.h promises.
// The mutex also serializes every init and deinit ([loader]).
struct InitTable {
  std::mutex mu;
  std::map<const vigil_plugin_entry*, int> users;
};

InitTable& init_table() {
  static InitTable table;  // built by the first load: outlives every registry, static ones included
  return table;
}

}  // namespace

struct LoadedPlugin {
  boost::dll::shared_library library;
  const vigil_plugin_entry* entry = nullptr;
  bool initialised = false;  // counted in init_table()
  ~LoadedPlugin() {
    if (initialised) {
      InitTable& table = init_table();
      std::lock_guard lock(table.mu);
      if (--table.users[entry] == 0) {
        table.users.erase(entry);
        try {
          if (entry->deinit) entry->deinit();
        } catch (...) {
          // A deinit that throws across the ABI is ignored: the library is going away anyway.
        }
      }
    }
    // Plugins that ask never to be unloaded (an embedded interpreter) keep their code mapped.
    if (entry && (entry->flags & VIGIL_PLUGINF_NO_UNLOAD)) new boost::dll::shared_library(std::move(library));
  }
};

LoadOptions LoadOptions::from_environment() {
  const char* allow = std::getenv("VIGIL_ALLOW_INSECURE_PLUGINS");
  return LoadOptions{.allow_insecure = allow && std::string_view(allow) == "1"};
}

PluginRegistry::PluginRegistry(LoadOptions options) : options_(options) {}
PluginRegistry::~PluginRegistry() = default;
PluginRegistry::PluginRegistry(PluginRegistry&&) noexcept = default;
PluginRegistry& PluginRegistry::operator=(PluginRegistry&&) noexcept = default;

namespace {

bool nonempty(const char* s) { return s && *s; }

// Calls into plugin code: a C++ exception thrown across the C ABI becomes a refusal reason.
template <typename Fn>
auto call_plugin(const char* what, Fn&& fn) -> std::expected<decltype(fn()), std::string> {
  try {
    return fn();
  } catch (const std::exception& e) {
    return std::unexpected(fmt::format("{} threw a C++ exception across the C ABI: {}", what, e.what()));
  } catch (...) {
    return std::unexpected(fmt::format("{} threw a C++ exception across the C ABI", what));
  }
}

constexpr std::string_view kAllowHint =
    "; pass --allow-insecure-plugins or set VIGIL_ALLOW_INSECURE_PLUGINS=1 to load it anyway";

}  // namespace

// Checking the folders of the real path, not of the path given, makes symlinks harmless: the checked
// chain is the loaded one. The file is then opened again by that path, a window in which only a user
// the checks trust (its owner, or root) could replace it, since no folder on the way is writable by
// anyone else.
Result<fs::path> trusted_real_path(const fs::path& file, bool allow_insecure) {
  auto io_error = [&](std::string message) { return fail(Error{.code = ErrorCode::Io, .message = std::move(message)}); };
  os::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return io_error(fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  const bool stat_ok = ::fstat(fd.get(), &st) == 0;
  const int stat_errno = errno;
  std::error_code ec;
  const fs::path real = fs::read_symlink(fmt::format("/proc/self/fd/{}", fd.get()), ec);
  fd.reset();
  if (!stat_ok) return io_error(fmt::format("cannot stat: {}", std::strerror(stat_errno)));
  if (!S_ISREG(st.st_mode)) return io_error("not a regular file");
  if (ec || !real.is_absolute()) return io_error(fmt::format("cannot resolve its real path: {}", ec.message()));
  if (allow_insecure) return real;
  if (std::string problem = trust_problem(st, ::geteuid()); !problem.empty())
    return io_error(fmt::format("not trusted: the file {} {}{}", real.string(), problem, kAllowHint));
  if (auto folders = trusted_folder_chain(real.parent_path(), false); !folders) return fail(folders.error());
  return real;
}

namespace {

// The folders the dynamic loader searches first for a trusted library's own dependencies (its
// DT_RPATH and DT_RUNPATH, $ORIGIN expanded) pass the folder checks too: a dependency in a folder
// another user may write is that user's code. An entry that is relative or empty (the working
// directory) or names another token ($LIB, $PLATFORM) is refused; a folder not there yet is judged
// by the nearest folder above it that is, where it would be made.
Result<void> trusted_dependency_folders(const fs::path& real) {
  auto io_error = [&](std::string message) { return fail(Error{.code = ErrorCode::Io, .message = std::move(message)}); };
  auto entries = elf_library_search_path(real);
  if (!entries) return io_error(entries.error().message);
  const std::string origin = real.parent_path().string();
  for (const std::string& written : *entries) {
    std::string entry = written;
    for (const std::string_view token : {"${ORIGIN}", "$ORIGIN"})
      for (size_t at = entry.find(token); at != std::string::npos; at = entry.find(token, at + origin.size()))
        entry.replace(at, token.size(), origin);
    if (entry.find('$') != std::string::npos || !entry.starts_with('/'))
      return io_error(fmt::format("not trusted: its library search path entry '{}' depends on the working directory or "
                                  "the platform{}",
                                  written, kAllowHint));
    std::error_code ec;
    fs::path dir = fs::weakly_canonical(entry, ec);
    if (ec) return io_error(fmt::format("cannot resolve its library search path entry '{}': {}", written, ec.message()));
    while (!fs::is_directory(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
    if (auto chain = trusted_folder_chain(dir, false); !chain)
      return io_error(fmt::format("its library search path entry '{}': {}", written, chain.error().message));
  }
  return {};
}

}  // namespace

Result<void> trusted_folder_chain(const fs::path& real_dir, bool allow_insecure) {
  if (allow_insecure) return {};
  auto io_error = [&](std::string message) { return fail(Error{.code = ErrorCode::Io, .message = std::move(message)}); };
  const uid_t euid = ::geteuid();
  for (fs::path dir = real_dir;; dir = dir.parent_path()) {
    struct stat ds {};
    if (::lstat(dir.c_str(), &ds) != 0) return io_error(fmt::format("cannot stat {}: {}", dir.string(), std::strerror(errno)));
    // A real path holds no symlinks: one found now was put there since the path was resolved.
    if (!S_ISDIR(ds.st_mode)) return io_error(fmt::format("not trusted: {} changed while it was checked", dir.string()));
    if (std::string problem = trust_problem(ds, euid); !problem.empty())
      return io_error(fmt::format("not trusted: the folder {} {}{}", dir.string(), problem, kAllowHint));
    if (dir == dir.root_path()) break;
  }
  return {};
}

std::string check_descriptor(const vigil_rule_descriptor* d) {
  if (!d) return "the factory returned a NULL descriptor";
  if (!VIGIL_HAS_FIELD(d, vigil_rule_descriptor, flags))
    return fmt::format("descriptor struct_size {} is too small", d->struct_size);
  if (!nonempty(d->id)) return "a rule descriptor has no id";
  if (!nonempty(d->name)) return fmt::format("rule {} has no name", d->id);
  if (d->param_count > 0 && !d->params) return fmt::format("rule {} declares {} parameters but no array", d->id, d->param_count);
  std::set<std::string> names;
  for (uint32_t i = 0; i < d->param_count; ++i) {
    const vigil_param_spec& p = d->params[i];
    // Specs are array elements: the layout cannot grow, so the size must be exactly ours.
    if (p.struct_size != sizeof(vigil_param_spec))
      return fmt::format("rule {}: parameter {} has struct_size {} (expected {})", d->id, i, p.struct_size,
                         sizeof(vigil_param_spec));
    if (!nonempty(p.name)) return fmt::format("rule {}: parameter {} has no name", d->id, i);
    if (!names.insert(p.name).second) return fmt::format("rule {}: parameter {} is declared twice", d->id, p.name);
    if (p.type < VIGIL_PARAM_BOOL || p.type > VIGIL_PARAM_ENUM)
      return fmt::format("rule {}: parameter {} has unknown type {}", d->id, p.name, p.type);
    if (p.type == VIGIL_PARAM_ENUM && (!p.choices || !p.choices[0]))
      return fmt::format("rule {}: enum parameter {} has no choices", d->id, p.name);
    if (!std::isnan(p.min_value) && !std::isnan(p.max_value) && p.min_value > p.max_value)
      return fmt::format("rule {}: parameter {} has min > max", d->id, p.name);
    if (p.default_text) {
      auto parsed = parse_param_value(p, p.default_text);
      if (!parsed) return fmt::format("rule {}: the default of {} is invalid: {}", d->id, p.name, parsed.error());
    }
  }
  // ABI 1.2: profile defaults name a known profile and a declared parameter, once, with a valid value.
  if (VIGIL_HAS_FIELD(d, vigil_rule_descriptor, profile_default_count) && d->profile_default_count > 0 &&
      !d->profile_defaults)
    return fmt::format("rule {} declares {} profile defaults but no array", d->id, d->profile_default_count);
  std::set<std::pair<std::string, std::string>> seen;
  for (const vigil_profile_default& pd : profile_defaults(d)) {
    if (pd.struct_size != sizeof(vigil_profile_default))
      return fmt::format("rule {}: a profile default has struct_size {} (expected {})", d->id, pd.struct_size,
                         sizeof(vigil_profile_default));
    if (!nonempty(pd.profile) || !find_profile(pd.profile) || pd.profile == kDefaultProfile)
      return fmt::format("rule {}: a profile default names profile '{}' (profiles with defaults of their own: {})",
                         d->id, pd.profile ? pd.profile : "(NULL)", VIGIL_PROFILE_CALIBRATED);
    const vigil_param_spec* spec = nullptr;
    for (uint32_t i = 0; i < d->param_count; ++i)
      if (pd.param && std::strcmp(d->params[i].name, pd.param) == 0) spec = &d->params[i];
    if (!spec)
      return fmt::format("rule {}: the {} default of '{}' names no declared parameter", d->id, pd.profile,
                         pd.param ? pd.param : "(NULL)");
    if (!seen.emplace(pd.profile, pd.param).second)
      return fmt::format("rule {}: parameter {} has two {} defaults", d->id, pd.param, pd.profile);
    if (!pd.default_text) return fmt::format("rule {}: the {} default of {} is NULL", d->id, pd.profile, pd.param);
    auto parsed = parse_param_value(*spec, pd.default_text);
    if (!parsed)
      return fmt::format("rule {}: the {} default of {} is invalid: {}", d->id, pd.profile, pd.param, parsed.error());
  }
  return {};
}

std::string trust_problem(const struct stat& st, uid_t euid) {
  if (st.st_uid != euid && st.st_uid != 0)
    return fmt::format("belongs to uid {} (neither the user running vigil, uid {}, nor root)", st.st_uid, euid);
  const bool sticky_root_folder = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0;
  if (sticky_root_folder) return {};
  const unsigned mode = st.st_mode & 07777;
  if (st.st_mode & S_IWOTH) return fmt::format("is writable by every user (mode {:04o})", mode);
  if (st.st_mode & S_IWGRP) return fmt::format("is writable by its group, gid {} (mode {:04o})", st.st_gid, mode);
  return {};
}

Result<void> PluginRegistry::load_file(const fs::path& file) {
  auto refuse = [&](ErrorCode code, std::string reason) -> Result<void> {
    refused_.push_back({file, reason, code});
    return fail(Error{.code = code, .message = fmt::format("{}: {}", file.string(), reason)});
  };
  constexpr ErrorCode kBroken = ErrorCode::PluginFailure;  // the library breaks the contract
  if (!file.is_absolute()) return refuse(ErrorCode::InvalidArgument, "plugins are loaded from absolute paths only");
  auto real = trusted_real_path(file, options_.allow_insecure);
  if (!real) return refuse(real.error().code, real.error().message);
  if (!options_.allow_insecure)
    if (auto folders = trusted_dependency_folders(*real); !folders) return refuse(folders.error().code, folders.error().message);
  auto plugin = std::make_shared<LoadedPlugin>();
  try {
    plugin->library.load(boost::dll::fs::path(real->string()),
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return refuse(kBroken, fmt::format("cannot load: {}", e.what()));
  }
  if (!plugin->library.has(VIGIL_PLUGIN_ENTRY_SYMBOL))
    return refuse(ErrorCode::VersionMismatch,
                  fmt::format("no entry symbol {} (not a Vigil plugin, or built for another ABI major)",
                              VIGIL_PLUGIN_ENTRY_SYMBOL));
  auto entry_fn = plugin->library.get<const vigil_plugin_entry*(uint32_t, uint32_t)>(VIGIL_PLUGIN_ENTRY_SYMBOL);
  auto entry_or = call_plugin("the entry function", [&] { return entry_fn(VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR); });
  if (!entry_or) return refuse(kBroken, entry_or.error());
  const vigil_plugin_entry* entry = *entry_or;
  if (!entry)
    return refuse(ErrorCode::VersionMismatch, fmt::format("the plugin declined host ABI {}.{} (it needs a newer host)",
                                                          VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR));
  if (!VIGIL_HAS_FIELD(entry, vigil_plugin_entry, get_factory))
    return refuse(kBroken, fmt::format("entry struct_size {} is too small", entry->struct_size));
  // The one check that decides compatibility (version.h): the major the entry says it was built for.
  if (entry->abi.major != VIGIL_ABI_MAJOR)
    return refuse(ErrorCode::VersionMismatch, fmt::format("built for ABI {}.{}, the host speaks ABI {}.{}",
                                                          entry->abi.major, entry->abi.minor, VIGIL_ABI_MAJOR,
                                                          VIGIL_ABI_MINOR));
  if (!nonempty(entry->plugin_id)) return refuse(kBroken, "the entry has no plugin_id");
  if (!entry->init || !entry->get_factory) return refuse(kBroken, "the entry lacks init or get_factory");
  plugin->entry = entry;

  {
    InitTable& table = init_table();
    std::lock_guard lock(table.mu);
    if (auto it = table.users.find(entry); it != table.users.end()) {
      ++it->second;  // already initialised for another user of the same library
    } else {
      vigil_error err{};
      err.struct_size = sizeof(err);
      auto init_or = call_plugin("init", [&] { return entry->init(host_api(), file.c_str(), &err); });
      if (!init_or) return refuse(kBroken, init_or.error());
      if (const vigil_status st = *init_or; st != VIGIL_OK) {
        const Error e = error_from_abi(st, err);
        if (st == VIGIL_E_VERSION_MISMATCH)
          return refuse(e.code, fmt::format("init refused the host's ABI {}.{}: {}", VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR,
                                            e.message));
        return refuse(e.code, fmt::format("init failed with status {}: {}", st, e.message));
      }
      table.users.emplace(entry, 1);
    }
    plugin->initialised = true;
  }

  auto factory_or = call_plugin("get_factory", [&] { return entry->get_factory(VIGIL_RULE_FACTORY_ID); });
  if (!factory_or) return refuse(kBroken, factory_or.error());
  auto* factory = static_cast<const vigil_rule_factory*>(*factory_or);
  if (!factory) return refuse(kBroken, fmt::format("no factory {}", VIGIL_RULE_FACTORY_ID));
  if (!VIGIL_HAS_FIELD(factory, vigil_rule_factory, create) || !factory->count || !factory->descriptor || !factory->create)
    return refuse(kBroken, "the rule factory is incomplete");
  // ABI 1.4: the optional rule preparer. A plugin built against an older minor never knew its id, so
  // it is not asked (a get_factory that ignored the id would hand back its factory).
  const vigil_rule_preparer* preparer = nullptr;
  if (entry->abi.minor >= 4) {
    auto preparer_or = call_plugin("get_factory", [&] { return entry->get_factory(VIGIL_RULE_PREPARER_ID); });
    if (!preparer_or) return refuse(kBroken, preparer_or.error());
    preparer = static_cast<const vigil_rule_preparer*>(*preparer_or);
    if (preparer && (!VIGIL_HAS_FIELD(preparer, vigil_rule_preparer, prepare) || !preparer->prepare))
      return refuse(kBroken, "the rule preparer is incomplete");
  }

  const std::string build_info = entry->build_info ? entry->build_info : "";
  std::vector<RuleType> found;
  auto count_or = call_plugin("the factory's count", [&] { return factory->count(factory); });
  if (!count_or) return refuse(kBroken, count_or.error());
  for (uint32_t i = 0; i < *count_or; ++i) {
    auto d_or = call_plugin("the factory's descriptor", [&] { return factory->descriptor(factory, i); });
    if (!d_or) return refuse(kBroken, d_or.error());
    const vigil_rule_descriptor* d = *d_or;
    if (std::string problem = check_descriptor(d); !problem.empty()) return refuse(kBroken, problem);
    auto clash = [&](const RuleType& r) {
      return std::string_view(r.descriptor->id) == d->id || iequals(r.descriptor->name, d->name);
    };
    if (auto it = std::find_if(rules_.begin(), rules_.end(), clash); it != rules_.end())
      return refuse(ErrorCode::InvalidArgument, fmt::format("rule {} ({}) is already provided by {}", d->id, d->name,
                                                            it->plugin_path.string()));
    if (std::any_of(found.begin(), found.end(), clash))
      return refuse(kBroken, fmt::format("rule {} ({}) is declared twice", d->id, d->name));
    found.push_back(RuleType{d, factory, preparer, plugin, file, entry->plugin_id, build_info, entry->abi.minor});
  }
  rules_.insert(rules_.end(), found.begin(), found.end());
  return {};
}

void PluginRegistry::load_directory(const fs::path& dir) {
  if (!dir.is_absolute()) {
    // Never resolved against the working directory: that would load whatever it happens to hold.
    refused_.push_back({dir,
                        "plugin directories must be absolute paths (a relative one would depend on the working "
                        "directory)",
                        ErrorCode::InvalidArgument});
    return;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    refused_.push_back({dir, "no such plugin directory", ErrorCode::Io});
    return;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".so" && e.is_regular_file(ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) (void)load_file(f);
}

const RuleType* PluginRegistry::find(std::string_view name_or_id) const {
  for (const auto& r : rules_)
    if (r.descriptor->id == name_or_id) return &r;
  for (const auto& r : rules_)
    if (iequals(r.descriptor->name, name_or_id)) return &r;
  return nullptr;
}

std::vector<fs::path> plugin_directories(const std::vector<std::string>& from_command_line) {
  std::vector<fs::path> dirs;
  for (const auto& d : from_command_line) dirs.emplace_back(d);
  if (const char* env = std::getenv("VIGIL_PLUGIN_PATH")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      std::string_view part = rest.substr(0, colon);
      if (!part.empty()) dirs.emplace_back(std::string(part));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path own = exe.parent_path().parent_path() / VIGIL_PLUGIN_SUBDIR;
    if (fs::is_directory(own, ec)) dirs.push_back(own);
  }
  // The same directory given twice is loaded once.
  std::vector<fs::path> unique;
  for (auto& d : dirs) {
    auto canon = d.is_absolute() ? fs::weakly_canonical(d, ec) : d;
    if (std::find(unique.begin(), unique.end(), canon) == unique.end()) unique.push_back(canon);
  }
  return unique;
}

}  // namespace vigil::plugin_host
