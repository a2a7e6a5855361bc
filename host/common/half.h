// IEEE binary16 and bfloat16 <-> float conversions (round to nearest even), for float16/bfloat16
// tensors and for rounding reduction results to the input's dtype like numpy does.
#pragma once

#include <bit>
#include <cstdint>

namespace vigil {

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    float f = float(mant) * (1.0f / 16777216.0f);  // subnormal: mant * 2^-24
    return sign ? -f : f;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                                 // subnormal or zero in half
    float v = std::bit_cast<float>(abs) * 16777216.0f;      // scale by 2^24; rint gives RNE
    uint32_t m = uint32_t(__builtin_rintf(v));
    return uint16_t(sign | m);
  }
  uint32_t mant_odd = (abs >> 13) & 1;
  abs += 0xfffu + mant_odd;  // round to nearest even at bit 13
  return uint16_t(sign | ((abs - 0x38000000u) >> 13));
}

inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

inline uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // keep NaN a NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

}  // namespace vigil
