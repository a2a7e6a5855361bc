// Reading one tensor record of an event file, where an index entry says it is: one read (a pread,
// or one ranged GET of an S3 object) into an
// aligned buffer, then the value is viewed in place (zero copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "trial/event_file_cache.h"
#include "trial/tensor_value.h"

namespace vigil {

// Where a record lies, as an index entry gives it.
struct RecordLocation {
  uint32_t file = 0;  // EventFileCache id
  uint64_t start = 0;
  uint64_t length = 0;
};

// Buffers of large records, reused: a fresh multi-MiB buffer per value costs a page fault per
// 4 KiB on first touch, and malloc keeps freed ones in its heap once its mmap threshold has grown
// past them (the full scan's peak RSS was 68 MiB for 4 MiB tensors). A buffer comes back when the
// last value viewing it is released; a few are kept.
class RecordBufferPool : public std::enable_shared_from_this<RecordBufferPool> {
 public:
  static constexpr size_t kMinPooledBytes = size_t(256) << 10;
  static constexpr size_t kMaxKept = 4;

  std::shared_ptr<AlignedBuffer> get(size_t size);
  size_t kept();

 private:
  void give_back(AlignedBuffer* buffer);
  std::mutex mu_;
  std::vector<std::unique_ptr<AlignedBuffer>> free_;
};

class RecordReader {
 public:
  explicit RecordReader(const EventFileCache& files) : files_(files) {}

  // The record's tensor value; Corrupt when the record or the entry is malformed.
  Result<TensorValue> read(const RecordLocation& where) const;

 private:
  const EventFileCache& files_;
  // Shared with the buffers handed out, which may outlive the reader.
  std::shared_ptr<RecordBufferPool> buffers_ = std::make_shared<RecordBufferPool>();
  // Record length -> where to place the record in its buffer so that the tensor's content is
  // aligned and can be used in place: records of one tensor have the same length and layout.
  mutable std::mutex mu_;
  mutable std::unordered_map<uint64_t, uint8_t> content_shift_;
};

}  // namespace vigil
