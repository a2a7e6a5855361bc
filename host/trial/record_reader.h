// Reading one tensor record of an event file, where an index entry says it is: one pread into an
// aligned buffer, then the value is viewed in place (zero copy).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

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

class RecordReader {
 public:
  explicit RecordReader(const EventFileCache& files) : files_(files) {}

  // The record's tensor value; Corrupt when the record or the entry is malformed.
  Result<TensorValue> read(const RecordLocation& where) const;

 private:
  const EventFileCache& files_;
  // Record length -> where to place the record in its buffer so that the tensor's content is
  // aligned and can be used in place: records of one tensor have the same length and layout.
  mutable std::mutex mu_;
  mutable std::unordered_map<uint64_t, uint8_t> content_shift_;
};

}  // namespace vigil
