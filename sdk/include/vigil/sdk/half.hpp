// Vigil C++ SDK: IEEE binary16 (float16) and bfloat16 conversions. The one implementation: the SDK's
// tensor views, the host's reader, reductions and writer, and the Python bindings all use it.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

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

namespace detail {

// A 16-bit float with `mant_bits` mantissa bits and exponent bias `exp_bias` (binary16: 10, 15;
// bfloat16: 7, 127) nearest to `v`, ties to even, from the double itself (no rounding through float).
[[nodiscard]] inline uint16_t to_small_float(double v, int mant_bits, int exp_bias) noexcept {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const int exp_bits = 15 - mant_bits;
  const uint16_t inf = static_cast<uint16_t>(((1u << exp_bits) - 1) << mant_bits);
  if (std::isnan(v)) return sign | inf | static_cast<uint16_t>(1u << (mant_bits - 1));
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | inf;
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
  if (e > exp_bias) return sign | inf;
  return sign | static_cast<uint16_t>(((e + exp_bias) << mant_bits) | (static_cast<uint32_t>(q) - (1u << mant_bits)));
}

}  // namespace detail

// The binary16 nearest to `v` (ties to even; overflow to inf; NaN stays NaN).
[[nodiscard]] inline uint16_t double_to_half(double v) noexcept { return detail::to_small_float(v, 10, 15); }

// The bfloat16 nearest to `v` (ties to even; overflow to inf; NaN stays NaN).
[[nodiscard]] inline uint16_t double_to_bfloat16(double v) noexcept { return detail::to_small_float(v, 7, 127); }

}  // namespace vigil::sdk::inline v1
