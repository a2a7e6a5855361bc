// TensorFlow DataType values as smdebug writes them, and the element types Vigil decodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vigil::format {

enum class DataType : int32_t {
  Invalid = 0, Float = 1, Double = 2, Int32 = 3, Uint8 = 4, Int16 = 5, Int8 = 6, String = 7,
  Complex64 = 8, Int64 = 9, Bool = 10, QInt8 = 11, QUInt8 = 12, QInt32 = 13, BFloat16 = 14,
  QInt16 = 15, QUInt16 = 16, Uint16 = 17, Complex128 = 18, Half = 19, Resource = 20, Variant = 21,
  Uint32 = 22, Uint64 = 23, Float8E5M2 = 24, Float8E4M3FN = 25,
};

// What a decoded tensor holds. Vigil reads every numeric type correctly (int8 as int8, int16,
// unsigned, bfloat16, float8), unlike smdebug; see docs/compatibility.md. New types are appended.
enum class ElementType : int32_t {
  Float16, BFloat16, Float32, Float64, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64,
  Bool, Complex64, Complex128, String,
  Float8E4M3FN,  // torch.float8_e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, NaN, no infinity
  Float8E5M2,    // torch.float8_e5m2: IEEE-like, 5 exponent bits (bias 15), 2 mantissa bits
};
inline constexpr size_t kElementTypeCount = static_cast<size_t>(ElementType::Float8E5M2) + 1;

struct ElementTypeInfo {
  std::string_view numpy_name;  // "float32", "int8", "bool", "str", "bfloat16", "float8_e4m3fn"
  std::string_view numpy_str;   // array-interface typestr: "<f4", "|i1", "|b1" ("<U" for str)
  size_t item_size;             // bytes per element in tensor_content (0 for String)
  DataType data_type;           // what a writer emits for this element type
};

const ElementTypeInfo& element_type_info(ElementType t);

// The float formats numpy has no dtype for (bfloat16, float8): readers that hand values to numpy, or
// to plugins of an older ABI, give them as float32, which holds every one of their values exactly.
constexpr bool is_float8(ElementType t) { return t == ElementType::Float8E4M3FN || t == ElementType::Float8E5M2; }
constexpr bool widens_to_float32(ElementType t) { return t == ElementType::BFloat16 || is_float8(t); }

// DataType (the *_REF variants, value+100, included) -> element type; nullopt when Vigil cannot decode it.
std::optional<ElementType> element_type_of(int32_t data_type);

}  // namespace vigil::format
