#include "format/tfrecord.h"

#include "format/crc32c.h"

namespace vigil::format {
namespace {

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t read_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

void append_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

std::expected<RecordView, std::string> parse_record(std::span<const uint8_t> bytes) {
  constexpr size_t kHeader = 12;
  if (bytes.size() < kHeader) return std::unexpected<std::string>("truncated record header");
  // Verify the length CRC before trusting the length for anything.
  if (mask_crc(crc32c(bytes.data(), 8)) != read_le32(bytes.data() + 8))
    return std::unexpected<std::string>("length CRC mismatch");
  const uint64_t length = read_le64(bytes.data());
  // Written so that a huge length cannot overflow the comparison.
  if (length > bytes.size() - kHeader || bytes.size() - kHeader - length < 4)
    return std::unexpected<std::string>("truncated record: length " + std::to_string(length) +
                                        " exceeds the available bytes");
  RecordView view;
  view.payload = bytes.subspan(kHeader, static_cast<size_t>(length));
  const uint32_t footer = read_le32(bytes.data() + kHeader + length);
  if (footer == kMagicFooter) {
    view.footer = Footer::Magic;
  } else if (footer == mask_crc(crc32c(view.payload.data(), view.payload.size()))) {
    view.footer = Footer::PayloadCrc;
  } else {
    return std::unexpected<std::string>("payload CRC mismatch");
  }
  return view;
}

std::array<uint8_t, 12> record_header(uint64_t payload_size) {
  std::array<uint8_t, 12> header{};
  for (int i = 0; i < 8; ++i) header[size_t(i)] = uint8_t(payload_size >> (8 * i));
  const uint32_t crc = mask_crc(crc32c(header.data(), 8));
  for (int i = 0; i < 4; ++i) header[size_t(8 + i)] = uint8_t(crc >> (8 * i));
  return header;
}

std::array<uint8_t, 4> magic_footer() {
  return {uint8_t(kMagicFooter), uint8_t(kMagicFooter >> 8), uint8_t(kMagicFooter >> 16), uint8_t(kMagicFooter >> 24)};
}

void append_record(std::string& out, std::span<const uint8_t> payload, Footer footer) {
  out.reserve(out.size() + payload.size() + kRecordOverhead);
  const auto header = record_header(payload.size());
  out.append(reinterpret_cast<const char*>(header.data()), header.size());
  out.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  const uint32_t f = footer == Footer::Magic ? kMagicFooter : mask_crc(crc32c(payload.data(), payload.size()));
  append_le(out, f, 4);
}

std::expected<std::vector<RecordAt>, RecordSplitError> split_records(std::span<const uint8_t> file_bytes) {
  std::vector<RecordAt> records;
  size_t offset = 0;
  while (offset < file_bytes.size()) {
    auto rec = parse_record(file_bytes.subspan(offset));
    if (!rec) return std::unexpected(RecordSplitError{offset, std::move(rec.error())});
    records.push_back(RecordAt{offset, *rec});
    offset += rec->record_size();
  }
  return records;
}

}  // namespace vigil::format
