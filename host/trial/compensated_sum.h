// A Neumaier-compensated sum, the one every float reduction and value summary uses: close to
// numpy's pairwise float64 sums and insensitive to the order of the terms.
//
// Non-finite terms: once an inf or a NaN enters, the running sum is what numpy's plain sum gives
// (inf, -inf, or NaN for inf - inf and for any NaN), but the compensation term has met inf - inf and
// is NaN. So the compensation counts only while the running sum is finite; `value()` and `merge()`
// apply that rule, and the lane sums of reductions.cpp keep it per lane.
#pragma once

#include <cmath>

namespace vigil::detail {

struct CompensatedSum {
  double sum = 0, comp = 0;

  void add(double x) {
    const double t = sum + x;
    comp += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  // Another partial sum (a lane's): its compensation only where its own sum stayed finite.
  void merge(double other_sum, double other_comp) {
    add(other_sum);
    if (std::isfinite(other_sum)) add(other_comp);
  }
  double value() const { return std::isfinite(sum) ? sum + comp : sum; }
};

}  // namespace vigil::detail
