// Vigil C++ SDK: reading and filling a caller's vigil_error (status.h's rules), without allocating.
//
// The one implementation of those rules: the SDK's trampolines, the host's services and the Python
// rule plugin all fill and read error records through it. It lives here, header-only and built on
// the C ABI and the standard library alone, because the host may include SDK headers while a rule
// plugin can include nothing of the host.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "vigil/sdk/version.hpp"

namespace vigil::sdk::inline v1 {

// The length of the longest prefix of `s` of at most `max` bytes that ends on a UTF-8 character
// boundary (never inside a multi-byte character).
inline size_t utf8_prefix_size(std::string_view s, size_t max) noexcept {
  if (s.size() <= max) return s.size();
  size_t n = max;
  // s[n] is the first byte left out: while it continues a multi-byte character, leave that whole
  // character out too.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0u) == 0x80u) --n;
  return n;
}

// Copies `src` into dst[0, capacity) and NUL-terminates it. When it does not fit it is cut at a UTF-8
// character boundary (never inside a multi-byte character). Returns true when it had to cut. `src`
// may overlap `dst`.
inline bool copy_c_string(char* dst, size_t capacity, std::string_view src) noexcept {
  if (capacity == 0) return !src.empty();
  const bool cut = src.size() > capacity - 1;
  const size_t n = utf8_prefix_size(src, capacity - 1);
  if (n > 0) std::memmove(dst, src.data(), n);
  dst[n] = '\0';
  return cut;
}

// A fixed-size char field that may lack its NUL terminator, as a view.
inline std::string_view read_c_string(const char* src, size_t capacity) noexcept {
  const void* nul = std::memchr(src, '\0', capacity);
  return {src, nul ? static_cast<size_t>(static_cast<const char*>(nul) - src) : capacity};
}

// The fields of a vigil_error, with its strings as views. Defaults are what a record too small to hold
// a field means.
struct ErrorRecord {
  vigil_status code = VIGIL_E_INTERNAL;
  uint32_t flags = 0;  // VIGIL_ERRF_*
  vigil_mode mode = VIGIL_MODE_GLOBAL;
  vigil_step step = 0;
  vigil_step last_step = -1;
  std::string_view tensor;
  std::string_view worker;
  std::string_view rule;
  std::string_view message;
};

namespace detail {

// How many bytes of a caller's vigil_error may be touched: its struct_size, at most this header's sizeof.
inline size_t usable_error_size(const vigil_error* err) noexcept {
  if (!err) return 0;
  return std::min<size_t>(err->struct_size, sizeof(vigil_error));
}

// A string field's room inside the usable size (0 when the caller's struct predates it).
inline size_t error_string_room(size_t usable, size_t offset, size_t field_size) noexcept {
  return usable > offset ? std::min(field_size, usable - offset) : 0;
}

}  // namespace detail

// Fills a caller's vigil_error with `record`: only what lies inside err->struct_size, every string
// NUL-terminated and cut at a character boundary, VIGIL_ERRF_TRUNCATED added when one was cut. NULL is
// fine. `record`'s strings may point into `err` itself.
inline void write_error_record(vigil_error* err, const ErrorRecord& record) noexcept {
  if (!VIGIL_HAS_FIELD(err, vigil_error, code)) return;
  const size_t usable = detail::usable_error_size(err);
  err->code = record.code;
  if (VIGIL_HAS_FIELD(err, vigil_error, mode)) err->mode = record.mode;
  if (VIGIL_HAS_FIELD(err, vigil_error, step)) err->step = record.step;
  if (VIGIL_HAS_FIELD(err, vigil_error, last_step)) err->last_step = record.last_step;
  bool cut = false;
  const auto put = [&](size_t offset, size_t field_size, std::string_view text) {
    const size_t room = detail::error_string_room(usable, offset, field_size);
    if (room > 0) cut |= copy_c_string(reinterpret_cast<char*>(err) + offset, room, text);
  };
  put(offsetof(vigil_error, tensor), sizeof(err->tensor), record.tensor);
  put(offsetof(vigil_error, worker), sizeof(err->worker), record.worker);
  put(offsetof(vigil_error, rule), sizeof(err->rule), record.rule);
  put(offsetof(vigil_error, message), sizeof(err->message), record.message);
  if (VIGIL_HAS_FIELD(err, vigil_error, flags)) err->flags = record.flags | (cut ? uint32_t{VIGIL_ERRF_TRUNCATED} : 0u);
}

// What a callee reported: `status` is its return value (it decides, whatever err->code says); `err`
// may be NULL and is read only as far as its struct_size reaches. The views point into `err`.
inline ErrorRecord read_error_record(vigil_status status, const vigil_error* err) noexcept {
  ErrorRecord r;
  r.code = status;
  if (VIGIL_HAS_FIELD(err, vigil_error, flags)) r.flags = err->flags;
  if (VIGIL_HAS_FIELD(err, vigil_error, mode)) r.mode = err->mode;
  if (VIGIL_HAS_FIELD(err, vigil_error, step)) r.step = err->step;
  if (VIGIL_HAS_FIELD(err, vigil_error, last_step)) r.last_step = err->last_step;
  const size_t usable = detail::usable_error_size(err);
  const auto get = [&](size_t offset, size_t field_size) -> std::string_view {
    const size_t room = detail::error_string_room(usable, offset, field_size);
    return room > 0 ? read_c_string(reinterpret_cast<const char*>(err) + offset, room) : std::string_view();
  };
  r.tensor = get(offsetof(vigil_error, tensor), sizeof(err->tensor));
  r.worker = get(offsetof(vigil_error, worker), sizeof(err->worker));
  r.rule = get(offsetof(vigil_error, rule), sizeof(err->rule));
  r.message = get(offsetof(vigil_error, message), sizeof(err->message));
  return r;
}

// What a callee writes on VIGIL_OK (status.h): err->code, nothing else.
inline void write_error_ok(vigil_error* err) noexcept {
  if (VIGIL_HAS_FIELD(err, vigil_error, code)) err->code = VIGIL_OK;
}

}  // namespace vigil::sdk::inline v1
