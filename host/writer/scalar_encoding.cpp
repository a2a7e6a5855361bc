#include "writer/scalar_encoding.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <vigil/sdk/half.hpp>

namespace vigil::writer {
namespace {

using format::ElementType;

template <typename T>
[[nodiscard]] Result<std::vector<std::byte>> integer_bytes(double v) {
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);  // exclusive; NaN fails both tests
  T t{};
  if (sizeof(T) == 8 && v == hi) {
    t = std::numeric_limits<T>::max();  // a 64-bit maximum rounds up to 2^63 / 2^64 in a double
  } else if (v >= lo && v < hi) {
    t = static_cast<T>(v);
  } else {
    return fail(Error::internal(fmt::format("reduction value {} does not fit its integer dtype", v)));
  }
  std::vector<std::byte> out(sizeof(T));
  std::memcpy(out.data(), &t, sizeof(T));
  return out;
}

template <typename T>
std::vector<std::byte> raw_bytes(T t) {
  std::vector<std::byte> out(sizeof(T));
  std::memcpy(out.data(), &t, sizeof(T));
  return out;
}

}  // namespace

Result<std::vector<std::byte>> scalar_bytes(ElementType type, double v) {
  switch (type) {
    case ElementType::Float16: return raw_bytes(sdk::double_to_half(v));
    case ElementType::BFloat16: return raw_bytes(sdk::double_to_bfloat16(v));
    case ElementType::Float8E4M3FN: return raw_bytes(sdk::double_to_float8_e4m3fn(v));
    case ElementType::Float8E5M2: return raw_bytes(sdk::double_to_float8_e5m2(v));
    case ElementType::Float32: return raw_bytes(static_cast<float>(v));
    case ElementType::Float64: return raw_bytes(v);
    case ElementType::Int8: return integer_bytes<int8_t>(v);
    case ElementType::Int16: return integer_bytes<int16_t>(v);
    case ElementType::Int32: return integer_bytes<int32_t>(v);
    case ElementType::Int64: return integer_bytes<int64_t>(v);
    case ElementType::UInt8: return integer_bytes<uint8_t>(v);
    case ElementType::UInt16: return integer_bytes<uint16_t>(v);
    case ElementType::UInt32: return integer_bytes<uint32_t>(v);
    case ElementType::UInt64: return integer_bytes<uint64_t>(v);
    case ElementType::Bool: return raw_bytes(static_cast<uint8_t>(v != 0 ? 1 : 0));
    case ElementType::Complex64:
    case ElementType::Complex128:
    case ElementType::String: break;
  }
  return fail(Error::not_supported(
      fmt::format("cannot store a reduction of dtype {}", format::element_type_info(type).numpy_name)));
}

}  // namespace vigil::writer
