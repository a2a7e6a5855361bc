// The SDK's small-float conversions (vigil/sdk/half.hpp), float8 side: every bit pattern decodes to
// the value its format defines and encodes back to itself; rounding is to nearest, ties to even;
// overflow gives infinity (e5m2) or NaN (e4m3fn, which has no infinity), as torch's casts do.
#include <gtest/gtest.h>

#include <cmath>

#include <vigil/sdk/half.hpp>

namespace vigil::sdk {
namespace {

TEST(SmallFloats, EveryFloat8PatternRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const auto bits = uint8_t(b);
    const float fn = float8_e4m3fn_to_float(bits);
    const float e5 = float8_e5m2_to_float(bits);
    if (std::isnan(fn)) EXPECT_EQ(bits & 0x7f, 0x7f) << b;  // e4m3fn's only NaN: S.1111.111
    else EXPECT_EQ(double_to_float8_e4m3fn(fn), bits) << b;
    if (!std::isnan(e5)) EXPECT_EQ(double_to_float8_e5m2(e5), bits) << b;
    // e5m2 is binary16's upper byte.
    EXPECT_EQ(std::isnan(e5), std::isnan(half_to_float(uint16_t(b << 8)))) << b;
  }
}

TEST(SmallFloats, Float8ValuesByTheirDefinition) {
  EXPECT_EQ(float8_e4m3fn_to_float(0x7e), 448.0f);                 // the largest e4m3fn
  EXPECT_EQ(float8_e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));   // its smallest subnormal
  EXPECT_EQ(float8_e4m3fn_to_float(0x08), std::ldexp(1.0f, -6));   // its smallest normal
  EXPECT_EQ(float8_e4m3fn_to_float(0xb8), -1.0f);
  EXPECT_EQ(float8_e5m2_to_float(0x7b), 57344.0f);                 // the largest e5m2
  EXPECT_EQ(float8_e5m2_to_float(0x7c), INFINITY);
  EXPECT_EQ(float8_e5m2_to_float(0x01), std::ldexp(1.0f, -16));
}

TEST(SmallFloats, Float8RoundingAndOverflow) {
  // 1 + 1/16 lies halfway between 1 and 1.125 in e4m3fn: ties to even (1). 1 + 3/16: to 1.25.
  EXPECT_EQ(float8_e4m3fn_to_float(double_to_float8_e4m3fn(1.0625)), 1.0f);
  EXPECT_EQ(float8_e4m3fn_to_float(double_to_float8_e4m3fn(1.1875)), 1.25f);
  EXPECT_EQ(float8_e4m3fn_to_float(double_to_float8_e4m3fn(460.0)), 448.0f);  // rounds down to the largest
  EXPECT_TRUE(std::isnan(float8_e4m3fn_to_float(double_to_float8_e4m3fn(470.0))));  // past 464: NaN
  EXPECT_TRUE(std::isnan(float8_e4m3fn_to_float(double_to_float8_e4m3fn(INFINITY))));
  EXPECT_EQ(double_to_float8_e4m3fn(-0.0), 0x80);
  EXPECT_EQ(float8_e5m2_to_float(double_to_float8_e5m2(1e6)), INFINITY);
  EXPECT_EQ(float8_e5m2_to_float(double_to_float8_e5m2(-1e6)), -INFINITY);
  EXPECT_EQ(float8_e5m2_to_float(double_to_float8_e5m2(std::ldexp(1.0, -17))), 0.0f);  // half the smallest: ties to even
  EXPECT_EQ(float8_e5m2_to_float(double_to_float8_e5m2(std::ldexp(3.0, -17))), std::ldexp(1.0f, -15));
}

}  // namespace
}  // namespace vigil::sdk
