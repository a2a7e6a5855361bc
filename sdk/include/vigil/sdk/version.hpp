// Vigil C++ SDK: version numbers, the ABI range this SDK speaks, and the feature switches.
//
// The SDK is header-only and built on the C ABI headers alone (abi/include/vigil/*.h). Everything
// lives in the versioned inline namespace vigil::sdk::v1, so two plugins built with different SDK
// versions can never clash on a symbol even if they are loaded RTLD_GLOBAL.
#pragma once

#include <vigil/vigil.h>

#define VIGIL_SDK_VERSION_MAJOR 1
#define VIGIL_SDK_VERSION_MINOR 5
#define VIGIL_SDK_VERSION_PATCH 0
#define VIGIL_SDK_VERSION_STRING "1.5.0"

// The ABI majors this SDK supports (the clap-helpers version-check idea): exactly major 1.
static_assert(VIGIL_ABI_MAJOR == 1, "this Vigil SDK speaks the rule-plugin ABI major 1 only");
static_assert(VIGIL_ABI_MINOR >= 0, "unexpected ABI minor");

#if !defined(__cplusplus) || __cplusplus < 202100L
#error "the Vigil SDK needs C++23 (-std=c++23)"
#endif

#include <version>
#if !defined(__cpp_lib_expected) || __cpp_lib_expected < 202202L
#error "the Vigil SDK needs std::expected (<expected>, C++23)"
#endif

// VIGIL_SDK_EXCEPTIONS is 1 when the SDK may throw: C++ exceptions are enabled and the author did
// not define VIGIL_SDK_NO_EXCEPTIONS. Without it, value_or_throw() and the other throwing helpers
// are absent and only the Result<T> API remains. The trampolines still catch whatever the standard
// library throws as long as the compiler has exceptions enabled.
#if defined(__cpp_exceptions) && !defined(VIGIL_SDK_NO_EXCEPTIONS)
#define VIGIL_SDK_EXCEPTIONS 1
#else
#define VIGIL_SDK_EXCEPTIONS 0
#endif

#define VIGIL_SDK_STRINGIFY_(x) #x
#define VIGIL_SDK_STRINGIFY(x) VIGIL_SDK_STRINGIFY_(x)

#if defined(__clang__)
#define VIGIL_SDK_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define VIGIL_SDK_COMPILER "gcc " __VERSION__
#else
#define VIGIL_SDK_COMPILER "unknown compiler"
#endif

// What a plugin reports in vigil_plugin_entry::build_info.
#define VIGIL_SDK_BUILD_INFO                                                                        \
  "vigil-sdk " VIGIL_SDK_VERSION_STRING "; abi " VIGIL_SDK_STRINGIFY(VIGIL_ABI_MAJOR) "." VIGIL_SDK_STRINGIFY( \
      VIGIL_ABI_MINOR) "; " VIGIL_SDK_COMPILER "; c++ " VIGIL_SDK_STRINGIFY(__cplusplus)

namespace vigil::sdk::inline v1 {

// The ABI version this plugin was compiled against (what vigil_plugin_entry::abi says).
inline constexpr vigil_version kAbiVersion{VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, VIGIL_ABI_PATCH};

namespace detail {
template <class...>
inline constexpr bool always_false = false;
}  // namespace detail

}  // namespace vigil::sdk::inline v1
