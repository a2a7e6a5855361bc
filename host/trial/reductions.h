// Reductions computed from a value, with smdebug's names (min max mean std variance sum prod l1 l2,
// each also on abs(x)). Vigil computes l1/l2 element-wise for every rank (like the reductions
// smdebug's hooks save); smdebug's reader computes matrix norms for 2-D values (docs/compatibility.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "common/error.h"
#include "trial/compensated_sum.h"
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

// What one reduction is finished from, for one value or for a part of a larger tensor (a shard).
// Parts merge (variance by Chan's formula from each part's mean and sum of squared deviations), so
// the reductions of a sharded tensor are the whole tensor's without putting its values together.
struct ReductionStatistics {
  ReductionOp op = ReductionOp::Sum;
  bool abs = false;
  ElementType result_dtype = ElementType::Float64;
  bool integer = false;          // numpy's integer rules: min/max in the input dtype, sum/prod wrap
  uint64_t count = 0;            // elements
  bool has_extreme = false;      // Min/Max: an element was seen
  double extreme = 0;            // Min/Max (NaN once any element is NaN, as numpy)
  detail::CompensatedSum sum;    // Sum/Mean/L1/Variance/Std: of x (or |x|); L2: of x^2
  double m2 = 0;                 // Variance/Std: the sum of squared deviations from the part's mean
  uint64_t wrapped = 0;          // integer Sum/Prod, modulo 2^64 as numpy
  double product = 1;            // float Prod
};

[[nodiscard]] Result<ReductionStatistics> reduction_statistics(const TensorValue& value, ReductionOp op, bool abs);

// A part's statistics from the reductions its worker saved (it saved no value): `saved(op, abs)`
// gives a saved reduction's value and dtype if there is one. `count` is the part's element count.
// Mean/Variance/Std need the part's mean (or float sum), and variance (or std); the others their
// own reduction. nullopt when the worker did not save what is needed.
using SavedReductionLookup = std::function<std::optional<std::pair<double, ElementType>>(ReductionOp, bool)>;
[[nodiscard]] std::optional<ReductionStatistics> reduction_statistics_from_saved(ReductionOp op, bool abs, uint64_t count,
                                                                                 const SavedReductionLookup& saved);

// Adds another part's statistics (same op and abs; the dtypes must agree).
[[nodiscard]] Result<void> merge_reduction_statistics(ReductionStatistics& into, const ReductionStatistics& part);
[[nodiscard]] Result<ReductionValue> finish_reduction(const ReductionStatistics& statistics);

// Follows numpy: min/max keep the dtype; float results are rounded to the input's float dtype
// (so a float32 prod that overflows is inf); integer sum/prod are int64, or uint64 for unsigned
// input (wrapping like numpy);
// integer mean/std/variance/l1/l2 are float64; std and variance are population (N) statistics.
[[nodiscard]] Result<ReductionValue> compute_reduction(const TensorValue& value, ReductionOp op, bool abs);

}  // namespace vigil
