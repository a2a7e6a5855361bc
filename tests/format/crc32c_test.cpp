#include "format/crc32c.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vigil::format {
namespace {

struct Vector {
  std::vector<uint8_t> bytes;
  uint32_t crc;
};

// The RFC 3720 (iSCSI) test vectors and the standard check value.
std::vector<Vector> known_vectors() {
  std::vector<Vector> v;
  const std::string check = "123456789";
  v.push_back({{check.begin(), check.end()}, 0xE3069283u});
  v.push_back({std::vector<uint8_t>(32, 0x00), 0x8A9136AAu});
  v.push_back({std::vector<uint8_t>(32, 0xFF), 0x62A8AB43u});
  std::vector<uint8_t> ascending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<uint8_t>(i);
  v.push_back({ascending, 0x46DD794Eu});
  std::vector<uint8_t> descending(32);
  for (int i = 0; i < 32; ++i) descending[i] = static_cast<uint8_t>(31 - i);
  v.push_back({descending, 0x113FDB5Cu});
  v.push_back({{}, 0u});
  return v;
}

TEST(Crc32c, PortableKnownVectors) {
  for (const auto& v : known_vectors()) EXPECT_EQ(crc32c_portable(v.bytes.data(), v.bytes.size()), v.crc);
}

TEST(Crc32c, HardwareKnownVectors) {
  if (!crc32c_hardware_available()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  for (const auto& v : known_vectors()) EXPECT_EQ(crc32c_hardware(v.bytes.data(), v.bytes.size()), v.crc);
}

TEST(Crc32c, DispatchedKnownVectors) {
  for (const auto& v : known_vectors()) {
    EXPECT_EQ(crc32c(v.bytes.data(), v.bytes.size()), v.crc);
    EXPECT_EQ(crc32c(std::as_bytes(std::span<const uint8_t>(v.bytes))), v.crc);
  }
}

TEST(Crc32c, HardwareMatchesPortableOnRandomBuffers) {
  std::mt19937_64 rng(12345);
  std::vector<uint8_t> buf(4096 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 16; ++align) {
    for (size_t len : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 127, 255, 1000, 1023, 4096}) {
      const uint8_t* p = buf.data() + align;
      const uint32_t seed = static_cast<uint32_t>(rng());
      const uint32_t expected = crc32c_portable(p, len, seed);
      EXPECT_EQ(crc32c_hardware(p, len, seed), expected) << "align " << align << " len " << len;
      EXPECT_EQ(crc32c(p, len, seed), expected);
    }
  }
}

TEST(Crc32c, ContinuationEqualsWholeBuffer) {
  const std::string text = "The quick brown fox jumps over the lazy dog, twice over, for good measure.";
  const uint32_t whole = crc32c_portable(text.data(), text.size());
  for (size_t split = 0; split <= text.size(); ++split) {
    EXPECT_EQ(crc32c_portable(text.data() + split, text.size() - split, crc32c_portable(text.data(), split)), whole);
    EXPECT_EQ(crc32c(text.data() + split, text.size() - split, crc32c(text.data(), split)), whole);
  }
}

TEST(Crc32c, MaskRoundTrips) {
  std::mt19937 rng(7);
  for (uint32_t c : {0u, 1u, 0xFFFFFFFFu, 0x80000000u, 0xE3069283u}) EXPECT_EQ(unmask_crc(mask_crc(c)), c);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t c = rng();
    EXPECT_EQ(unmask_crc(mask_crc(c)), c);
    EXPECT_EQ(mask_crc(unmask_crc(c)), c);
  }
  // rotate right by 15, then add the constant
  EXPECT_EQ(mask_crc(0), 0xA282EAD8u);
  EXPECT_EQ(mask_crc(1u << 15), 1u + 0xA282EAD8u);
}

TEST(Crc32c, MagicFooterIsMaskedCrcOfTheText0x12345678) {
  const std::string magic = "0x12345678";
  EXPECT_EQ(crc32c(magic.data(), magic.size()), 0x6AEDB1D5u);
  EXPECT_EQ(mask_crc(crc32c(magic.data(), magic.size())), kMagicFooter);
  EXPECT_EQ(kMagicFooter, 0x062DC0B3u);
  EXPECT_EQ(unmask_crc(kMagicFooter), 0x6AEDB1D5u);
  static_assert(mask_crc(0x6AEDB1D5u) == kMagicFooter);
}

TEST(Crc32c, LengthCrcOfSpecExample) {
  // spec §10.2: the masked CRC of the 8 length bytes of a 70-byte payload.
  const uint8_t len[8] = {0x46, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(mask_crc(crc32c(len, sizeof len)), 0xA5B93572u);
}

}  // namespace
}  // namespace vigil::format
