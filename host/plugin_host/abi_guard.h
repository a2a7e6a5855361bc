// How the host's C ABI functions (host services, extensions) report: a host Error becomes a status
// code plus the caller's vigil_error, and nothing thrown crosses the ABI.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <new>

#include <vigil/sdk/error.hpp>

#include "common/error.h"
#include "plugin_host/host_services.h"

namespace vigil::plugin_host {

[[nodiscard]] inline vigil_status status_of(const Error& e) { return static_cast<vigil_status>(e.code); }

// Runs `fn`, turning anything it throws into VIGIL_E_INTERNAL (VIGIL_E_OUT_OF_MEMORY for bad_alloc).
// On VIGIL_OK it sets err->code as status.h promises.
template <typename Fn>
[[nodiscard]] vigil_status guarded(vigil_error* err, Fn&& fn) noexcept {
  try {
    const vigil_status status = fn();
    if (status == VIGIL_OK) sdk::write_error_ok(err);
    return status;
  } catch (const std::bad_alloc&) {
    fill_abi_error(Error{.code = ErrorCode::OutOfMemory, .message = "out of memory"}, err);
    return VIGIL_E_OUT_OF_MEMORY;
  } catch (const std::exception& ex) {
    fill_abi_error(Error::internal(fmt::format("host error: {}", ex.what())), err);
    return VIGIL_E_INTERNAL;
  } catch (...) {
    fill_abi_error(Error::internal("host error: unknown exception"), err);
    return VIGIL_E_INTERNAL;
  }
}

[[nodiscard]] inline vigil_status fail_with(const Error& e, vigil_error* err) {
  fill_abi_error(e, err);
  return status_of(e);
}

[[nodiscard]] inline vigil_status bad_argument(const char* what, vigil_error* err) {
  return fail_with(Error::invalid_argument(what), err);
}

}  // namespace vigil::plugin_host
