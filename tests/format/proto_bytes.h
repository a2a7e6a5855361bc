// A tiny protobuf writer for hand-made test inputs (fields by number and wire type).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace vigil::test::proto {

inline void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void key(std::string& out, uint32_t field, uint32_t wire) { varint(out, (uint64_t{field} << 3) | wire); }
// A length-delimited field.
inline std::string ld(uint32_t field, const std::string& body) {
  std::string out;
  key(out, field, 2);
  varint(out, body.size());
  return out + body;
}
inline std::string vi(uint32_t field, uint64_t v) {
  std::string out;
  key(out, field, 0);
  varint(out, v);
  return out;
}
inline std::string f32(uint32_t field, float f) {
  std::string out;
  key(out, field, 5);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
  return out;
}
inline std::string f64(uint32_t field, double d) {
  std::string out;
  key(out, field, 1);
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
  return out;
}

}  // namespace vigil::test::proto
