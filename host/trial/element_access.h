// Element-wise visiting of numeric TensorValues as double (or exact int64/uint64 for integers),
// shared by reductions and value summaries.
#pragma once

#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>

#include <vigil/sdk/half.hpp>
#include "trial/tensor_value.h"

namespace vigil::detail {

enum class NumericKind { Float, Signed, Unsigned, Bool, Complex, String };

inline NumericKind numeric_kind(ElementType t) {
  switch (t) {
    case ElementType::Float16: case ElementType::BFloat16: case ElementType::Float32: case ElementType::Float64:
    case ElementType::Float8E4M3FN: case ElementType::Float8E5M2:
      return NumericKind::Float;
    case ElementType::Int8: case ElementType::Int16: case ElementType::Int32: case ElementType::Int64:
      return NumericKind::Signed;
    case ElementType::UInt8: case ElementType::UInt16: case ElementType::UInt32: case ElementType::UInt64:
      return NumericKind::Unsigned;
    case ElementType::Bool: return NumericKind::Bool;
    case ElementType::Complex64: case ElementType::Complex128: return NumericKind::Complex;
    case ElementType::String: return NumericKind::String;
  }
  return NumericKind::String;
}

template <typename T>
inline T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Calls fn(double) for each element of a Float/Signed/Unsigned/Bool value (C order).
template <typename Fn>
void for_each_as_double(const TensorValue& v, Fn&& fn) {
  const std::byte* p = v.bytes().data();
  const size_t n = v.size();
  switch (v.dtype()) {
    case ElementType::Float16: for (size_t i = 0; i < n; ++i) fn(double(sdk::half_to_float(load<uint16_t>(p + 2 * i)))); break;
    case ElementType::BFloat16: for (size_t i = 0; i < n; ++i) fn(double(sdk::bfloat16_to_float(load<uint16_t>(p + 2 * i)))); break;
    case ElementType::Float8E4M3FN: for (size_t i = 0; i < n; ++i) fn(double(sdk::float8_e4m3fn_to_float(load<uint8_t>(p + i)))); break;
    case ElementType::Float8E5M2: for (size_t i = 0; i < n; ++i) fn(double(sdk::float8_e5m2_to_float(load<uint8_t>(p + i)))); break;
    case ElementType::Float32: for (size_t i = 0; i < n; ++i) fn(double(load<float>(p + 4 * i))); break;
    case ElementType::Float64: for (size_t i = 0; i < n; ++i) fn(load<double>(p + 8 * i)); break;
    case ElementType::Int8: for (size_t i = 0; i < n; ++i) fn(double(load<int8_t>(p + i))); break;
    case ElementType::Int16: for (size_t i = 0; i < n; ++i) fn(double(load<int16_t>(p + 2 * i))); break;
    case ElementType::Int32: for (size_t i = 0; i < n; ++i) fn(double(load<int32_t>(p + 4 * i))); break;
    case ElementType::Int64: for (size_t i = 0; i < n; ++i) fn(double(load<int64_t>(p + 8 * i))); break;
    case ElementType::UInt8: for (size_t i = 0; i < n; ++i) fn(double(load<uint8_t>(p + i))); break;
    case ElementType::UInt16: for (size_t i = 0; i < n; ++i) fn(double(load<uint16_t>(p + 2 * i))); break;
    case ElementType::UInt32: for (size_t i = 0; i < n; ++i) fn(double(load<uint32_t>(p + 4 * i))); break;
    case ElementType::UInt64: for (size_t i = 0; i < n; ++i) fn(double(load<uint64_t>(p + 8 * i))); break;
    case ElementType::Bool: for (size_t i = 0; i < n; ++i) fn(load<uint8_t>(p + i) != 0 ? 1.0 : 0.0); break;
    case ElementType::Complex64:
      for (size_t i = 0; i < n; ++i) fn(double(std::abs(load<std::complex<float>>(p + 8 * i))));
      break;
    case ElementType::Complex128:
      for (size_t i = 0; i < n; ++i) fn(std::abs(load<std::complex<double>>(p + 16 * i)));
      break;
    case ElementType::String: break;
  }
}

// Exact integer visiting: fn(int64_t) for signed/bool, fn(uint64_t) for unsigned.
template <typename Fn>
void for_each_integer(const TensorValue& v, Fn&& fn) {
  const std::byte* p = v.bytes().data();
  const size_t n = v.size();
  switch (v.dtype()) {
    case ElementType::Int8: for (size_t i = 0; i < n; ++i) fn(int64_t(load<int8_t>(p + i))); break;
    case ElementType::Int16: for (size_t i = 0; i < n; ++i) fn(int64_t(load<int16_t>(p + 2 * i))); break;
    case ElementType::Int32: for (size_t i = 0; i < n; ++i) fn(int64_t(load<int32_t>(p + 4 * i))); break;
    case ElementType::Int64: for (size_t i = 0; i < n; ++i) fn(load<int64_t>(p + 8 * i)); break;
    case ElementType::Bool: for (size_t i = 0; i < n; ++i) fn(int64_t(load<uint8_t>(p + i) != 0)); break;
    case ElementType::UInt8: for (size_t i = 0; i < n; ++i) fn(uint64_t(load<uint8_t>(p + i))); break;
    case ElementType::UInt16: for (size_t i = 0; i < n; ++i) fn(uint64_t(load<uint16_t>(p + 2 * i))); break;
    case ElementType::UInt32: for (size_t i = 0; i < n; ++i) fn(uint64_t(load<uint32_t>(p + 4 * i))); break;
    case ElementType::UInt64: for (size_t i = 0; i < n; ++i) fn(load<uint64_t>(p + 8 * i)); break;
    default: break;
  }
}

// A float value as float32: exact for float16, bfloat16 and float8 (format::widens_to_float32).
inline TensorValue widened_to_float32(const TensorValue& v) {
  std::vector<float> out;
  out.reserve(v.size());
  for_each_as_double(v, [&](double x) { out.push_back(float(x)); });
  return TensorValue::copy_of(ElementType::Float32, v.shape(), std::as_bytes(std::span(out)));
}

// Rounds a double to what the float dtype `t` can hold (numpy returns results in the input dtype).
// float8 results stay as computed (float64): float8_e4m3fn's range ends at 448, where most norms and
// sums of a float8 tensor would become NaN.
inline double round_to_dtype(double v, ElementType t) {
  switch (t) {
    case ElementType::Float32: return double(float(v));
    case ElementType::Float16: return double(sdk::half_to_float(sdk::double_to_half(float(v))));
    case ElementType::BFloat16: return double(sdk::bfloat16_to_float(sdk::double_to_bfloat16(float(v))));
    default: return v;
  }
}

}  // namespace vigil::detail
