#include "plugin_host/plugin_loader.h"

#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "plugin_host/host_services.h"
#include "plugin_host/param_values.h"

namespace vigil::plugins {

namespace fs = std::filesystem;

struct LoadedPlugin {
  boost::dll::shared_library library;
  const vigil_plugin_entry* entry = nullptr;
  bool initialised = false;
  ~LoadedPlugin() {
    try {
      if (initialised && entry->deinit) entry->deinit();
    } catch (...) {
      // A deinit that throws across the ABI is ignored: the library is going away anyway.
    }
    // Plugins that ask never to be unloaded (an embedded interpreter) keep their code mapped.
    if (entry && (entry->flags & VIGIL_PLUGINF_NO_UNLOAD)) new boost::dll::shared_library(std::move(library));
  }
};

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() = default;
PluginRegistry::PluginRegistry(PluginRegistry&&) noexcept = default;
PluginRegistry& PluginRegistry::operator=(PluginRegistry&&) noexcept = default;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

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

constexpr size_t kEntryV1Size = offsetof(vigil_plugin_entry, get_factory) + sizeof(void*);
constexpr size_t kFactoryV1Size = offsetof(vigil_rule_factory, create) + sizeof(void*);
constexpr size_t kDescriptorV1Size = offsetof(vigil_rule_descriptor, flags) + sizeof(uint32_t);

}  // namespace

std::string check_descriptor(const vigil_rule_descriptor* d) {
  if (!d) return "the factory returned a NULL descriptor";
  if (d->struct_size < kDescriptorV1Size) return fmt::format("descriptor struct_size {} is too small", d->struct_size);
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
  return {};
}

Result<void> PluginRegistry::load_file(const fs::path& file) {
  auto refuse = [&](std::string reason) -> Result<void> {
    refused_.push_back({file, reason});
    return fail(Error{.code = ErrorCode::VersionMismatch, .message = fmt::format("{}: {}", file.string(), reason)});
  };
  if (!file.is_absolute()) return refuse("plugins are loaded from absolute paths only");
  auto plugin = std::make_shared<LoadedPlugin>();
  try {
    plugin->library.load(boost::dll::fs::path(file.string()),
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return refuse(fmt::format("cannot load: {}", e.what()));
  }
  if (!plugin->library.has(VIGIL_PLUGIN_ENTRY_SYMBOL))
    return refuse(fmt::format("no entry symbol {} (not a Vigil plugin, or built for another ABI major)",
                              VIGIL_PLUGIN_ENTRY_SYMBOL));
  auto entry_fn = plugin->library.get<const vigil_plugin_entry*(uint32_t, uint32_t)>(VIGIL_PLUGIN_ENTRY_SYMBOL);
  auto entry_or = call_plugin("the entry function", [&] { return entry_fn(VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR); });
  if (!entry_or) return refuse(entry_or.error());
  const vigil_plugin_entry* entry = *entry_or;
  if (!entry)
    return refuse(fmt::format("the plugin declined host ABI {}.{} (it needs a newer host)", VIGIL_ABI_MAJOR,
                              VIGIL_ABI_MINOR));
  if (entry->struct_size < kEntryV1Size) return refuse(fmt::format("entry struct_size {} is too small", entry->struct_size));
  if (entry->abi.major != VIGIL_ABI_MAJOR)
    return refuse(fmt::format("built for ABI {}.{}, the host speaks ABI {}.{}", entry->abi.major, entry->abi.minor,
                              VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR));
  if (!nonempty(entry->plugin_id)) return refuse("the entry has no plugin_id");
  if (!entry->init || !entry->get_factory) return refuse("the entry lacks init or get_factory");
  plugin->entry = entry;

  vigil_error err{};
  err.struct_size = sizeof(err);
  auto init_or = call_plugin("init", [&] { return entry->init(host_api(), file.c_str(), &err); });
  if (!init_or) return refuse(init_or.error());
  const vigil_status st = *init_or;
  if (st != VIGIL_OK) {
    std::string msg(err.message, strnlen(err.message, sizeof(err.message)));
    if (st == VIGIL_E_VERSION_MISMATCH)
      return refuse(fmt::format("init refused the host's ABI {}.{}: {}", VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, msg));
    return refuse(fmt::format("init failed with status {}: {}", st, msg));
  }
  plugin->initialised = true;

  auto factory_or = call_plugin("get_factory", [&] { return entry->get_factory(VIGIL_RULE_FACTORY_ID); });
  if (!factory_or) return refuse(factory_or.error());
  auto* factory = static_cast<const vigil_rule_factory*>(*factory_or);
  if (!factory) return refuse(fmt::format("no factory {}", VIGIL_RULE_FACTORY_ID));
  if (factory->struct_size < kFactoryV1Size || !factory->count || !factory->descriptor || !factory->create)
    return refuse("the rule factory is incomplete");

  std::vector<RuleType> found;
  auto count_or = call_plugin("the factory's count", [&] { return factory->count(factory); });
  if (!count_or) return refuse(count_or.error());
  for (uint32_t i = 0; i < *count_or; ++i) {
    auto d_or = call_plugin("the factory's descriptor", [&] { return factory->descriptor(factory, i); });
    if (!d_or) return refuse(d_or.error());
    const vigil_rule_descriptor* d = *d_or;
    if (std::string problem = check_descriptor(d); !problem.empty()) return refuse(problem);
    auto clash = [&](const RuleType& r) {
      return std::string_view(r.descriptor->id) == d->id || iequals(r.descriptor->name, d->name);
    };
    if (auto it = std::find_if(rules_.begin(), rules_.end(), clash); it != rules_.end())
      return refuse(fmt::format("rule {} ({}) is already provided by {}", d->id, d->name, it->plugin_path.string()));
    if (std::any_of(found.begin(), found.end(), clash))
      return refuse(fmt::format("rule {} ({}) is declared twice", d->id, d->name));
    found.push_back(RuleType{d, factory, plugin, file, entry->plugin_id});
  }
  rules_.insert(rules_.end(), found.begin(), found.end());
  return {};
}

void PluginRegistry::load_directory(const fs::path& dir) {
  if (!dir.is_absolute()) {
    // Never resolved against the working directory: that would load whatever it happens to hold.
    refused_.push_back({dir, "plugin directories must be absolute paths (a relative one would depend on the working "
                             "directory)"});
    return;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    refused_.push_back({dir, "no such plugin directory"});
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

}  // namespace vigil::plugins
