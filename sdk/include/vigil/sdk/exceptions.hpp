// Vigil C++ SDK: smdebug's exception classes (smdebug.exceptions), all deriving from SMDebugError,
// which carries the Error; throw_error() and value_or_throw() turn an Error into the matching one.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "vigil/sdk/error.hpp"

namespace vigil::sdk::inline v1 {

// Every class carries the full Error (error()) with the code it was built with; the trampolines
// report exactly that code, so a class built from an Error with another code keeps that code.

class SMDebugError : public std::exception {
 public:
  explicit SMDebugError(Error error) : error_(std::move(error)) {}
  [[nodiscard]] const char* what() const noexcept override { return error_.message.c_str(); }
  [[nodiscard]] const Error& error() const noexcept { return error_; }
  [[nodiscard]] vigil_status code() const noexcept { return error_.code; }

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

// Throws the exception class that matches error.code: the class status.h's list names for it where
// that class is smdebug's, SMDebugError itself for the others.
[[noreturn]] inline void throw_error(Error error) {
#define VIGIL_SDK_THROW_SMDEBUG_(name, exception) \
  case name:                                      \
    throw exception(std::move(error));
#define VIGIL_SDK_THROW_VIGIL_(name, exception)
#define VIGIL_SDK_THROW_(name, cpp_name, value, cls, exception, origin) VIGIL_SDK_THROW_##origin##_(name, exception)
  switch (error.code) {
    VIGIL_STATUS_LIST(VIGIL_SDK_THROW_)
    default: throw SMDebugError(std::move(error));
  }
#undef VIGIL_SDK_THROW_
#undef VIGIL_SDK_THROW_VIGIL_
#undef VIGIL_SDK_THROW_SMDEBUG_
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
