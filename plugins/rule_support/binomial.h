// Confidence bounds on proportions, for rules that judge rates estimated from counts (mispredicted
// labels, confusion-matrix shares): a bound instead of the raw point estimate keeps a rule from
// judging a class on a handful of samples. Plain functions, no SDK types.
#pragma once

#include <cstdint>

namespace vigil::builtin {

// The one-sided standard normal quantile for `confidence` (0.95 -> 1.645). 0 for a confidence of
// 0.5 or less: the bounds below are then the point estimates themselves.
double one_sided_z(double confidence);

// Wilson score bounds of the proportion k / n for quantile z (one-sided bounds of confidence
// Phi(z) each). z = 0 gives k / n for both; n = 0 gives [0, 1].
struct ProportionBounds {
  double lower;
  double upper;
};
ProportionBounds wilson_bounds(int64_t k, int64_t n, double z);

// An upper bound of p1 - p2 for two independent proportions k1 / n1 and k2 / n2 (n1, n2 > 0):
// Agresti and Caffo's interval (one success and one failure added to each sample) for z > 0, the
// raw difference k1 / n1 - k2 / n2 for z = 0.
double difference_upper_bound(int64_t k1, int64_t n1, int64_t k2, int64_t n2, double z);

}  // namespace vigil::builtin
