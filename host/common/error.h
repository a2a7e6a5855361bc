// vigil::Error: every failure in host/ is one of these. The codes are the C ABI's status codes
// (abi-notes §7.6) so that crossing the ABI is an identity mapping, and each code names the smdebug
// exception class it stands for; messages use smdebug's exact wording where smdebug has one.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include <vigil/status.h>

#include "common/mode.h"

namespace vigil {

// The ABI's status codes (status.h's VIGIL_STATUS_LIST), so crossing the ABI is an identity mapping.
enum class ErrorCode : int32_t {
#define VIGIL_HOST_ERROR_CODE_(name, cpp_name, value, cls, exception, origin) cpp_name = name,
  VIGIL_STATUS_LIST(VIGIL_HOST_ERROR_CODE_)
#undef VIGIL_HOST_ERROR_CODE_
};

// The exception class name a code stands for ("TensorUnavailableForStep", "SMDebugRuntimeError", ...;
// sdk::exception_name).
[[nodiscard]] std::string_view smdebug_class_name(ErrorCode code);

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

  [[nodiscard]] std::string_view class_name() const { return smdebug_class_name(code); }

  [[nodiscard]] static Error tensor_unavailable_for_step(std::string tensor, int64_t step, Mode mode, bool has_reductions = false);
  [[nodiscard]] static Error tensor_unavailable(std::string tensor);
  [[nodiscard]] static Error step_unavailable(int64_t step, Mode mode);
  [[nodiscard]] static Error step_not_yet_available(int64_t step, Mode mode);
  [[nodiscard]] static Error no_more_data(int64_t step, Mode mode, int64_t last_step);
  [[nodiscard]] static Error index_reader(std::string message, std::string file = {});
  [[nodiscard]] static Error invalid_worker(std::string worker);
  [[nodiscard]] static Error shape_unavailable_for_step(std::string tensor, int64_t step, Mode mode);
  [[nodiscard]] static Error missing_collection_files();
  [[nodiscard]] static Error condition_met(std::string rule, int64_t step);
  [[nodiscard]] static Error insufficient_information(std::string rule, std::string message);
  // Damaged data: the message names the file and the byte offset.
  [[nodiscard]] static Error corrupt(std::string file, uint64_t offset, std::string_view what);
  [[nodiscard]] static Error io(std::string file, std::string_view what);        // "cannot read <file>: <what>"
  [[nodiscard]] static Error io_write(std::string file, std::string_view what);  // "cannot write <file>: <what>"
  [[nodiscard]] static Error invalid_argument(std::string message);
  [[nodiscard]] static Error not_supported(std::string message);
  [[nodiscard]] static Error internal(std::string message);
};

template <typename T>
using Result = std::expected<T, Error>;

// Shorthand for `return fail(Error::...)` in functions returning Result<T>.
[[nodiscard]] inline std::unexpected<Error> fail(Error e) { return std::unexpected<Error>(std::move(e)); }

}  // namespace vigil
