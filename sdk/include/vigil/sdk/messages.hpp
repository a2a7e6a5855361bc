// Vigil C++ SDK: the names of modes and status codes, and smdebug's exception messages (str(e) of
// each smdebug.exceptions class), word for word. The one copy: the SDK's Error factories and the
// host's both format their messages here.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "vigil/sdk/version.hpp"

namespace vigil::sdk::inline v1 {

// smdebug's ModeKeys names: "TRAIN", "EVAL", "PREDICT", "GLOBAL" ("UNKNOWN" otherwise).
[[nodiscard]] constexpr std::string_view mode_name(vigil_mode mode) noexcept {
  switch (mode) {
    case VIGIL_MODE_TRAIN: return "TRAIN";
    case VIGIL_MODE_EVAL: return "EVAL";
    case VIGIL_MODE_PREDICT: return "PREDICT";
    case VIGIL_MODE_GLOBAL: return "GLOBAL";
    default: return "UNKNOWN";
  }
}

// The C name of a status code ("VIGIL_E_CANCELLED"); "VIGIL_E_UNKNOWN" for codes this SDK does not know.
[[nodiscard]] inline std::string_view status_name(vigil_status status) noexcept {
  const char* name = vigil_status_name(status);
  return name ? name : "VIGIL_E_UNKNOWN";
}

// The exception class a status code stands for (status.h's list: smdebug's class where it has one,
// else Vigil's own: "MemoryError", "VersionMismatch", ...); "SMDebugError" for unknown codes.
[[nodiscard]] constexpr std::string_view exception_name(vigil_status status) noexcept {
  switch (status) {
#define VIGIL_SDK_EXCEPTION_NAME_(name, cpp_name, value, cls, exception, origin) \
  case name:                                                                     \
    return #exception;
    VIGIL_STATUS_LIST(VIGIL_SDK_EXCEPTION_NAME_)
#undef VIGIL_SDK_EXCEPTION_NAME_
    default: return "SMDebugError";
  }
}

namespace messages {

[[nodiscard]] inline std::string tensor_unavailable_for_step(std::string_view tensor, vigil_step step, vigil_mode mode,
                                                             bool has_reductions) {
  std::string m = fmt::format("Value for tensor {} is not available for step {} with mode {} as it was not saved.",
                              tensor, step, mode_name(mode));
  if (has_reductions)
    m += "This tensor has reductions saved for this step. You might want to query for the reductions.";
  return m;
}

[[nodiscard]] inline std::string tensor_unavailable(std::string_view tensor) {
  return fmt::format("Tensor {} was not saved.", tensor);
}

[[nodiscard]] inline std::string step_unavailable(vigil_step step, vigil_mode mode) {
  return fmt::format("Step {} of mode {} is not available as it was not saved", step, mode_name(mode));
}

[[nodiscard]] inline std::string step_not_yet_available(vigil_step step, vigil_mode mode) {
  return fmt::format("Step {} of mode {} not yet available", step, mode_name(mode));
}

[[nodiscard]] inline std::string no_more_data(vigil_step step, vigil_mode mode, vigil_step last_step) {
  return fmt::format("Looking for step {} of mode {} and reached end of training. Max step available is {}", step,
                     mode_name(mode), last_step);
}

[[nodiscard]] inline std::string invalid_worker(std::string_view worker) {
  return fmt::format("Invalid Worker: {}", worker);
}

[[nodiscard]] inline std::string shape_unavailable_for_step(std::string_view tensor, vigil_step step, vigil_mode mode) {
  return fmt::format("Shape for tensor {} is not available for step {} with mode {} as it was not saved.", tensor,
                     step, mode_name(mode));
}

[[nodiscard]] inline std::string condition_met(std::string_view rule, vigil_step step) {
  return fmt::format("Evaluation of the rule {} at step {} resulted in the condition being met", rule, step);
}

[[nodiscard]] inline std::string insufficient_information(std::string_view rule, std::string_view message) {
  return fmt::format("Insufficient information to invoke rule {}: {}", rule, message);
}

inline constexpr std::string_view kMissingCollectionFiles =
    "Training job has ended. All the collection files could not be loaded";

}  // namespace messages

}  // namespace vigil::sdk::inline v1
