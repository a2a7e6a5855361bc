// Vigil C++ SDK: Error (a value copy of vigil_error), Result<T>, and the smdebug exception classes.
//
// Two styles, the author's choice:
//   * Result<T> = std::expected<T, Error> everywhere (VIGIL_TRY / VIGIL_TRY_VOID propagate it);
//   * exceptions with smdebug's names (TensorUnavailableForStep, NoMoreData, ...), all deriving from
//     SMDebugError, which carries the Error. value_or_throw(result) turns an Error into the matching
//     exception; the plugin trampolines turn any exception back into its status code.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

#include "vigil/sdk/version.hpp"

namespace vigil::sdk::inline v1 {

// smdebug's ModeKeys names: "TRAIN", "EVAL", "PREDICT", "GLOBAL" ("UNKNOWN" otherwise).
constexpr std::string_view mode_name(vigil_mode mode) noexcept {
  switch (mode) {
    case VIGIL_MODE_TRAIN: return "TRAIN";
    case VIGIL_MODE_EVAL: return "EVAL";
    case VIGIL_MODE_PREDICT: return "PREDICT";
    case VIGIL_MODE_GLOBAL: return "GLOBAL";
    default: return "UNKNOWN";
  }
}

// The C name of a status code ("VIGIL_E_CANCELLED"); "VIGIL_E_UNKNOWN" for codes this SDK does not know.
constexpr std::string_view status_name(vigil_status status) noexcept {
  switch (status) {
    case VIGIL_OK: return "VIGIL_OK";
    case VIGIL_E_INVALID_ARGUMENT: return "VIGIL_E_INVALID_ARGUMENT";
    case VIGIL_E_OUT_OF_MEMORY: return "VIGIL_E_OUT_OF_MEMORY";
    case VIGIL_E_NOT_SUPPORTED: return "VIGIL_E_NOT_SUPPORTED";
    case VIGIL_E_VERSION_MISMATCH: return "VIGIL_E_VERSION_MISMATCH";
    case VIGIL_E_CANCELLED: return "VIGIL_E_CANCELLED";
    case VIGIL_E_TIMEOUT: return "VIGIL_E_TIMEOUT";
    case VIGIL_E_INTERNAL: return "VIGIL_E_INTERNAL";
    case VIGIL_E_PLUGIN_FAILURE: return "VIGIL_E_PLUGIN_FAILURE";
    case VIGIL_E_CORRUPT_DATA: return "VIGIL_E_CORRUPT_DATA";
    case VIGIL_E_IO: return "VIGIL_E_IO";
    case VIGIL_E_TYPE_ERROR: return "VIGIL_E_TYPE_ERROR";
    case VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP: return "VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP";
    case VIGIL_E_TENSOR_UNAVAILABLE: return "VIGIL_E_TENSOR_UNAVAILABLE";
    case VIGIL_E_STEP_UNAVAILABLE: return "VIGIL_E_STEP_UNAVAILABLE";
    case VIGIL_E_STEP_NOT_YET_AVAILABLE: return "VIGIL_E_STEP_NOT_YET_AVAILABLE";
    case VIGIL_E_NO_MORE_DATA: return "VIGIL_E_NO_MORE_DATA";
    case VIGIL_E_INDEX_READER: return "VIGIL_E_INDEX_READER";
    case VIGIL_E_INVALID_WORKER: return "VIGIL_E_INVALID_WORKER";
    case VIGIL_S_RULE_CONDITION_MET: return "VIGIL_S_RULE_CONDITION_MET";
    case VIGIL_E_INSUFFICIENT_INFORMATION: return "VIGIL_E_INSUFFICIENT_INFORMATION";
    case VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP: return "VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP";
    case VIGIL_E_NO_MORE_PROFILER_DATA: return "VIGIL_E_NO_MORE_PROFILER_DATA";
    case VIGIL_E_MISSING_COLLECTION_FILES: return "VIGIL_E_MISSING_COLLECTION_FILES";
    case VIGIL_E_INVALID_COLLECTION_CONFIGURATION: return "VIGIL_E_INVALID_COLLECTION_CONFIGURATION";
    default: return "VIGIL_E_UNKNOWN";
  }
}

namespace detail {

// Copies `src` into dst[0, capacity) and NUL-terminates it. Cuts at a UTF-8 character boundary when
// it does not fit. Returns true when it had to cut. Never allocates, never throws.
inline bool copy_c_string(char* dst, size_t capacity, std::string_view src) noexcept {
  if (capacity == 0) return !src.empty();
  size_t n = src.size();
  bool cut = false;
  if (n > capacity - 1) {
    n = capacity - 1;
    cut = true;
    // src[n] is the first byte left out: while it continues a multi-byte character, leave that whole
    // character out too.
    while (n > 0 && (static_cast<unsigned char>(src[n]) & 0xC0u) == 0x80u) --n;
  }
  if (n > 0) std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
  return cut;
}

// Reads a possibly unterminated fixed-size char field.
inline std::string_view read_c_string(const char* src, size_t capacity) noexcept {
  const void* nul = std::memchr(src, '\0', capacity);
  return {src, nul ? static_cast<size_t>(static_cast<const char*>(nul) - src) : capacity};
}

// How many bytes of a caller's vigil_error we may touch: its struct_size, at most our sizeof.
inline size_t usable_error_size(const vigil_error* err) noexcept {
  if (!err) return 0;
  return std::min<size_t>(err->struct_size, sizeof(vigil_error));
}

inline bool error_fits(size_t usable, size_t offset, size_t size) noexcept { return usable >= offset + size; }

// Writes a string field of vigil_error when (part of) it lies inside the caller's struct_size.
// Returns true when the text was cut.
inline bool put_error_string(vigil_error* err, size_t usable, size_t offset, size_t field_size,
                             std::string_view text) noexcept {
  if (usable <= offset) return false;  // the caller's struct predates this field
  const size_t capacity = std::min(field_size, usable - offset);
  return copy_c_string(reinterpret_cast<char*>(err) + offset, capacity, text);
}

}  // namespace detail

#define VIGIL_SDK_ERR_FIELD(field) offsetof(vigil_error, field), sizeof(static_cast<vigil_error*>(nullptr)->field)

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

  // The smdebug exception class the code stands for ("TensorUnavailableForStep", ...); for codes
  // without one: "MemoryError", "VersionMismatch", "Cancelled", "Timeout", "PluginFailure", and
  // "SMDebugError" for unknown codes.
  std::string_view class_name() const noexcept {
    if (const char* name = vigil_status_smdebug_class(code)) return name;
    switch (code) {
      case VIGIL_OK: return "OK";
      case VIGIL_E_OUT_OF_MEMORY: return "MemoryError";
      case VIGIL_E_VERSION_MISMATCH: return "VersionMismatch";
      case VIGIL_E_CANCELLED: return "Cancelled";
      case VIGIL_E_TIMEOUT: return "Timeout";
      case VIGIL_E_PLUGIN_FAILURE: return "PluginFailure";
      default: return "SMDebugError";
    }
  }

  vigil_status_class classify() const noexcept { return vigil_status_classify(code); }
  bool is_skip() const noexcept { return vigil_status_is_skip(code); }
  bool is_wait() const noexcept { return vigil_status_is_wait(code); }
  bool is_stop() const noexcept { return vigil_status_is_stop(code); }
  bool is_signal() const noexcept { return vigil_status_is_signal(code); }
  bool is_failure() const noexcept { return vigil_status_is_failure(code); }

  // "TensorUnavailableForStep: Value for tensor ... ", for logs.
  std::string to_string() const { return fmt::format("{}: {}", class_name(), message); }

  // ---- crossing the ABI ----

  // The error a callee reported: `status` is its return value (authoritative); `err` may be NULL and
  // is read only as far as its struct_size reaches.
  static Error from_abi(vigil_status status, const vigil_error* err) {
    Error e;
    e.code = status;
    const size_t usable = detail::usable_error_size(err);
    const auto str = [&](size_t offset, size_t size) -> std::string {
      if (usable <= offset) return {};
      return std::string(detail::read_c_string(reinterpret_cast<const char*>(err) + offset,
                                               std::min(size, usable - offset)));
    };
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(flags))) {
      e.has_reductions = (err->flags & VIGIL_ERRF_HAS_REDUCTIONS) != 0;
      e.end_of_rule = (err->flags & VIGIL_ERRF_END_OF_RULE) != 0;
      e.truncated = (err->flags & VIGIL_ERRF_TRUNCATED) != 0;
    }
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(mode))) e.mode = err->mode;
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(step))) e.step = err->step;
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(last_step))) e.last_step = err->last_step;
    e.tensor = str(VIGIL_SDK_ERR_FIELD(tensor));
    e.worker = str(VIGIL_SDK_ERR_FIELD(worker));
    e.rule = str(VIGIL_SDK_ERR_FIELD(rule));
    e.message = str(VIGIL_SDK_ERR_FIELD(message));
    if (e.message.empty()) e.message = fmt::format("{} (status {})", status_name(status), status);
    return e;
  }

  // Fills a caller-owned vigil_error: only what lies inside err->struct_size, every string
  // NUL-terminated, VIGIL_ERRF_TRUNCATED set when a string was cut. Never allocates; NULL is fine.
  void to_abi(vigil_error* err) const noexcept {
    const size_t usable = detail::usable_error_size(err);
    if (usable <= sizeof(err->struct_size)) return;
    // Clear what we may touch (all but struct_size), so nothing stale survives.
    std::memset(reinterpret_cast<char*>(err) + sizeof(err->struct_size), 0, usable - sizeof(err->struct_size));
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(code))) err->code = code;
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(mode))) err->mode = mode;
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(step))) err->step = step;
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(last_step))) err->last_step = last_step;
    bool cut = truncated;
    cut |= detail::put_error_string(err, usable, VIGIL_SDK_ERR_FIELD(tensor), tensor);
    cut |= detail::put_error_string(err, usable, VIGIL_SDK_ERR_FIELD(worker), worker);
    cut |= detail::put_error_string(err, usable, VIGIL_SDK_ERR_FIELD(rule), rule);
    cut |= detail::put_error_string(err, usable, VIGIL_SDK_ERR_FIELD(message), message);
    if (detail::error_fits(usable, VIGIL_SDK_ERR_FIELD(flags))) {
      uint32_t flags = 0;
      if (has_reductions) flags |= VIGIL_ERRF_HAS_REDUCTIONS;
      if (end_of_rule) flags |= VIGIL_ERRF_END_OF_RULE;
      if (cut) flags |= VIGIL_ERRF_TRUNCATED;
      err->flags = flags;
    }
  }

  // ---- factories, in smdebug's wording (the same wording the host uses) ----

  // An Error with just a code and a message.
  static Error make(vigil_status code, std::string message = {}) {
    Error e;
    e.code = code;
    e.message = std::move(message);
    return e;
  }

  static Error tensor_unavailable_for_step(std::string tensor, vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL,
                                           bool has_reductions = false) {
    Error e = make(VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
    e.message = fmt::format("Value for tensor {} is not available for step {} with mode {} as it was not saved.",
                            tensor, step, mode_name(mode));
    if (has_reductions)
      e.message += "This tensor has reductions saved for this step. You might want to query for the reductions.";
    e.tensor = std::move(tensor);
    e.step = step;
    e.mode = mode;
    e.has_reductions = has_reductions;
    return e;
  }
  static Error tensor_unavailable(std::string tensor) {
    Error e = make(VIGIL_E_TENSOR_UNAVAILABLE);
    e.message = fmt::format("Tensor {} was not saved.", tensor);
    e.tensor = std::move(tensor);
    return e;
  }
  static Error step_unavailable(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) {
    Error e = make(VIGIL_E_STEP_UNAVAILABLE);
    e.step = step;
    e.mode = mode;
    e.message = fmt::format("Step {} of mode {} is not available as it was not saved", step, mode_name(mode));
    return e;
  }
  static Error step_not_yet_available(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) {
    Error e = make(VIGIL_E_STEP_NOT_YET_AVAILABLE);
    e.step = step;
    e.mode = mode;
    e.message = fmt::format("Step {} of mode {} not yet available", step, mode_name(mode));
    return e;
  }
  static Error no_more_data(vigil_step step, vigil_mode mode, vigil_step last_step) {
    Error e = make(VIGIL_E_NO_MORE_DATA);
    e.step = step;
    e.mode = mode;
    e.last_step = last_step;
    e.message = fmt::format("Looking for step {} of mode {} and reached end of training. Max step available is {}",
                            step, mode_name(mode), last_step);
    return e;
  }
  static Error index_reader(std::string message) {
    return make(VIGIL_E_INDEX_READER, std::move(message));
  }
  static Error invalid_worker(std::string worker) {
    Error e = make(VIGIL_E_INVALID_WORKER);
    e.message = fmt::format("Invalid Worker: {}", worker);
    e.worker = std::move(worker);
    return e;
  }
  static Error shape_unavailable_for_step(std::string tensor, vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) {
    Error e = make(VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP);
    e.step = step;
    e.mode = mode;
    e.message = fmt::format("Shape for tensor {} is not available for step {} with mode {} as it was not saved.",
                            tensor, step, mode_name(mode));
    e.tensor = std::move(tensor);
    return e;
  }
  static Error condition_met(std::string rule, vigil_step step, bool end_of_rule = false) {
    Error e = make(VIGIL_S_RULE_CONDITION_MET);
    e.step = step;
    e.end_of_rule = end_of_rule;
    e.message = fmt::format("Evaluation of the rule {} at step {} resulted in the condition being met", rule, step);
    e.rule = std::move(rule);
    return e;
  }
  static Error insufficient_information(std::string rule, std::string message) {
    Error e = make(VIGIL_E_INSUFFICIENT_INFORMATION);
    e.message = fmt::format("Insufficient information to invoke rule {}: {}", rule, message);
    e.rule = std::move(rule);
    return e;
  }
  static Error no_more_profiler_data(std::string message) {
    return make(VIGIL_E_NO_MORE_PROFILER_DATA, std::move(message));
  }
  static Error missing_collection_files() {
    return make(VIGIL_E_MISSING_COLLECTION_FILES, "Training job has ended. All the collection files could not be loaded");
  }
  static Error invalid_collection_configuration(std::string message) {
    return make(VIGIL_E_INVALID_COLLECTION_CONFIGURATION, std::move(message));
  }
  static Error invalid_argument(std::string message) {  // SMDebugValueError
    return make(VIGIL_E_INVALID_ARGUMENT, std::move(message));
  }
  static Error type_error(std::string message) {  // SMDebugTypeError
    return make(VIGIL_E_TYPE_ERROR, std::move(message));
  }
  static Error not_supported(std::string message) {  // SMDebugNotImplementedError
    return make(VIGIL_E_NOT_SUPPORTED, std::move(message));
  }
  static Error internal(std::string message) {  // SMDebugRuntimeError
    return make(VIGIL_E_INTERNAL, std::move(message));
  }
  static Error plugin_failure(std::string message) {
    return make(VIGIL_E_PLUGIN_FAILURE, std::move(message));
  }
  static Error out_of_memory() { return make(VIGIL_E_OUT_OF_MEMORY, "out of memory"); }
  static Error cancelled() { return make(VIGIL_E_CANCELLED, "the evaluation is being stopped"); }
};

#undef VIGIL_SDK_ERR_FIELD

template <class T>
using Result = std::expected<T, Error>;

// `return vigil::sdk::fail(Error::...);` in a function returning Result<T>.
inline std::unexpected<Error> fail(Error error) { return std::unexpected<Error>(std::move(error)); }

// ---- the smdebug exception hierarchy ----
//
// Every class carries the full Error (error()) with the code it was built with; the trampolines
// report exactly that code, so a class built from an Error with another code keeps that code.

class SMDebugError : public std::exception {
 public:
  explicit SMDebugError(Error error) : error_(std::move(error)) {}
  const char* what() const noexcept override { return error_.message.c_str(); }
  const Error& error() const noexcept { return error_; }
  vigil_status code() const noexcept { return error_.code; }

 private:
  Error error_;
};

class SMDebugValueError : public SMDebugError {
 public:
  explicit SMDebugValueError(std::string message) : SMDebugError(Error::invalid_argument(std::move(message))) {}
  explicit SMDebugValueError(Error error) : SMDebugError(std::move(error)) {}
};

class SMDebugTypeError : public SMDebugError {
 public:
  explicit SMDebugTypeError(std::string message) : SMDebugError(Error::type_error(std::move(message))) {}
  explicit SMDebugTypeError(Error error) : SMDebugError(std::move(error)) {}
};

class SMDebugRuntimeError : public SMDebugError {
 public:
  explicit SMDebugRuntimeError(std::string message) : SMDebugError(Error::internal(std::move(message))) {}
  explicit SMDebugRuntimeError(Error error) : SMDebugError(std::move(error)) {}
};

class SMDebugNotImplementedError : public SMDebugError {
 public:
  explicit SMDebugNotImplementedError(std::string message) : SMDebugError(Error::not_supported(std::move(message))) {}
  explicit SMDebugNotImplementedError(Error error) : SMDebugError(std::move(error)) {}
};

class TensorUnavailableForStep : public SMDebugError {
 public:
  TensorUnavailableForStep(std::string tname, vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL,
                           bool has_reductions = false)
      : SMDebugError(Error::tensor_unavailable_for_step(std::move(tname), step, mode, has_reductions)) {}
  explicit TensorUnavailableForStep(Error error) : SMDebugError(std::move(error)) {}
  const std::string& tname() const noexcept { return error().tensor; }
  vigil_step step() const noexcept { return error().step; }
  vigil_mode mode() const noexcept { return error().mode; }
  bool has_reductions() const noexcept { return error().has_reductions; }
};

class TensorUnavailable : public SMDebugError {
 public:
  explicit TensorUnavailable(std::string tname) : SMDebugError(Error::tensor_unavailable(std::move(tname))) {}
  explicit TensorUnavailable(Error error) : SMDebugError(std::move(error)) {}
  const std::string& tname() const noexcept { return error().tensor; }
};

class StepUnavailable : public SMDebugError {
 public:
  StepUnavailable(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL)
      : SMDebugError(Error::step_unavailable(step, mode)) {}
  explicit StepUnavailable(Error error) : SMDebugError(std::move(error)) {}
  vigil_step step() const noexcept { return error().step; }
  vigil_mode mode() const noexcept { return error().mode; }
};

class StepNotYetAvailable : public SMDebugError {
 public:
  StepNotYetAvailable(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL)
      : SMDebugError(Error::step_not_yet_available(step, mode)) {}
  explicit StepNotYetAvailable(Error error) : SMDebugError(std::move(error)) {}
  vigil_step step() const noexcept { return error().step; }
  vigil_mode mode() const noexcept { return error().mode; }
};

class NoMoreData : public SMDebugError {
 public:
  NoMoreData(vigil_step step, vigil_mode mode, vigil_step last_step)
      : SMDebugError(Error::no_more_data(step, mode, last_step)) {}
  explicit NoMoreData(Error error) : SMDebugError(std::move(error)) {}
  vigil_step step() const noexcept { return error().step; }
  vigil_mode mode() const noexcept { return error().mode; }
  vigil_step last_step() const noexcept { return error().last_step; }
};

class IndexReaderException : public SMDebugError {
 public:
  explicit IndexReaderException(std::string message) : SMDebugError(Error::index_reader(std::move(message))) {}
  explicit IndexReaderException(Error error) : SMDebugError(std::move(error)) {}
};

class InvalidWorker : public SMDebugError {
 public:
  explicit InvalidWorker(std::string worker) : SMDebugError(Error::invalid_worker(std::move(worker))) {}
  explicit InvalidWorker(Error error) : SMDebugError(std::move(error)) {}
  const std::string& worker() const noexcept { return error().worker; }
};

class ShapeUnavailableForStep : public SMDebugError {
 public:
  ShapeUnavailableForStep(std::string tname, vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL)
      : SMDebugError(Error::shape_unavailable_for_step(std::move(tname), step, mode)) {}
  explicit ShapeUnavailableForStep(Error error) : SMDebugError(std::move(error)) {}
  const std::string& tname() const noexcept { return error().tensor; }
  vigil_step step() const noexcept { return error().step; }
  vigil_mode mode() const noexcept { return error().mode; }
};

// A signal, not a failure: the rule's condition is met (end_of_rule: stop evaluating this rule).
class RuleEvaluationConditionMet : public SMDebugError {
 public:
  RuleEvaluationConditionMet(std::string rule_name, vigil_step step, bool end_of_rule = false)
      : SMDebugError(Error::condition_met(std::move(rule_name), step, end_of_rule)) {}
  explicit RuleEvaluationConditionMet(Error error) : SMDebugError(std::move(error)) {}
  const std::string& rule_name() const noexcept { return error().rule; }
  vigil_step step() const noexcept { return error().step; }
  bool end_of_rule() const noexcept { return error().end_of_rule; }
};

class InsufficientInformationForRuleInvocation : public SMDebugError {
 public:
  InsufficientInformationForRuleInvocation(std::string rule_name, std::string message)
      : SMDebugError(Error::insufficient_information(std::move(rule_name), std::move(message))) {}
  explicit InsufficientInformationForRuleInvocation(Error error) : SMDebugError(std::move(error)) {}
  const std::string& rule_name() const noexcept { return error().rule; }
};

class NoMoreProfilerData : public SMDebugError {
 public:
  explicit NoMoreProfilerData(std::string message) : SMDebugError(Error::no_more_profiler_data(std::move(message))) {}
  explicit NoMoreProfilerData(Error error) : SMDebugError(std::move(error)) {}
};

class MissingCollectionFiles : public SMDebugError {
 public:
  MissingCollectionFiles() : SMDebugError(Error::missing_collection_files()) {}
  explicit MissingCollectionFiles(Error error) : SMDebugError(std::move(error)) {}
};

class InvalidCollectionConfiguration : public SMDebugError {
 public:
  explicit InvalidCollectionConfiguration(std::string message)
      : SMDebugError(Error::invalid_collection_configuration(std::move(message))) {}
  explicit InvalidCollectionConfiguration(Error error) : SMDebugError(std::move(error)) {}
};

#if VIGIL_SDK_EXCEPTIONS

// Throws the exception class that matches error.code (SMDebugError itself for codes without one).
[[noreturn]] inline void throw_error(Error error) {
  switch (error.code) {
    case VIGIL_E_INVALID_ARGUMENT: throw SMDebugValueError(std::move(error));
    case VIGIL_E_TYPE_ERROR: throw SMDebugTypeError(std::move(error));
    case VIGIL_E_NOT_SUPPORTED: throw SMDebugNotImplementedError(std::move(error));
    case VIGIL_E_INTERNAL:
    case VIGIL_E_CORRUPT_DATA:
    case VIGIL_E_IO: throw SMDebugRuntimeError(std::move(error));
    case VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP: throw TensorUnavailableForStep(std::move(error));
    case VIGIL_E_TENSOR_UNAVAILABLE: throw TensorUnavailable(std::move(error));
    case VIGIL_E_STEP_UNAVAILABLE: throw StepUnavailable(std::move(error));
    case VIGIL_E_STEP_NOT_YET_AVAILABLE: throw StepNotYetAvailable(std::move(error));
    case VIGIL_E_NO_MORE_DATA: throw NoMoreData(std::move(error));
    case VIGIL_E_INDEX_READER: throw IndexReaderException(std::move(error));
    case VIGIL_E_INVALID_WORKER: throw InvalidWorker(std::move(error));
    case VIGIL_S_RULE_CONDITION_MET: throw RuleEvaluationConditionMet(std::move(error));
    case VIGIL_E_INSUFFICIENT_INFORMATION: throw InsufficientInformationForRuleInvocation(std::move(error));
    case VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP: throw ShapeUnavailableForStep(std::move(error));
    case VIGIL_E_NO_MORE_PROFILER_DATA: throw NoMoreProfilerData(std::move(error));
    case VIGIL_E_MISSING_COLLECTION_FILES: throw MissingCollectionFiles(std::move(error));
    case VIGIL_E_INVALID_COLLECTION_CONFIGURATION: throw InvalidCollectionConfiguration(std::move(error));
    default: throw SMDebugError(std::move(error));
  }
}

// The value, or the matching smdebug exception. For authors who prefer exceptions:
//   auto steps = value_or_throw(trial.steps());
template <class T>
T value_or_throw(Result<T> result) {
  if (!result) throw_error(std::move(result).error());
  return std::move(*result);
}

inline void value_or_throw(Result<void> result) {
  if (!result) throw_error(std::move(result).error());
}

#endif  // VIGIL_SDK_EXCEPTIONS

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
