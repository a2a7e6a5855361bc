// The confidence bounds the calibrated data rules judge rates with (plugins/rule_support/binomial.h),
// against values computed by hand from their formulas.
#include <gtest/gtest.h>

#include <cmath>

#include "binomial.h"

namespace vigil::builtin {
namespace {

TEST(Binomial, OneSidedNormalQuantiles) {
  EXPECT_NEAR(one_sided_z(0.95), 1.6448536, 1e-6);
  EXPECT_NEAR(one_sided_z(0.9), 1.2815516, 1e-6);
  EXPECT_NEAR(one_sided_z(0.975), 1.9599640, 1e-6);
  EXPECT_EQ(one_sided_z(0.5), 0.0);  // no confidence asked: the point estimates
  EXPECT_EQ(one_sided_z(0.0), 0.0);
  EXPECT_TRUE(std::isinf(one_sided_z(1.0)));
}

TEST(Binomial, WilsonBounds) {
  // 4 of 5 at z = 1.96: centre (0.8 + 1.9208/5) / (1 + 3.8416/5) = 0.66966, half-width 0.29412.
  const auto b = wilson_bounds(4, 5, 1.959964);
  EXPECT_NEAR(b.lower, 0.37553, 1e-4);
  EXPECT_NEAR(b.upper, 0.96378, 1e-4);
  const auto point = wilson_bounds(3, 10, 0.0);
  EXPECT_EQ(point.lower, 0.3);
  EXPECT_EQ(point.upper, 0.3);
  const auto none = wilson_bounds(0, 0, 1.645);
  EXPECT_EQ(none.lower, 0.0);
  EXPECT_EQ(none.upper, 1.0);
  // The bounds stay in [0, 1] at the edges, and tighten as the sample grows.
  EXPECT_EQ(wilson_bounds(0, 20, 1.645).lower, 0.0);
  EXPECT_EQ(wilson_bounds(20, 20, 1.645).upper, 1.0);
  EXPECT_GT(wilson_bounds(400, 500, 1.645).lower, wilson_bounds(4, 5, 1.645).lower);
}

TEST(Binomial, AgrestiCaffoDifferenceUpperBound) {
  EXPECT_DOUBLE_EQ(difference_upper_bound(9, 10, 1, 10, 0.0), 0.8);  // z = 0: the raw difference
  // (9+1)/12 - (1+1)/12 = 0.66667, plus 1.645 * sqrt(2 * (10/12)(2/12)/12) = 0.25033.
  EXPECT_NEAR(difference_upper_bound(9, 10, 1, 10, 1.645), 0.66667 + 0.25033, 1e-4);
  // Two indistinguishable classes: the bound stays small only with enough samples.
  EXPECT_LT(difference_upper_bound(50, 100, 50, 100, 1.645), 0.12);
  EXPECT_GT(difference_upper_bound(5, 10, 5, 10, 1.645), 0.3);
}

}  // namespace
}  // namespace vigil::builtin
