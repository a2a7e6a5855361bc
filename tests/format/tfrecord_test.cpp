#include "format/tfrecord.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/crc32c.h"

namespace vigil::format {
namespace {

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string framed(std::string_view payload, Footer footer = Footer::Magic) {
  std::string out;
  append_record(out, {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()}, footer);
  return out;
}

TEST(TfRecord, LayoutOfOneRecord) {
  const std::string rec = framed("abc");
  ASSERT_EQ(rec.size(), 3 + kRecordOverhead);
  EXPECT_EQ(std::string(rec.data(), 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  uint32_t len_crc = 0, footer = 0;
  std::memcpy(&len_crc, rec.data() + 8, 4);
  std::memcpy(&footer, rec.data() + 15, 4);
  EXPECT_EQ(len_crc, mask_crc(crc32c(rec.data(), 8)));
  EXPECT_EQ(rec.substr(12, 3), "abc");
  EXPECT_EQ(footer, kMagicFooter);
  EXPECT_EQ(rec.substr(15), std::string("\xB3\xC0\x2D\x06", 4));
}

TEST(TfRecord, RoundTripsBothFooters) {
  for (Footer footer : {Footer::Magic, Footer::PayloadCrc}) {
    for (std::string payload : {std::string(), std::string("x"), std::string(1000, '\x7f')}) {
      const std::string rec = framed(payload, footer);
      auto parsed = parse_record(as_bytes(rec));
      ASSERT_TRUE(parsed) << parsed.error();
      EXPECT_EQ(parsed->footer, footer);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(parsed->payload.data()), parsed->payload.size()), payload);
      EXPECT_EQ(parsed->record_size(), rec.size());
    }
  }
}

TEST(TfRecord, PayloadCrcFooterIsTheRealMaskedCrc) {
  const std::string payload = "hello";
  const std::string rec = framed(payload, Footer::PayloadCrc);
  uint32_t footer = 0;
  std::memcpy(&footer, rec.data() + 12 + payload.size(), 4);
  EXPECT_EQ(footer, mask_crc(crc32c(payload.data(), payload.size())));
}

TEST(TfRecord, ParseIgnoresBytesAfterTheRecord) {
  std::string rec = framed("abc") + "trailing garbage";
  auto parsed = parse_record(as_bytes(rec));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->payload.size(), 3u);
}

TEST(TfRecord, SplitsConcatenatedRecords) {
  std::string file;
  std::vector<std::string> payloads = {"first", "", "third record", std::string(300, 'z')};
  for (size_t i = 0; i < payloads.size(); ++i) file += framed(payloads[i], i % 2 ? Footer::PayloadCrc : Footer::Magic);
  auto records = split_records(as_bytes(file));
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), payloads.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ((*records)[i].offset, offset);
    const auto& p = (*records)[i].record.payload;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(p.data()), p.size()), payloads[i]);
    offset += payloads[i].size() + kRecordOverhead;
  }
  auto empty = split_records({});
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(TfRecord, EveryFlippedBitIsRejected) {
  // One bit flipped anywhere in length, length CRC, payload or footer must be detected. (A flip in
  // the payload of a magic-footer record is not detectable by design, so use a real CRC there.)
  for (Footer footer : {Footer::Magic, Footer::PayloadCrc}) {
    const std::string rec = framed("some payload bytes", footer);
    for (size_t byte = 0; byte < rec.size(); ++byte) {
      const bool in_payload = byte >= 12 && byte < rec.size() - 4;
      if (footer == Footer::Magic && in_payload) continue;
      for (int bit = 0; bit < 8; ++bit) {
        std::string bad = rec;
        bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
        auto parsed = parse_record(as_bytes(bad));
        EXPECT_FALSE(parsed) << "byte " << byte << " bit " << bit;
      }
    }
  }
}

TEST(TfRecord, FailureReasons) {
  std::string rec = framed("payload");
  std::string bad_len_crc = rec;
  bad_len_crc[9] ^= 1;
  EXPECT_EQ(parse_record(as_bytes(bad_len_crc)).error(), "length CRC mismatch");
  std::string bad_footer = rec;
  bad_footer.back() ^= 1;
  EXPECT_EQ(parse_record(as_bytes(bad_footer)).error(), "payload CRC mismatch");
  EXPECT_EQ(parse_record(as_bytes(rec.substr(0, 11))).error(), "truncated record header");
  EXPECT_NE(parse_record(as_bytes(rec.substr(0, rec.size() - 1))).error().find("truncated record"), std::string::npos);
}

TEST(TfRecord, EveryTruncationIsRejected) {
  const std::string file = framed("first record") + framed("second", Footer::PayloadCrc);
  for (size_t n = 0; n < file.size(); ++n) {
    // Copy into an exactly-sized heap buffer so ASan catches any read past the end.
    std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    auto records = split_records(cut);
    const size_t first_size = 12 + kRecordOverhead;
    if (n == 0 || n == first_size) {
      ASSERT_TRUE(records) << n;  // a clean record boundary
      EXPECT_EQ(records->size(), n == 0 ? 0u : 1u);
    } else {
      ASSERT_FALSE(records) << n;
      EXPECT_EQ(records.error().offset, n < first_size ? 0u : first_size);
    }
    if (n < first_size) {
      EXPECT_FALSE(parse_record(cut)) << n;
    }
  }
}

TEST(TfRecord, HugeLengthIsRejectedWithoutAllocating) {
  for (uint64_t len : {uint64_t{1} << 40, ~uint64_t{0}, ~uint64_t{0} - 11, ~uint64_t{0} - 15, uint64_t{100}}) {
    std::string rec(8, '\0');
    for (int i = 0; i < 8; ++i) rec[i] = static_cast<char>((len >> (8 * i)) & 0xFF);
    const uint32_t crc = mask_crc(crc32c(rec.data(), 8));
    for (int i = 0; i < 4; ++i) rec.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
    rec += std::string(20, 'p');  // far fewer bytes than announced
    auto parsed = parse_record(as_bytes(rec));
    ASSERT_FALSE(parsed);
    EXPECT_NE(parsed.error().find("exceeds the available bytes"), std::string::npos);
    auto split = split_records(as_bytes(rec));
    ASSERT_FALSE(split);
    EXPECT_EQ(split.error().offset, 0u);
  }
}

TEST(TfRecord, SplitReportsOffsetOfDamagedRecord) {
  std::string file = framed("aaaa") + framed("bbbb") + framed("cccc", Footer::PayloadCrc);
  const size_t second = 4 + kRecordOverhead;
  file[second + 9] ^= 0x10;  // the second record's length CRC
  auto split = split_records(as_bytes(file));
  ASSERT_FALSE(split);
  EXPECT_EQ(split.error().offset, second);
  EXPECT_EQ(split.error().reason, "length CRC mismatch");
}

}  // namespace
}  // namespace vigil::format
