#include "format/dtype.h"

#include <array>

namespace vigil::format {
namespace {

// Indexed by ElementType. numpy has no bfloat16 or float8, so they travel as raw void ("<V2", "|V1");
// their names are torch's and ml_dtypes'. Strings are written with no dtype at all (DT_INVALID,
// spec §3.4), hence DataType::Invalid.
constexpr std::array<ElementTypeInfo, kElementTypeCount> kInfo = {{
    {"float16", "<f2", 2, DataType::Half},
    {"bfloat16", "<V2", 2, DataType::BFloat16},
    {"float32", "<f4", 4, DataType::Float},
    {"float64", "<f8", 8, DataType::Double},
    {"int8", "|i1", 1, DataType::Int8},
    {"int16", "<i2", 2, DataType::Int16},
    {"int32", "<i4", 4, DataType::Int32},
    {"int64", "<i8", 8, DataType::Int64},
    {"uint8", "|u1", 1, DataType::Uint8},
    {"uint16", "<u2", 2, DataType::Uint16},
    {"uint32", "<u4", 4, DataType::Uint32},
    {"uint64", "<u8", 8, DataType::Uint64},
    {"bool", "|b1", 1, DataType::Bool},
    {"complex64", "<c8", 8, DataType::Complex64},
    {"complex128", "<c16", 16, DataType::Complex128},
    {"str", "<U", 0, DataType::Invalid},
    {"float8_e4m3fn", "|V1", 1, DataType::Float8E4M3FN},
    {"float8_e5m2", "|V1", 1, DataType::Float8E5M2},
}};

}  // namespace

const ElementTypeInfo& element_type_info(ElementType t) { return kInfo.at(static_cast<size_t>(t)); }

std::optional<ElementType> element_type_of(int32_t data_type) {
  if (data_type > 100) data_type -= 100;  // *_REF variants
  switch (static_cast<DataType>(data_type)) {
    case DataType::Float: return ElementType::Float32;
    case DataType::Double: return ElementType::Float64;
    case DataType::Int32: return ElementType::Int32;
    case DataType::Uint8: return ElementType::UInt8;
    case DataType::Int16: return ElementType::Int16;
    case DataType::Int8: return ElementType::Int8;
    case DataType::String: return ElementType::String;
    case DataType::Complex64: return ElementType::Complex64;
    case DataType::Int64: return ElementType::Int64;
    case DataType::Bool: return ElementType::Bool;
    case DataType::BFloat16: return ElementType::BFloat16;
    case DataType::Uint16: return ElementType::UInt16;
    case DataType::Complex128: return ElementType::Complex128;
    case DataType::Half: return ElementType::Float16;
    case DataType::Uint32: return ElementType::UInt32;
    case DataType::Uint64: return ElementType::UInt64;
    case DataType::Float8E5M2: return ElementType::Float8E5M2;
    case DataType::Float8E4M3FN: return ElementType::Float8E4M3FN;
    // DT_INVALID needs the caller's string_val check; quantized types carry a scale that is not
    // in the file, so decoding them as plain integers would be wrong data.
    default: return std::nullopt;
  }
}

}  // namespace vigil::format
