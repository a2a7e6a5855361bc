// SHA-256 (FIPS 180-4), used for value fingerprints in `vigil inspect` and the conformance tests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace vigil {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> bytes);
  void update(const void* data, size_t size) { update({static_cast<const std::byte*>(data), size}); }
  std::array<uint8_t, 32> finish();
  std::string finish_hex();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lowercase hex of a digest (what finish_hex() returns, for digests made elsewhere, such as an HMAC).
std::string digest_hex(const std::array<uint8_t, 32>& digest);

}  // namespace vigil
