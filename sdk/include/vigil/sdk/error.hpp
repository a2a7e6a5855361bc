// Vigil C++ SDK: Error (a value copy of vigil_error) and Result<T>.
//
// Two styles, the author's choice:
//   * Result<T> = std::expected<T, Error> everywhere (VIGIL_TRY / VIGIL_TRY_VOID propagate it);
//   * exceptions with smdebug's names (exceptions.hpp, included at the end of this header):
//     value_or_throw(result) turns an Error into the matching exception; the plugin trampolines turn
//     any exception back into its status code.
#pragma once

#include <fmt/format.h>

#include <expected>
#include <string>
#include <string_view>
#include <utility>

#include "vigil/sdk/error_record.hpp"
#include "vigil/sdk/messages.hpp"
#include "vigil/sdk/version.hpp"

namespace vigil::sdk::inline v1 {

// A value copy of vigil_error: what failed, in smdebug's terms. Aggregate: build it with designated
// initializers or with the named factories below (which use smdebug's message wording).
struct Error {
  vigil_status code = VIGIL_E_INTERNAL;
  std::string message;  // str(e) in smdebug's wording where smdebug has the class
  std::string tensor;   // TensorUnavailable*, ShapeUnavailableForStep
  std::string worker;   // InvalidWorker
  std::string rule;     // RuleEvaluationConditionMet, InsufficientInformationForRuleInvocation
  vigil_step step = 0;
  vigil_mode mode = VIGIL_MODE_GLOBAL;
  vigil_step last_step = -1;  // NoMoreData
  bool has_reductions = false;  // TensorUnavailableForStep
  bool end_of_rule = false;     // RuleEvaluationConditionMet
  bool truncated = false;       // a string was cut on its way through a vigil_error

  // The exception class the code stands for (exception_name(): "TensorUnavailableForStep", ...,
  // "MemoryError" and Vigil's own for codes smdebug has no class for, "SMDebugError" for unknown codes).
  [[nodiscard]] std::string_view class_name() const noexcept { return exception_name(code); }

  [[nodiscard]] vigil_status_class classify() const noexcept { return vigil_status_classify(code); }
  [[nodiscard]] bool is_skip() const noexcept { return vigil_status_is_skip(code); }
  [[nodiscard]] bool is_wait() const noexcept { return vigil_status_is_wait(code); }
  [[nodiscard]] bool is_stop() const noexcept { return vigil_status_is_stop(code); }
  [[nodiscard]] bool is_signal() const noexcept { return vigil_status_is_signal(code); }
  [[nodiscard]] bool is_failure() const noexcept { return vigil_status_is_failure(code); }

  // "TensorUnavailableForStep: Value for tensor ... ", for logs.
  [[nodiscard]] std::string to_string() const { return fmt::format("{}: {}", class_name(), message); }

  // ---- crossing the ABI ----

  // The error a callee reported: `status` is its return value (authoritative); `err` may be NULL and
  // is read only as far as its struct_size reaches.
  [[nodiscard]] static Error from_abi(vigil_status status, const vigil_error* err) {
    const ErrorRecord r = read_error_record(status, err);
    Error e;
    e.code = r.code;
    e.message = r.message.empty() ? fmt::format("{} (status {})", status_name(status), status) : std::string(r.message);
    e.tensor = r.tensor;
    e.worker = r.worker;
    e.rule = r.rule;
    e.step = r.step;
    e.mode = r.mode;
    e.last_step = r.last_step;
    e.has_reductions = (r.flags & VIGIL_ERRF_HAS_REDUCTIONS) != 0;
    e.end_of_rule = (r.flags & VIGIL_ERRF_END_OF_RULE) != 0;
    e.truncated = (r.flags & VIGIL_ERRF_TRUNCATED) != 0;
    return e;
  }

  // Fills a caller-owned vigil_error (write_error_record). Never allocates; NULL is fine.
  void to_abi(vigil_error* err) const noexcept {
    uint32_t flags = 0;
    if (has_reductions) flags |= VIGIL_ERRF_HAS_REDUCTIONS;
    if (end_of_rule) flags |= VIGIL_ERRF_END_OF_RULE;
    if (truncated) flags |= VIGIL_ERRF_TRUNCATED;
    write_error_record(err, ErrorRecord{.code = code,
                                        .flags = flags,
                                        .mode = mode,
                                        .step = step,
                                        .last_step = last_step,
                                        .tensor = tensor,
                                        .worker = worker,
                                        .rule = rule,
                                        .message = message});
  }

  // ---- factories, in smdebug's wording (messages.hpp, the same wording the host uses) ----

  // An Error with just a code and a message.
  [[nodiscard]] static Error make(vigil_status code, std::string message = {}) {
    Error e;
    e.code = code;
    e.message = std::move(message);
    return e;
  }

  [[nodiscard]] static Error tensor_unavailable_for_step(std::string tensor, vigil_step step,
                                                         vigil_mode mode = VIGIL_MODE_GLOBAL,
                                                         bool has_reductions = false) {
    Error e = make(VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP,
                   messages::tensor_unavailable_for_step(tensor, step, mode, has_reductions));
    e.tensor = std::move(tensor);
    e.step = step;
    e.mode = mode;
    e.has_reductions = has_reductions;
    return e;
  }
  [[nodiscard]] static Error tensor_unavailable(std::string tensor) {
    Error e = make(VIGIL_E_TENSOR_UNAVAILABLE, messages::tensor_unavailable(tensor));
    e.tensor = std::move(tensor);
    return e;
  }
  [[nodiscard]] static Error step_unavailable(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) {
    Error e = make(VIGIL_E_STEP_UNAVAILABLE, messages::step_unavailable(step, mode));
    e.step = step;
    e.mode = mode;
    return e;
  }
  [[nodiscard]] static Error step_not_yet_available(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) {
    Error e = make(VIGIL_E_STEP_NOT_YET_AVAILABLE, messages::step_not_yet_available(step, mode));
    e.step = step;
    e.mode = mode;
    return e;
  }
  [[nodiscard]] static Error no_more_data(vigil_step step, vigil_mode mode, vigil_step last_step) {
    Error e = make(VIGIL_E_NO_MORE_DATA, messages::no_more_data(step, mode, last_step));
    e.step = step;
    e.mode = mode;
    e.last_step = last_step;
    return e;
  }
  [[nodiscard]] static Error index_reader(std::string message) {
    return make(VIGIL_E_INDEX_READER, std::move(message));
  }
  [[nodiscard]] static Error invalid_worker(std::string worker) {
    Error e = make(VIGIL_E_INVALID_WORKER, messages::invalid_worker(worker));
    e.worker = std::move(worker);
    return e;
  }
  [[nodiscard]] static Error shape_unavailable_for_step(std::string tensor, vigil_step step,
                                                        vigil_mode mode = VIGIL_MODE_GLOBAL) {
    Error e = make(VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP, messages::shape_unavailable_for_step(tensor, step, mode));
    e.tensor = std::move(tensor);
    e.step = step;
    e.mode = mode;
    return e;
  }
  [[nodiscard]] static Error condition_met(std::string rule, vigil_step step, bool end_of_rule = false) {
    Error e = make(VIGIL_S_RULE_CONDITION_MET, messages::condition_met(rule, step));
    e.rule = std::move(rule);
    e.step = step;
    e.end_of_rule = end_of_rule;
    return e;
  }
  [[nodiscard]] static Error insufficient_information(std::string rule, std::string message) {
    Error e = make(VIGIL_E_INSUFFICIENT_INFORMATION, messages::insufficient_information(rule, message));
    e.rule = std::move(rule);
    return e;
  }
  [[nodiscard]] static Error no_more_profiler_data(std::string message) {
    return make(VIGIL_E_NO_MORE_PROFILER_DATA, std::move(message));
  }
  [[nodiscard]] static Error missing_collection_files() {
    return make(VIGIL_E_MISSING_COLLECTION_FILES, std::string(messages::kMissingCollectionFiles));
  }
  [[nodiscard]] static Error invalid_collection_configuration(std::string message) {
    return make(VIGIL_E_INVALID_COLLECTION_CONFIGURATION, std::move(message));
  }
  [[nodiscard]] static Error invalid_argument(std::string message) {  // SMDebugValueError
    return make(VIGIL_E_INVALID_ARGUMENT, std::move(message));
  }
  [[nodiscard]] static Error type_error(std::string message) {  // SMDebugTypeError
    return make(VIGIL_E_TYPE_ERROR, std::move(message));
  }
  [[nodiscard]] static Error not_supported(std::string message) {  // SMDebugNotImplementedError
    return make(VIGIL_E_NOT_SUPPORTED, std::move(message));
  }
  [[nodiscard]] static Error internal(std::string message) {  // SMDebugRuntimeError
    return make(VIGIL_E_INTERNAL, std::move(message));
  }
  [[nodiscard]] static Error plugin_failure(std::string message) {
    return make(VIGIL_E_PLUGIN_FAILURE, std::move(message));
  }
  [[nodiscard]] static Error out_of_memory() { return make(VIGIL_E_OUT_OF_MEMORY, "out of memory"); }
  [[nodiscard]] static Error cancelled() { return make(VIGIL_E_CANCELLED, "the evaluation is being stopped"); }
};

template <class T>
using Result = std::expected<T, Error>;

// `return vigil::sdk::fail(Error::...);` in a function returning Result<T>.
[[nodiscard]] inline std::unexpected<Error> fail(Error error) { return std::unexpected<Error>(std::move(error)); }

}  // namespace vigil::sdk::inline v1

// ---- propagation helpers for the Result style ----
//
//   VIGIL_TRY(auto names, trial.tensor_names({.collection = "gradients"}));
//   VIGIL_TRY_VOID(trial.wait_for_steps({step}));
//
// On failure they return the Error from the enclosing function (which must return a Result<...>).
#define VIGIL_SDK_CAT_(a, b) a##b
#define VIGIL_SDK_CAT(a, b) VIGIL_SDK_CAT_(a, b)
#define VIGIL_SDK_TMP VIGIL_SDK_CAT(vigil_sdk_try_, __LINE__)

#define VIGIL_TRY(decl, expr)                                                         \
  auto VIGIL_SDK_TMP = (expr);                                                        \
  if (!VIGIL_SDK_TMP) return ::std::unexpected(::std::move(VIGIL_SDK_TMP).error()); \
  decl = ::std::move(*VIGIL_SDK_TMP)

#define VIGIL_TRY_VOID(expr)                                                                         \
  do {                                                                                               \
    if (auto vigil_sdk_try_void_ = (expr); !vigil_sdk_try_void_)                                     \
      return ::std::unexpected(::std::move(vigil_sdk_try_void_).error());                            \
  } while (false)

// The exception classes, for rule code that includes only this header.
#include "vigil/sdk/exceptions.hpp"
