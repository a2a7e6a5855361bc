#include "trial/record_reader.h"

#include <fmt/format.h>

#include <span>

#include "format/event_proto.h"
#include "format/tfrecord.h"

namespace vigil {

std::shared_ptr<AlignedBuffer> RecordBufferPool::get(size_t size) {
  if (size < kMinPooledBytes) return std::make_shared<AlignedBuffer>(size);
  std::unique_ptr<AlignedBuffer> buffer;
  {
    std::lock_guard lock(mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if ((*it)->size() >= size && (*it)->size() / 2 <= size) {  // fits, and wastes at most half
        buffer = std::move(*it);
        free_.erase(it);
        break;
      }
  }
  if (!buffer) buffer = std::make_unique<AlignedBuffer>(size);
  return std::shared_ptr<AlignedBuffer>(buffer.release(),
                                        [pool = shared_from_this()](AlignedBuffer* b) { pool->give_back(b); });
}

void RecordBufferPool::give_back(AlignedBuffer* buffer) {
  std::unique_ptr<AlignedBuffer> owned(buffer);
  std::lock_guard lock(mu_);
  if (free_.size() < kMaxKept) free_.push_back(std::move(owned));
}

size_t RecordBufferPool::kept() {
  std::lock_guard lock(mu_);
  return free_.size();
}

Result<TensorValue> RecordReader::read(const RecordLocation& where) const {
  auto opened = files_.open(where.file);
  if (!opened) return fail(opened.error());
  const storage::StoredObject& ef = **opened;
  if (where.length < format::kRecordOverhead)
    return fail(Error::index_reader(
        fmt::format("{}: the index entry at offset {} has length {}, shorter than any record ({} bytes), so its "
                    "value cannot be read",
                    ef.description(), where.start, where.length, format::kRecordOverhead),
        ef.description()));
  uint64_t file_size = ef.size();
  auto outside = [&] { return where.start > file_size || where.length > file_size - where.start; };
  if (outside()) {
    // A writer that appends to its event files instead of publishing them whole: look again.
    if (auto now = ef.current_size()) file_size = *now;
  }
  if (outside())
    return fail(Error::corrupt(ef.description(), where.start,
                               fmt::format("index entry (start {}, length {}) lies outside the file ({} bytes)",
                                           where.start, where.length, file_size)));
  constexpr size_t kMaxShift = 16;  // the largest element (complex128)
  size_t shift = 0;
  {
    std::lock_guard lock(mu_);
    if (auto it = content_shift_.find(where.length); it != content_shift_.end()) shift = it->second;
  }
  auto buffer = buffers_->get(where.length + kMaxShift);
  std::byte* const record_start = buffer->data() + shift;
  if (auto r = ef.read_at(where.start, {record_start, where.length}); !r) return fail(r.error());
  std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(record_start), where.length};
  auto corrupt = [&](std::string reason) { return fail(Error::corrupt(ef.description(), where.start, std::move(reason))); };
  auto record = format::parse_record(bytes);
  if (!record) return corrupt(record.error());
  if (record->record_size() != where.length)
    return corrupt(fmt::format("record is {} bytes but the index says {}", record->record_size(), where.length));
  auto event = format::decode_event(record->payload);
  if (!event) return corrupt(event.error());
  if (event->values.empty() || event->values.front().kind != format::SummaryValueView::Kind::Tensor)
    return corrupt("value is not tensor");
  const auto& content = event->values.front().tensor.tensor_content;
  if (!content.empty()) {
    // The shift that puts the content on a kMaxShift boundary, for the next record of this length.
    const size_t offset = size_t(content.data() - reinterpret_cast<const uint8_t*>(record_start));
    const auto aligned = uint8_t((kMaxShift - offset % kMaxShift) % kMaxShift);
    if (aligned != shift) {
      std::lock_guard lock(mu_);
      content_shift_[where.length] = aligned;
    }
  }
  return decode_tensor_value(std::move(event->values.front().tensor), buffer, ef.description(), where.start);
}

}  // namespace vigil
