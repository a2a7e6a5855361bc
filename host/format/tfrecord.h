// TFRecord framing: [u64 length][u32 masked crc(length)][payload][u32 footer], little endian.
// The footer is either smdebug's constant kMagicFooter or the real masked payload CRC; readers
// accept both, always verify the length CRC, and verify a real payload CRC when present.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

namespace vigil::format {

inline constexpr size_t kRecordOverhead = 16;  // 8 length + 4 length crc + 4 footer

enum class Footer { Magic, PayloadCrc };

struct RecordView {
  std::span<const uint8_t> payload;  // points into the bytes given to parse_record
  Footer footer = Footer::Magic;
  size_t record_size() const { return payload.size() + kRecordOverhead; }
};

// Parses the record that starts at bytes[0] (bytes may run past its end). On failure returns a
// short reason ("truncated record header", "length CRC mismatch", ...); the caller adds file and offset.
[[nodiscard]] std::expected<RecordView, std::string> parse_record(std::span<const uint8_t> bytes);

// Appends one framed record to `out`.
void append_record(std::string& out, std::span<const uint8_t> payload, Footer footer = Footer::Magic);

// The 12 bytes before a payload of `payload_size` bytes (length and its masked CRC), and smdebug's
// constant footer after it: for writers that send the payload from where it already is.
std::array<uint8_t, 12> record_header(uint64_t payload_size);
std::array<uint8_t, 4> magic_footer();

struct RecordAt {
  uint64_t offset;  // of the record's first byte in the file
  RecordView record;
};
struct RecordSplitError {
  uint64_t offset;
  std::string reason;
};
// Splits a whole file into records; fails at the first damaged record, naming its offset.
[[nodiscard]] std::expected<std::vector<RecordAt>, RecordSplitError> split_records(std::span<const uint8_t> file_bytes);

}  // namespace vigil::format
