// Vigil C++ SDK: conversions of the small floats training uses: IEEE binary16 (float16), bfloat16,
// and the two float8 formats torch has (float8_e4m3fn, float8_e5m2). The one implementation: the
// SDK's tensor views, the host's reader, reductions and writer, and the Python bindings all use it.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace vigil::sdk::inline v1 {

// binary16 to float (exact), on the bits: it runs once per element of every float16 tensor read.
[[nodiscard]] inline float half_to_float(uint16_t h) noexcept {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    const float f = float(mant) * (1.0f / 16777216.0f);  // subnormal: mant * 2^-24
    return sign ? -f : f;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// bfloat16 is the upper half of a float32 (exact).
[[nodiscard]] inline float bfloat16_to_float(uint16_t b) noexcept { return std::bit_cast<float>(uint32_t(b) << 16); }

// float8_e5m2 is the upper byte of a binary16 (exact).
[[nodiscard]] inline float float8_e5m2_to_float(uint8_t b) noexcept { return half_to_float(uint16_t(uint16_t(b) << 8)); }

// float8_e4m3fn to float (exact): exponent bias 7, 3 mantissa bits, no infinities; S.1111.111 is NaN.
[[nodiscard]] inline float float8_e4m3fn_to_float(uint8_t b) noexcept {
  const uint32_t exp = (b >> 3) & 0xfu;
  const uint32_t mant = b & 0x7u;
  float f;
  if (exp == 0xf && mant == 0x7) f = std::numeric_limits<float>::quiet_NaN();
  else if (exp == 0) f = float(mant) * (1.0f / 512.0f);  // subnormal: mant * 2^-9
  else f = std::bit_cast<float>(((exp + 120) << 23) | (mant << 20));
  return (b & 0x80) ? -f : f;
}

namespace detail {

// The layout of a small float: sign, `exp_bits` exponent bits biased by `exp_bias`, `mant_bits`
// mantissa bits. IEEE-like formats keep the top exponent for infinities and NaN; a finite-only
// format (float8_e4m3fn) uses it for numbers too, its all-ones pattern being its one NaN.
struct SmallFloatFormat {
  int exp_bits, mant_bits, exp_bias;
  bool finite_only;
};

// The small float nearest to `v`, ties to even, from the double itself (no rounding through float).
// Overflow gives infinity, or NaN in a finite-only format (as torch's conversions do).
[[nodiscard]] inline uint16_t to_small_float(double v, SmallFloatFormat f) noexcept {
  const int mant_bits = f.mant_bits, exp_bias = f.exp_bias;
  const uint16_t sign = std::signbit(v) ? static_cast<uint16_t>(1u << (f.exp_bits + mant_bits)) : 0;
  const uint16_t inf = static_cast<uint16_t>(((1u << f.exp_bits) - 1) << mant_bits);
  const uint16_t nan = f.finite_only ? static_cast<uint16_t>(inf | ((1u << mant_bits) - 1))
                                     : static_cast<uint16_t>(inf | (1u << (mant_bits - 1)));
  const uint16_t overflow = f.finite_only ? nan : inf;
  if (std::isnan(v)) return sign | nan;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);
  int e = e2 - 1;  // a = 1.f * 2^e
  const int min_exp = 1 - exp_bias;
  if (e < min_exp) {
    // Subnormal: a multiple of 2^(min_exp - mant_bits). A result of 2^mant_bits is the smallest normal.
    const double k = std::nearbyint(std::ldexp(a, mant_bits - min_exp));
    return sign | static_cast<uint16_t>(k);
  }
  double q = std::nearbyint(std::ldexp(a, mant_bits - e));  // in [2^m, 2^(m+1)]
  if (q == std::ldexp(1.0, mant_bits + 1)) {
    q /= 2;
    ++e;
  }
  const int max_exp = f.finite_only ? (1 << f.exp_bits) - 1 - exp_bias : exp_bias;
  if (e > max_exp) return sign | overflow;
  return sign | static_cast<uint16_t>(((e + exp_bias) << mant_bits) | (static_cast<uint32_t>(q) - (1u << mant_bits)));
}

}  // namespace detail

// The binary16 nearest to `v` (ties to even; overflow to inf; NaN stays NaN).
[[nodiscard]] inline uint16_t double_to_half(double v) noexcept { return detail::to_small_float(v, {5, 10, 15, false}); }

// The bfloat16 nearest to `v` (ties to even; overflow to inf; NaN stays NaN).
[[nodiscard]] inline uint16_t double_to_bfloat16(double v) noexcept { return detail::to_small_float(v, {8, 7, 127, false}); }

// The float8_e5m2 nearest to `v` (ties to even; overflow to inf; NaN stays NaN).
[[nodiscard]] inline uint8_t double_to_float8_e5m2(double v) noexcept {
  return static_cast<uint8_t>(detail::to_small_float(v, {5, 2, 15, false}));
}

// The float8_e4m3fn nearest to `v` (ties to even; beyond 448 and its rounding margin, NaN).
[[nodiscard]] inline uint8_t double_to_float8_e4m3fn(double v) noexcept {
  return static_cast<uint8_t>(detail::to_small_float(v, {4, 3, 7, true}));
}

}  // namespace vigil::sdk::inline v1
