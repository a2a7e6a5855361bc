// Encoding one number as one element of a dtype: how the writer stores a reduction it computed (a 0-d
// tensor of the saved tensor's dtype, as smdebug does).
#pragma once

#include <cstddef>
#include <vector>

#include "common/error.h"
#include "format/dtype.h"

namespace vigil::writer {

// The bytes of `v` as one element of `type`: floats rounded to nearest even, integers exact (an
// Internal error when `v` does not fit), bool as 0/1; NotSupported for complex and string dtypes.
[[nodiscard]] Result<std::vector<std::byte>> scalar_bytes(format::ElementType type, double v);

}  // namespace vigil::writer
