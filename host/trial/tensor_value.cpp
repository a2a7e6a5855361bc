#include "trial/tensor_value.h"

#include <fmt/format.h>

#include <cstring>
#include <new>

namespace vigil {

namespace {
constexpr std::align_val_t kBufferAlignment{64};

// Number of elements of `shape`, or nullopt on a negative dim or overflow.
std::optional<uint64_t> element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > UINT64_MAX / uint64_t(d)) return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}
}  // namespace

AlignedBuffer::AlignedBuffer(size_t size)
    : data_(static_cast<std::byte*>(::operator new(size == 0 ? 1 : size, kBufferAlignment))), size_(size) {}

AlignedBuffer::~AlignedBuffer() { ::operator delete(data_, kBufferAlignment); }

TensorValue TensorValue::numeric(ElementType type, std::vector<int64_t> shape, std::span<const std::byte> bytes,
                                 std::shared_ptr<const void> owner) {
  TensorValue v;
  v.type_ = type;
  v.shape_ = std::move(shape);
  v.bytes_ = bytes;
  v.owner_ = std::move(owner);
  return v;
}

TensorValue TensorValue::copy_of(ElementType type, std::vector<int64_t> shape, std::span<const std::byte> bytes) {
  auto buffer = std::make_shared<AlignedBuffer>(bytes.size());
  if (!bytes.empty()) std::memcpy(buffer->data(), bytes.data(), bytes.size());
  std::span<const std::byte> view{buffer->data(), bytes.size()};
  return numeric(type, std::move(shape), view, std::move(buffer));
}

TensorValue TensorValue::strings(std::vector<int64_t> shape, std::vector<std::string> values) {
  TensorValue v;
  v.type_ = ElementType::String;
  v.shape_ = std::move(shape);
  v.strings_ = std::move(values);
  return v;
}

size_t TensorValue::size() const {
  size_t n = 1;
  for (int64_t d : shape_) n *= size_t(d);
  return n;
}

namespace {

// Values held in the proto's repeated fallback fields (never written by smdebug): 1-d unless the
// shape agrees with the count.
template <typename Out, typename In>
TensorValue from_repeated(ElementType type, const std::vector<In>& in, const std::vector<int64_t>& shape) {
  std::vector<Out> tmp(in.begin(), in.end());
  std::vector<int64_t> out_shape = shape;
  auto n = element_count(shape);
  if (!n || *n != tmp.size()) out_shape = {int64_t(tmp.size())};
  return TensorValue::copy_of(type, std::move(out_shape), std::as_bytes(std::span<const Out>(tmp)));
}

}  // namespace

Result<TensorValue> decode_tensor_value(format::TensorProtoView proto, std::shared_ptr<const void> owner,
                                        std::string_view file, uint64_t offset) {
  auto count = element_count(proto.shape);
  if (!count) return fail(Error::corrupt(std::string(file), offset, "tensor shape has a negative or huge dimension"));

  // DT_STRING and its reference variant DT_STRING_REF (107) hold strings, and so may DT_INVALID (0).
  // Strings have no item size: the numeric path below must never see them (it divides by it).
  const bool string_dtype = format::element_type_of(proto.dtype) == ElementType::String;
  if (proto.dtype == 0 || string_dtype) {
    if (!proto.string_val.empty() || string_dtype || *count == 0) {
      std::vector<int64_t> shape = proto.shape;
      if (*count != proto.string_val.size()) shape = {int64_t(proto.string_val.size())};
      std::vector<std::string> values(proto.string_val.begin(), proto.string_val.end());
      return TensorValue::strings(std::move(shape), std::move(values));
    }
    return fail(Error::corrupt(std::string(file), offset, "tensor record has no dtype and no strings"));
  }

  auto type = format::element_type_of(proto.dtype);
  if (!type) {
    Error e = Error::not_supported(
        fmt::format("unsupported tensor dtype {} in {} at byte offset {}", proto.dtype, file, offset));
    e.file = std::string(file);
    e.offset = offset;
    return fail(std::move(e));
  }
  const auto& info = format::element_type_info(*type);

  if (!proto.tensor_content.empty() || *count == 0) {
    if (*count > proto.tensor_content.size() / info.item_size + 1 ||
        *count * info.item_size != proto.tensor_content.size())
      return fail(Error::corrupt(std::string(file), offset,
                                 fmt::format("tensor_content holds {} bytes but shape needs {} elements of {} bytes",
                                             proto.tensor_content.size(), *count, info.item_size)));
    std::span<const std::byte> bytes = std::as_bytes(proto.tensor_content);
    // Zero copy when the element alignment allows; otherwise one aligned copy.
    if (reinterpret_cast<uintptr_t>(bytes.data()) % info.item_size == 0)
      return TensorValue::numeric(*type, std::move(proto.shape), bytes, std::move(owner));
    return TensorValue::copy_of(*type, std::move(proto.shape), bytes);
  }

  using ET = ElementType;
  switch (*type) {
    case ET::Float32: if (!proto.float_val.empty()) return from_repeated<float>(*type, proto.float_val, proto.shape); break;
    case ET::Float64: if (!proto.double_val.empty()) return from_repeated<double>(*type, proto.double_val, proto.shape); break;
    case ET::Int32: if (!proto.int_val.empty()) return from_repeated<int32_t>(*type, proto.int_val, proto.shape); break;
    case ET::Int16: if (!proto.int_val.empty()) return from_repeated<int16_t>(*type, proto.int_val, proto.shape); break;
    case ET::Int8: if (!proto.int_val.empty()) return from_repeated<int8_t>(*type, proto.int_val, proto.shape); break;
    case ET::UInt8: if (!proto.int_val.empty()) return from_repeated<uint8_t>(*type, proto.int_val, proto.shape); break;
    case ET::UInt16: if (!proto.int_val.empty()) return from_repeated<uint16_t>(*type, proto.int_val, proto.shape); break;
    case ET::Int64: if (!proto.int64_val.empty()) return from_repeated<int64_t>(*type, proto.int64_val, proto.shape); break;
    case ET::Float16: if (!proto.half_val.empty()) return from_repeated<uint16_t>(*type, proto.half_val, proto.shape); break;
    case ET::BFloat16: if (!proto.half_val.empty()) return from_repeated<uint16_t>(*type, proto.half_val, proto.shape); break;
    case ET::Bool:
      if (!proto.bool_val.empty()) {
        std::vector<uint8_t> tmp(proto.bool_val.begin(), proto.bool_val.end());
        return from_repeated<uint8_t>(*type, tmp, proto.shape);
      }
      break;
    default: break;
  }
  return fail(Error::corrupt(std::string(file), offset, "tensor record holds no values for its non-empty shape"));
}

}  // namespace vigil
