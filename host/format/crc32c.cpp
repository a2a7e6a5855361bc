#include "format/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VIGIL_CRC32C_X86 1
#endif

namespace vigil::format {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: kTables[0] is the classic byte table; kTables[k][b] is the CRC of byte b
// followed by k zero bytes, which lets the portable path consume 8 bytes per step.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1u) ? (c >> 1) ^ kPoly : (c >> 1);
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}
constexpr auto kTables = make_tables();

inline uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // byte order independent of the host
  return v;
}

#ifdef VIGIL_CRC32C_X86
// Only this function is compiled for SSE4.2; callers reach it after the runtime CPU check.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const unsigned char* p, size_t n, uint32_t state) {
#if defined(__x86_64__)
  uint64_t s = state;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);  // unaligned-safe load; x86 is little endian
    s = _mm_crc32_u64(s, v);
    p += 8;
    n -= 8;
  }
  state = static_cast<uint32_t>(s);
#endif
  while (n > 0) {
    state = _mm_crc32_u8(state, *p);
    ++p;
    --n;
  }
  return state;
}
#endif

bool detect_hardware() {
#ifdef VIGIL_CRC32C_X86
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

}  // namespace

bool crc32c_hardware_available() {
  static const bool available = detect_hardware();
  return available;
}

uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t s = ~crc;
  while (size >= 8) {
    uint64_t v = load_le64(p) ^ s;
    s = kTables[7][v & 0xFF] ^ kTables[6][(v >> 8) & 0xFF] ^ kTables[5][(v >> 16) & 0xFF] ^
        kTables[4][(v >> 24) & 0xFF] ^ kTables[3][(v >> 32) & 0xFF] ^ kTables[2][(v >> 40) & 0xFF] ^
        kTables[1][(v >> 48) & 0xFF] ^ kTables[0][v >> 56];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    s = (s >> 8) ^ kTables[0][(s ^ *p) & 0xFFu];
    ++p;
    --size;
  }
  return ~s;
}

uint32_t crc32c_hardware(const void* data, size_t size, uint32_t crc) {
#ifdef VIGIL_CRC32C_X86
  if (crc32c_hardware_available()) return ~crc32c_sse42(static_cast<const unsigned char*>(data), size, ~crc);
#endif
  // No instruction on this CPU: stay correct rather than fault.
  return crc32c_portable(data, size, crc);
}

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  return crc32c_hardware_available() ? crc32c_hardware(data, size, crc) : crc32c_portable(data, size, crc);
}

uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc) { return crc32c(bytes.data(), bytes.size(), crc); }

}  // namespace vigil::format
