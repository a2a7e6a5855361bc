#include "binomial.h"

#include <cmath>
#include <limits>

namespace vigil::builtin {

namespace {

// The standard normal CDF.
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

double one_sided_z(double confidence) {
  if (!(confidence > 0.5)) return 0.0;
  if (confidence >= 1.0) return std::numeric_limits<double>::infinity();
  // Bisection on the CDF: 200 halvings of [0, 40] reach double precision, and this runs once per rule.
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 0; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < confidence ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

ProportionBounds wilson_bounds(int64_t k, int64_t n, double z) {
  if (n <= 0) return {0.0, 1.0};
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  if (z == 0) return {p, p};
  const double z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
  return {std::fmax(0.0, centre - half), std::fmin(1.0, centre + half)};
}

double difference_upper_bound(int64_t k1, int64_t n1, int64_t k2, int64_t n2, double z) {
  if (z == 0)
    return static_cast<double>(k1) / static_cast<double>(n1) - static_cast<double>(k2) / static_cast<double>(n2);
  const double m1 = static_cast<double>(n1) + 2, m2 = static_cast<double>(n2) + 2;
  const double p1 = (static_cast<double>(k1) + 1) / m1;
  const double p2 = (static_cast<double>(k2) + 1) / m2;
  return p1 - p2 + z * std::sqrt(p1 * (1 - p1) / m1 + p2 * (1 - p2) / m2);
}

}  // namespace vigil::builtin
