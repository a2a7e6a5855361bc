// A decoded tensor value. Numeric data is viewed in place inside the record buffer it was read
// into when the bytes are suitably aligned (no copy), and copied into an aligned buffer otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "format/dtype.h"
#include "format/event_proto.h"

namespace vigil {

using format::ElementType;

class TensorValue {
 public:
  TensorValue() = default;

  // A numeric value over `bytes`, kept alive by `owner` (C order, little endian).
  static TensorValue numeric(ElementType type, std::vector<int64_t> shape, std::span<const std::byte> bytes,
                             std::shared_ptr<const void> owner);
  // A numeric value that owns a copy of `bytes`.
  static TensorValue copy_of(ElementType type, std::vector<int64_t> shape, std::span<const std::byte> bytes);
  static TensorValue strings(std::vector<int64_t> shape, std::vector<std::string> values);

  ElementType dtype() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t size() const;  // number of elements
  bool is_string() const { return type_ == ElementType::String; }

  std::span<const std::byte> bytes() const { return bytes_; }
  const std::vector<std::string>& string_values() const { return strings_; }
  // Typed view; T must match the element type.
  template <typename T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  // Whatever keeps bytes() alive (shared with the record buffer when zero-copy).
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  ElementType type_ = ElementType::Float32;
  std::vector<int64_t> shape_;
  std::span<const std::byte> bytes_;
  std::vector<std::string> strings_;
  std::shared_ptr<const void> owner_;
};

// A byte buffer aligned for any element type, the unit that zero-copy values point into.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t size);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_;
  size_t size_;
};

// Turns a decoded TensorProto into a value (taken by value: a reader that moves it in gives the
// value its shape without a copy). `owner` keeps the proto's bytes alive; `where` (file and record
// offset) is used in error messages. Errors: NotSupported for a dtype Vigil cannot decode,
// CorruptData when the content does not match the shape.
[[nodiscard]] Result<TensorValue> decode_tensor_value(format::TensorProtoView proto, std::shared_ptr<const void> owner,
                                        std::string_view file, uint64_t offset);

}  // namespace vigil
