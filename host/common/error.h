// vigil::Error: every failure in host/ is one of these. The codes are the C ABI's status codes
// (abi-notes §7.6) so that crossing the ABI is an identity mapping, and each code names the smdebug
// exception class it stands for; messages use smdebug's exact wording where smdebug has one.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "common/mode.h"

namespace vigil {

// Append only; values never change (they are the ABI's status codes).
enum class ErrorCode : int32_t {
  InvalidArgument = 1,                 // SMDebugValueError
  OutOfMemory = 2,
  NotSupported = 3,                    // SMDebugNotImplementedError (unsupported dtype, ...)
  VersionMismatch = 4,
  Cancelled = 5,
  Timeout = 6,
  Internal = 7,                        // SMDebugRuntimeError
  PluginFailure = 8,
  CorruptData = 9,                     // damaged bytes: bad CRC, truncated record, bad proto
  Io = 10,                             // the file system refused (missing file, permissions)
  TypeError = 11,                      // SMDebugTypeError
  TensorUnavailableForStep = 100,
  TensorUnavailable = 101,
  StepUnavailable = 102,
  StepNotYetAvailable = 103,
  NoMoreData = 104,
  IndexReader = 105,                   // IndexReaderException
  InvalidWorker = 106,
  RuleConditionMet = 107,              // RuleEvaluationConditionMet (a signal, not a failure)
  InsufficientInformation = 108,       // InsufficientInformationForRuleInvocation
  ShapeUnavailableForStep = 109,
  NoMoreProfilerData = 110,
  MissingCollectionFiles = 111,
  InvalidCollectionConfiguration = 112,
};

// The smdebug exception class name a code stands for ("TensorUnavailableForStep", ...).
std::string_view smdebug_class_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;  // str(e) in smdebug's wording where smdebug has the class
  // Structured fields, filled where the smdebug class has them.
  std::string tensor;
  std::string worker;
  std::string rule;
  int64_t step = 0;
  Mode mode = Mode::Global;
  int64_t last_step = -1;
  bool has_reductions = false;
  // Where damaged or unreadable data was found.
  std::string file;
  std::optional<uint64_t> offset;

  std::string_view class_name() const { return smdebug_class_name(code); }

  static Error tensor_unavailable_for_step(std::string tensor, int64_t step, Mode mode, bool has_reductions = false);
  static Error tensor_unavailable(std::string tensor);
  static Error step_unavailable(int64_t step, Mode mode);
  static Error step_not_yet_available(int64_t step, Mode mode);
  static Error no_more_data(int64_t step, Mode mode, int64_t last_step);
  static Error index_reader(std::string message, std::string file = {});
  static Error invalid_worker(std::string worker);
  static Error shape_unavailable_for_step(std::string tensor, int64_t step, Mode mode);
  static Error missing_collection_files();
  static Error condition_met(std::string rule, int64_t step);
  static Error insufficient_information(std::string rule, std::string message);
  // Damaged data: the message names the file and the byte offset.
  static Error corrupt(std::string file, uint64_t offset, std::string_view what);
  static Error io(std::string file, std::string_view what);        // "cannot read <file>: <what>"
  static Error io_write(std::string file, std::string_view what);  // "cannot write <file>: <what>"
  static Error invalid_argument(std::string message);
  static Error not_supported(std::string message);
  static Error internal(std::string message);
};

template <typename T>
using Result = std::expected<T, Error>;

// Shorthand for `return fail(Error::...)` in functions returning Result<T>.
inline std::unexpected<Error> fail(Error e) { return std::unexpected<Error>(std::move(e)); }

}  // namespace vigil
