// Vigil C++ SDK: Host, a non-owning view of the host services table with feature checks.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "vigil/sdk/error.hpp"

namespace vigil::sdk::inline v1 {

// The host's vigil_host_api table. Host tables are append-only: a slot is usable when it lies inside
// the host's struct_size (VIGIL_HAS_FIELD) and is not NULL; fn() answers both at once.
class Host {
 public:
  constexpr Host() noexcept = default;
  constexpr explicit Host(const vigil_host_api* api) noexcept : api_(api) {}

  constexpr const vigil_host_api* get() const noexcept { return api_; }
  constexpr explicit operator bool() const noexcept { return api_ != nullptr; }

  // The slot `member` (e.g. &vigil_host_api::tensor_names) if this host has it, else nullptr.
  template <class Fn>
  Fn fn(Fn vigil_host_api::*member) const noexcept {
    if (!api_) return nullptr;
    const auto offset = static_cast<size_t>(reinterpret_cast<const char*>(&(api_->*member)) -
                                            reinterpret_cast<const char*>(api_));
    if (static_cast<size_t>(api_->struct_size) < offset + sizeof(Fn)) return nullptr;
    return api_->*member;
  }

  // host.has(&vigil_host_api::wait_for_steps)
  template <class Fn>
  bool has(Fn vigil_host_api::*member) const noexcept {
    return fn(member) != nullptr;
  }

  vigil_version abi() const noexcept {
    if (!VIGIL_HAS_FIELD(api_, vigil_host_api, abi)) return vigil_version{0, 0, 0};
    return api_->abi;
  }
  std::string_view name() const noexcept {
    if (!VIGIL_HAS_FIELD(api_, vigil_host_api, host_name) || !api_->host_name) return {};
    return api_->host_name;
  }
  std::string_view version() const noexcept {
    if (!VIGIL_HAS_FIELD(api_, vigil_host_api, host_version) || !api_->host_version) return {};
    return api_->host_version;
  }

  // An extension table by id ("vigil.<name>/<revision>"), or nullptr when the host lacks it.
  const void* get_extension(const char* id) const noexcept {
    auto f = fn(&vigil_host_api::get_extension);
    return f && id ? f(api_, id) : nullptr;
  }

  // The same, typed: host.extension<vigil_foo_ext>("vigil.foo/1"). `T` is the struct the id's
  // documentation names; it starts with uint32_t struct_size, and fields appended to it after the
  // revision's first release are read after VIGIL_HAS_FIELD. nullptr when the host lacks the id.
  // The table stays valid until the plugin's deinit returns: keep the pointer.
  template <class T>
  const T* extension(const char* id) const noexcept {
    static_assert(std::is_same_v<decltype(T::struct_size), uint32_t>,
                  "an extension table starts with uint32_t struct_size");
    return static_cast<const T*>(get_extension(id));
  }

 private:
  const vigil_host_api* api_ = nullptr;
};

namespace detail {

// Calls a host slot with a fresh vigil_error appended: Result<void> with the host's Error on failure,
// VIGIL_E_NOT_SUPPORTED when the host lacks the slot.
template <class Fn, class... Args>
[[nodiscard]] Result<void> call_host(const Host& host, Fn vigil_host_api::*member, std::string_view what, Args&&... args) {
  auto f = host.fn(member);
  if (!f) return fail(Error::not_supported(fmt::format("the host does not provide {}", what)));
  vigil_error err{};
  err.struct_size = sizeof(vigil_error);
  const vigil_status status = f(std::forward<Args>(args)..., &err);
  if (status == VIGIL_OK) return {};
  return fail(Error::from_abi(status, &err));
}

}  // namespace detail

}  // namespace vigil::sdk::inline v1
