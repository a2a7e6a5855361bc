// Reductions of values that hold inf or -inf: numpy's answers (a sum that meets +inf is +inf, one that
// meets both signs is NaN), at every position of the lane loop and its tail, for every float dtype.
// tests/python/test_values.py checks the same against numpy itself, for every reduction and rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <vigil/sdk/half.hpp>

#include "test_support.h"
#include "trial/reductions.h"

namespace vigil {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
TensorValue value_of(ElementType type, const std::vector<T>& xs) {
  std::vector<std::byte> bytes(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(bytes.data(), xs.data(), bytes.size());
  return TensorValue::copy_of(type, {int64_t(xs.size())}, bytes);
}

TensorValue floats(ElementType type, const std::vector<double>& xs) {
  if (type == ElementType::Float64) return value_of(type, xs);
  if (type == ElementType::Float32) return value_of(type, std::vector<float>(xs.begin(), xs.end()));
  std::vector<uint16_t> halves;
  for (double x : xs) halves.push_back(sdk::double_to_half(float(x)));
  return value_of(type, halves);
}

double reduce(const TensorValue& v, ReductionOp op, bool abs = false) {
  auto r = compute_reduction(v, op, abs);
  EXPECT_VIGIL_OK(r);
  return r ? r->value : std::nan("");
}

class NonFiniteReductions : public ::testing::TestWithParam<ElementType> {};

TEST_P(NonFiniteReductions, AnInfAnywhereMakesEverySumBasedReductionInf) {
  // 19 elements: two rounds of the eight lanes and a tail of three; the inf visits each position.
  for (size_t at = 0; at < 19; ++at)
    for (double sign : {1.0, -1.0}) {
      std::vector<double> xs(19, 0.5);
      xs[at] = sign * kInf;
      const TensorValue v = floats(GetParam(), xs);
      SCOPED_TRACE(::testing::Message() << "inf of sign " << sign << " at " << at);
      EXPECT_EQ(reduce(v, ReductionOp::Sum), sign * kInf);
      EXPECT_EQ(reduce(v, ReductionOp::Mean), sign * kInf);
      EXPECT_EQ(reduce(v, ReductionOp::Sum, true), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::Mean, true), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::L1), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::L2), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::L1, true), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::L2, true), kInf);
      EXPECT_EQ(reduce(v, sign > 0 ? ReductionOp::Max : ReductionOp::Min), sign * kInf);
      EXPECT_TRUE(std::isnan(reduce(v, ReductionOp::Variance)));  // numpy: inf - inf in the deviations
      EXPECT_TRUE(std::isnan(reduce(v, ReductionOp::Std)));
    }
}

TEST_P(NonFiniteReductions, InfsOfBothSignsGiveNaNAndAbsGivesInf) {
  for (size_t a : {0u, 3u, 8u, 17u})
    for (size_t b : {1u, 9u, 18u}) {
      std::vector<double> xs(19, -2.0);
      xs[a] = kInf;
      xs[b] = -kInf;
      const TensorValue v = floats(GetParam(), xs);
      SCOPED_TRACE(::testing::Message() << "+inf at " << a << ", -inf at " << b);
      EXPECT_TRUE(std::isnan(reduce(v, ReductionOp::Sum)));
      EXPECT_TRUE(std::isnan(reduce(v, ReductionOp::Mean)));
      EXPECT_EQ(reduce(v, ReductionOp::Sum, true), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::Mean, true), kInf);
      EXPECT_EQ(reduce(v, ReductionOp::L2), kInf);
    }
}

TEST_P(NonFiniteReductions, NaNStillWinsOverInf) {
  std::vector<double> xs(19, 1.0);
  xs[2] = kInf;
  xs[11] = std::nan("");
  const TensorValue v = floats(GetParam(), xs);
  for (ReductionOp op : kAllReductionOps) EXPECT_TRUE(std::isnan(reduce(v, op))) << reduction_name(op);
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, NonFiniteReductions,
                         ::testing::Values(ElementType::Float16, ElementType::Float32, ElementType::Float64));

TEST(NonFiniteReductions, Float64SumsThatOverflowAreInfNotNaN) {
  // Finite inputs whose sum exceeds DBL_MAX: numpy gives inf; the compensation meets inf - inf.
  const TensorValue v = floats(ElementType::Float64, std::vector<double>(20, 1e308));
  EXPECT_EQ(reduce(v, ReductionOp::Sum), kInf);
  EXPECT_EQ(reduce(v, ReductionOp::Mean), kInf);
  EXPECT_EQ(reduce(v, ReductionOp::L1), kInf);
  EXPECT_EQ(reduce(v, ReductionOp::L2), kInf);
  const TensorValue neg = floats(ElementType::Float64, std::vector<double>(20, -1e308));
  EXPECT_EQ(reduce(neg, ReductionOp::Sum), -kInf);
}

TEST(NonFiniteReductions, FiniteSumsKeepTheirCompensation) {
  // 1 + 1e-16 * 8 ... : the compensated sum is exact where plain summation loses the small terms.
  std::vector<double> xs = {1.0};
  for (int i = 0; i < 16; ++i) xs.push_back(1e-16);
  EXPECT_DOUBLE_EQ(reduce(floats(ElementType::Float64, xs), ReductionOp::Sum), 1.0 + 16e-16);
}

}  // namespace
}  // namespace vigil
