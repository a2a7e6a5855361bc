#include "common/error.h"

#include <fmt/format.h>

#include <cctype>

namespace vigil {

std::optional<Mode> parse_mode_name(std::string_view name) {
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
  for (Mode m : kAllModes)
    if (mode_name(m) == name) return m;
  return std::nullopt;
}

std::optional<Mode> mode_from_int(int64_t value) {
  if (value >= 1 && value <= 4) return static_cast<Mode>(value);
  return std::nullopt;
}

std::string_view smdebug_class_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "SMDebugValueError";
    case ErrorCode::OutOfMemory: return "MemoryError";
    case ErrorCode::NotSupported: return "SMDebugNotImplementedError";
    case ErrorCode::VersionMismatch: return "VersionMismatch";
    case ErrorCode::Cancelled: return "Cancelled";
    case ErrorCode::Timeout: return "Timeout";
    case ErrorCode::Internal: return "SMDebugRuntimeError";
    case ErrorCode::PluginFailure: return "PluginFailure";
    case ErrorCode::CorruptData: return "SMDebugRuntimeError";
    case ErrorCode::Io: return "SMDebugRuntimeError";
    case ErrorCode::TypeError: return "SMDebugTypeError";
    case ErrorCode::TensorUnavailableForStep: return "TensorUnavailableForStep";
    case ErrorCode::TensorUnavailable: return "TensorUnavailable";
    case ErrorCode::StepUnavailable: return "StepUnavailable";
    case ErrorCode::StepNotYetAvailable: return "StepNotYetAvailable";
    case ErrorCode::NoMoreData: return "NoMoreData";
    case ErrorCode::IndexReader: return "IndexReaderException";
    case ErrorCode::InvalidWorker: return "InvalidWorker";
    case ErrorCode::RuleConditionMet: return "RuleEvaluationConditionMet";
    case ErrorCode::InsufficientInformation: return "InsufficientInformationForRuleInvocation";
    case ErrorCode::ShapeUnavailableForStep: return "ShapeUnavailableForStep";
    case ErrorCode::NoMoreProfilerData: return "NoMoreProfilerData";
    case ErrorCode::MissingCollectionFiles: return "MissingCollectionFiles";
    case ErrorCode::InvalidCollectionConfiguration: return "InvalidCollectionConfiguration";
  }
  return "SMDebugError";
}

Error Error::tensor_unavailable_for_step(std::string tensor, int64_t step, Mode mode, bool has_reductions) {
  Error e{.code = ErrorCode::TensorUnavailableForStep};
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

Error Error::tensor_unavailable(std::string tensor) {
  Error e{.code = ErrorCode::TensorUnavailable};
  e.message = fmt::format("Tensor {} was not saved.", tensor);
  e.tensor = std::move(tensor);
  return e;
}

Error Error::step_unavailable(int64_t step, Mode mode) {
  Error e{.code = ErrorCode::StepUnavailable};
  e.message = fmt::format("Step {} of mode {} is not available as it was not saved", step, mode_name(mode));
  e.step = step;
  e.mode = mode;
  return e;
}

Error Error::step_not_yet_available(int64_t step, Mode mode) {
  Error e{.code = ErrorCode::StepNotYetAvailable};
  e.message = fmt::format("Step {} of mode {} not yet available", step, mode_name(mode));
  e.step = step;
  e.mode = mode;
  return e;
}

Error Error::no_more_data(int64_t step, Mode mode, int64_t last_step) {
  Error e{.code = ErrorCode::NoMoreData};
  e.message = fmt::format("Looking for step {} of mode {} and reached end of training. Max step available is {}",
                          step, mode_name(mode), last_step);
  e.step = step;
  e.mode = mode;
  e.last_step = last_step;
  return e;
}

Error Error::index_reader(std::string message, std::string file) {
  Error e{.code = ErrorCode::IndexReader};
  e.message = std::move(message);
  e.file = std::move(file);
  return e;
}

Error Error::invalid_worker(std::string worker) {
  Error e{.code = ErrorCode::InvalidWorker};
  e.message = fmt::format("Invalid Worker: {}", worker);
  e.worker = std::move(worker);
  return e;
}

Error Error::shape_unavailable_for_step(std::string tensor, int64_t step, Mode mode) {
  Error e{.code = ErrorCode::ShapeUnavailableForStep};
  e.message = fmt::format("Shape for tensor {} is not available for step {} with mode {} as it was not saved.",
                          tensor, step, mode_name(mode));
  e.tensor = std::move(tensor);
  e.step = step;
  e.mode = mode;
  return e;
}

Error Error::missing_collection_files() {
  return Error{.code = ErrorCode::MissingCollectionFiles,
               .message = "Training job has ended. All the collection files could not be loaded"};
}

Error Error::condition_met(std::string rule, int64_t step) {
  Error e{.code = ErrorCode::RuleConditionMet};
  e.message = fmt::format("Evaluation of the rule {} at step {} resulted in the condition being met", rule, step);
  e.rule = std::move(rule);
  e.step = step;
  return e;
}

Error Error::insufficient_information(std::string rule, std::string message) {
  Error e{.code = ErrorCode::InsufficientInformation};
  e.message = fmt::format("Insufficient information to invoke rule {}: {}", rule, message);
  e.rule = std::move(rule);
  return e;
}

Error Error::corrupt(std::string file, uint64_t offset, std::string_view what) {
  Error e{.code = ErrorCode::CorruptData};
  e.message = fmt::format("corrupt data in {} at byte offset {}: {}", file, offset, what);
  e.file = std::move(file);
  e.offset = offset;
  return e;
}

Error Error::io(std::string file, std::string_view what) {
  Error e{.code = ErrorCode::Io};
  e.message = fmt::format("cannot read {}: {}", file, what);
  e.file = std::move(file);
  return e;
}

Error Error::io_write(std::string file, std::string_view what) {
  Error e = io(std::move(file), what);
  e.message = fmt::format("cannot write {}: {}", e.file, what);
  return e;
}

Error Error::invalid_argument(std::string message) {
  return Error{.code = ErrorCode::InvalidArgument, .message = std::move(message)};
}

Error Error::not_supported(std::string message) {
  return Error{.code = ErrorCode::NotSupported, .message = std::move(message)};
}

Error Error::internal(std::string message) {
  return Error{.code = ErrorCode::Internal, .message = std::move(message)};
}

}  // namespace vigil
