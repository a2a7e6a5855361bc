// The summary of a value used by `vigil inspect --json --values` and the conformance tests, with the
// fields and conventions of the fixtures' expected.json (`conventions` there): dtype, dtype_str,
// shape, size, sha256, and per kind sum/min/max/mean/mean_abs/n_nan/n_posinf/n_neginf (floats),
// sum/min/max/mean (integers), n_true (bool); `values` when size <= 16.
#pragma once

#include <nlohmann/json.hpp>

#include "trial/tensor_value.h"

namespace vigil {

nlohmann::ordered_json summarize_value(const TensorValue& value);

// A JSON number, or the strings "NaN", "Infinity", "-Infinity" for non-finite values.
nlohmann::ordered_json json_number(double v);

}  // namespace vigil
