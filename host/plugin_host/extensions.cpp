#include "plugin_host/extensions.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin_host/profiler_extension.h"

namespace vigil::plugin_host {

namespace {

struct Extension {
  std::string id;
  const void* table;
};

struct Registry {
  std::mutex mu;
  // The extensions this host always offers, one line each: {"vigil.<name>/<revision>", &its_table}.
  std::vector<Extension> extensions = {
      {VIGIL_PROFILER_EXTENSION_ID, profiler_extension()},
  };
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const void* find_extension(std::string_view id) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = std::find_if(r.extensions.begin(), r.extensions.end(), [&](const Extension& e) { return e.id == id; });
  return it == r.extensions.end() ? nullptr : it->table;
}

bool valid_extension_id(std::string_view id) noexcept {
  const auto slash = id.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  const std::string_view name = id.substr(0, slash), revision = id.substr(slash + 1);
  const bool name_ok = name.find('.') != std::string_view::npos && name.front() != '.' && name.back() != '.' &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
                       });
  const bool revision_ok = !revision.empty() && revision.front() != '0' &&
                           std::all_of(revision.begin(), revision.end(), [](char c) { return c >= '0' && c <= '9'; });
  return name_ok && revision_ok;
}

ExtensionRegistration::ExtensionRegistration(std::string_view id, const void* table) {
  if (!valid_extension_id(id) || !table)
    throw std::invalid_argument("an extension needs an id \"<namespace>.<name>/<revision>\" and a table: " + std::string(id));
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (std::any_of(r.extensions.begin(), r.extensions.end(), [&](const Extension& e) { return e.id == id; }))
    throw std::invalid_argument("the extension " + std::string(id) + " is offered already");
  id_ = id;
  r.extensions.push_back({id_, table});
}

ExtensionRegistration::~ExtensionRegistration() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::erase_if(r.extensions, [&](const Extension& e) { return e.id == id_; });
}

}  // namespace vigil::plugin_host
