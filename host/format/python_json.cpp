#include "format/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace vigil::format {
namespace {

void put_hex4(std::string& out, uint32_t unit) {
  static constexpr char kHex[] = "0123456789abcdef";  // Python writes lowercase hex
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(unit >> shift) & 0xF]);
}

// Decodes one UTF-8 sequence starting at s[i]; advances i. Malformed input yields U+FFFD so the
// output stays valid ASCII JSON (Python strings cannot hold such bytes in the first place).
uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    ++i;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3;
    cp = b0 & 0x07;
  } else {
    ++i;
    return 0xFFFD;
  }
  if (i + n >= s.size()) {  // not enough continuation bytes
    ++i;
    return 0xFFFD;
  }
  for (size_t k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return 0xFFFD;
  }
  i += n + 1;
  return cp;
}

// json.dumps(ensure_ascii=True): escapes '"', '\\', the named controls, and everything outside
// printable ASCII (' '..'~'), including DEL.
void dump_string(std::string& out, std::string_view s) {
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      default: break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u <= 0x7E) {
      out.push_back(c);
      ++i;
      continue;
    }
    const uint32_t cp = next_code_point(s, i);
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      put_hex4(out, 0xD800 | (v >> 10));
      put_hex4(out, 0xDC00 | (v & 0x3FF));
    } else {
      put_hex4(out, cp);
    }
  }
  out.push_back('"');
}

// float.__repr__: the shortest digits that round-trip, positional when the decimal exponent is in
// [-4, 16), otherwise d.ddde[+-]XX; always a '.0' or an exponent so it reads back as a float.
void dump_float(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-Infinity" : "Infinity";
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // "-d.ddde+XX"
  bool negative = false;
  if (sci.front() == '-') {
    negative = true;
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits.push_back(c);
  const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());

  if (negative) out.push_back('-');
  const int n = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (n <= exp + 1) {
      out += digits;
      out.append(static_cast<size_t>(exp + 1 - n), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(exp + 1));
      out.push_back('.');
      out.append(digits, static_cast<size_t>(exp + 1));
    }
    return;
  }
  out.push_back(digits[0]);
  if (n > 1) {
    out.push_back('.');
    out.append(digits, 1);
  }
  out.push_back('e');
  out.push_back(exp < 0 ? '-' : '+');
  const int mag = exp < 0 ? -exp : exp;
  if (mag < 10) out.push_back('0');
  out += std::to_string(mag);
}

void dump(std::string& out, const nlohmann::ordered_json& v) {
  using T = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case T::null: out += "null"; return;
    case T::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case T::number_integer: out += std::to_string(v.get<int64_t>()); return;
    case T::number_unsigned: out += std::to_string(v.get<uint64_t>()); return;
    case T::number_float: dump_float(out, v.get<double>()); return;
    case T::string: dump_string(out, v.get_ref<const std::string&>()); return;
    case T::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        if (!first) out += ", ";
        first = false;
        dump_string(out, key);
        out += ": ";
        dump(out, value);
      }
      out.push_back('}');
      return;
    }
    case T::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        dump(out, e);
      }
      out.push_back(']');
      return;
    }
    case T::binary: {  // not a JSON type; Python would see a list of ints
      out.push_back('[');
      bool first = true;
      for (uint8_t b : v.get_binary()) {
        if (!first) out += ", ";
        first = false;
        out += std::to_string(b);
      }
      out.push_back(']');
      return;
    }
    case T::discarded: out += "null"; return;
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  dump(out, value);
  return out;
}

}  // namespace vigil::format
