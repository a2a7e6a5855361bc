// Reductions computed from a value, with smdebug's names (min max mean std variance sum prod l1 l2,
// each also on abs(x)). Vigil computes l1/l2 element-wise for every rank (like the reductions
// smdebug's hooks save); smdebug's reader computes matrix norms for 2-D values (docs/compatibility.md).
#pragma once

#include <optional>
#include <string_view>

#include "common/error.h"
#include "trial/tensor_value.h"

namespace vigil {

enum class ReductionOp { Min, Max, Mean, Std, Variance, Sum, Prod, L1, L2 };

inline constexpr ReductionOp kAllReductionOps[] = {ReductionOp::Min, ReductionOp::Max,      ReductionOp::Mean,
                                                   ReductionOp::Std, ReductionOp::Variance, ReductionOp::Sum,
                                                   ReductionOp::Prod, ReductionOp::L1,      ReductionOp::L2};

std::string_view reduction_name(ReductionOp op);
std::optional<ReductionOp> parse_reduction_name(std::string_view name);

struct ReductionValue {
  double value = 0;
  ElementType dtype = ElementType::Float64;  // numpy's result dtype for this op on this input
  bool saved = false;                        // read from a saved reduction record, not computed
};

// Follows numpy: min/max keep the dtype; float results are rounded to the input's float dtype
// (so a float32 prod that overflows is inf); integer sum/prod are int64, or uint64 for unsigned
// input (wrapping like numpy);
// integer mean/std/variance/l1/l2 are float64; std and variance are population (N) statistics.
[[nodiscard]] Result<ReductionValue> compute_reduction(const TensorValue& value, ReductionOp op, bool abs);

}  // namespace vigil
