// CRC-32C (Castagnoli) and TFRecord's CRC masking.
// The SSE4.2 `crc32` instruction is used when the CPU has it; the portable table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace vigil::format {

// crc32c of `bytes`, continuing from `crc` (0 to start). Dispatches to hardware when available.
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc = 0);
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// The two implementations, exposed for tests and benchmarks.
uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc = 0);
uint32_t crc32c_hardware(const void* data, size_t size, uint32_t crc = 0);  // requires hardware
bool crc32c_hardware_available();

// TFRecord mask: rotate right by 15, add 0xA282EAD8.
constexpr uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }
constexpr uint32_t unmask_crc(uint32_t masked) {
  uint32_t rot = masked - 0xA282EAD8u;
  return (rot >> 17) | (rot << 15);
}

// smdebug's hooks write this constant footer (masked crc32c of the ASCII text "0x12345678")
// instead of the payload CRC.
inline constexpr uint32_t kMagicFooter = 0x062DC0B3u;

}  // namespace vigil::format
