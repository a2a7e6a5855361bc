// The host's ABI extensions: optional services a plugin asks for by versioned id
// ("vigil.<name>/<revision>") through vigil_host_api::get_extension (docs/plugin-abi.md, "Extensions").
#pragma once

#include <string>
#include <string_view>

namespace vigil::plugin_host {

// The table registered under `id`, or nullptr. [any-thread]
const void* find_extension(std::string_view id) noexcept;

// True for "<namespace>.<name>/<revision>": lower-case letters, digits, '.', '-' and '_' before the
// slash (at least one '.'), a revision of digits without a leading zero after it.
bool valid_extension_id(std::string_view id) noexcept;

// Offers `table` under `id` while this object lives; the tables the host always offers are listed in
// extensions.cpp instead. For hosts embedding the evaluator and for tests. The id must be valid and
// not offered already (std::invalid_argument otherwise); the table must outlive every plugin that
// may have fetched it.
class ExtensionRegistration {
 public:
  ExtensionRegistration(std::string_view id, const void* table);
  ~ExtensionRegistration();
  ExtensionRegistration(const ExtensionRegistration&) = delete;
  ExtensionRegistration& operator=(const ExtensionRegistration&) = delete;

 private:
  std::string id_;
};

}  // namespace vigil::plugin_host
