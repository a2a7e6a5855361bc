#include "common/error.h"

#include <fmt/format.h>
#include <vigil/sdk/messages.hpp>

#include <cctype>
#include <vigil/sdk/text.hpp>

namespace vigil {

std::optional<Mode> parse_mode_name(std::string_view name) {
  name = sdk::trim(name);
  for (Mode m : kAllModes)
    if (mode_name(m) == name) return m;
  return std::nullopt;
}

std::optional<Mode> mode_from_int(int64_t value) {
  if (value >= 1 && value <= 4) return static_cast<Mode>(value);
  return std::nullopt;
}

std::string_view smdebug_class_name(ErrorCode code) { return sdk::exception_name(static_cast<vigil_status>(code)); }

namespace {
vigil_mode abi_mode(Mode m) { return static_cast<vigil_mode>(m); }
}  // namespace

Error Error::tensor_unavailable_for_step(std::string tensor, int64_t step, Mode mode, bool has_reductions) {
  Error e{.code = ErrorCode::TensorUnavailableForStep,
          .message = sdk::messages::tensor_unavailable_for_step(tensor, step, abi_mode(mode), has_reductions)};
  e.tensor = std::move(tensor);
  e.step = step;
  e.mode = mode;
  e.has_reductions = has_reductions;
  return e;
}

Error Error::tensor_unavailable(std::string tensor) {
  Error e{.code = ErrorCode::TensorUnavailable, .message = sdk::messages::tensor_unavailable(tensor)};
  e.tensor = std::move(tensor);
  return e;
}

Error Error::step_unavailable(int64_t step, Mode mode) {
  Error e{.code = ErrorCode::StepUnavailable, .message = sdk::messages::step_unavailable(step, abi_mode(mode))};
  e.step = step;
  e.mode = mode;
  return e;
}

Error Error::step_not_yet_available(int64_t step, Mode mode) {
  Error e{.code = ErrorCode::StepNotYetAvailable, .message = sdk::messages::step_not_yet_available(step, abi_mode(mode))};
  e.step = step;
  e.mode = mode;
  return e;
}

Error Error::no_more_data(int64_t step, Mode mode, int64_t last_step) {
  Error e{.code = ErrorCode::NoMoreData, .message = sdk::messages::no_more_data(step, abi_mode(mode), last_step)};
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
  Error e{.code = ErrorCode::InvalidWorker, .message = sdk::messages::invalid_worker(worker)};
  e.worker = std::move(worker);
  return e;
}

Error Error::shape_unavailable_for_step(std::string tensor, int64_t step, Mode mode) {
  Error e{.code = ErrorCode::ShapeUnavailableForStep,
          .message = sdk::messages::shape_unavailable_for_step(tensor, step, abi_mode(mode))};
  e.tensor = std::move(tensor);
  e.step = step;
  e.mode = mode;
  return e;
}

Error Error::missing_collection_files() {
  return Error{.code = ErrorCode::MissingCollectionFiles, .message = std::string(sdk::messages::kMissingCollectionFiles)};
}

Error Error::condition_met(std::string rule, int64_t step) {
  Error e{.code = ErrorCode::RuleConditionMet, .message = sdk::messages::condition_met(rule, step)};
  e.rule = std::move(rule);
  e.step = step;
  return e;
}

Error Error::insufficient_information(std::string rule, std::string message) {
  Error e{.code = ErrorCode::InsufficientInformation, .message = sdk::messages::insufficient_information(rule, message)};
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
