#include "profiler/python_literal.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace vigil::profiler {
namespace {

// Metrics-config strings are a few dozen characters; the bound keeps a hostile file cheap.
constexpr size_t kMaxLiteralBytes = 64 * 1024;

class DictParser {
 public:
  explicit DictParser(std::string_view text) : text_(text) {}

  Result<PythonDict> parse() {
    if (text_.size() > kMaxLiteralBytes)
      return fail(Error::invalid_argument(fmt::format("a dict literal of {} bytes is too long", text_.size())));
    skip_space();
    if (!take('{')) return expected("'{'");
    PythonDict dict;
    skip_space();
    while (!take('}')) {
      auto key = parse_string();
      if (!key) return fail(std::move(key.error()));
      for (const auto& [existing, _] : dict)
        if (existing == *key) return fail(Error::invalid_argument(fmt::format("key '{}' given twice", *key)));
      skip_space();
      if (!take(':')) return expected("':'");
      skip_space();
      auto value = parse_value();
      if (!value) return fail(std::move(value.error()));
      dict.emplace_back(std::move(*key), std::move(*value));
      skip_space();
      if (take(',')) {
        skip_space();
        continue;
      }
      if (peek() != '}') return expected("',' or '}'");
    }
    skip_space();
    if (pos_ != text_.size()) return expected("the end of the text after '}'");
    return dict;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  std::unexpected<Error> expected(std::string_view what) const {
    const std::string found = pos_ < text_.size() ? fmt::format("'{}'", text_[pos_]) : std::string("the end");
    return fail(Error::invalid_argument(fmt::format("expected {} at character {}, found {}", what, pos_ + 1, found)));
  }

  // 'text' or "text" with the escapes \\ \' \" \n \t \r; no prefixes (r'', b'', f'').
  Result<std::string> parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return expected("a quoted string");
    ++pos_;
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\n') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      switch (const char e = text_[pos_++]) {
        case '\\': case '\'': case '"': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        default:
          pos_ -= 2;
          return expected("one of the escapes \\\\ \\' \\\" \\n \\t \\r");
      }
    }
    return fail(Error::invalid_argument(fmt::format("unterminated string starting at character {}", pos_ + 1)));
  }

  Result<PythonScalar> parse_value() {
    const char c = peek();
    if (c == '\'' || c == '"') {
      auto s = parse_string();
      if (!s) return fail(std::move(s.error()));
      return PythonScalar(std::move(*s));
    }
    for (const auto& [word, value] : {std::pair<std::string_view, PythonScalar>{"True", true},
                                      {"False", false}, {"None", PythonNone{}}}) {
      if (text_.substr(pos_).starts_with(word) && !is_word_char(pos_ + word.size())) {
        pos_ += word.size();
        return value;
      }
    }
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return parse_number();
    return expected("a string, a number, True, False or None");
  }

  bool is_word_char(size_t at) const {
    if (at >= text_.size()) return false;
    const char c = text_[at];
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  }

  // Decimal ints and floats as Python writes them (1, -3, 2.5, 1e9, .5); no hex, no underscores.
  Result<PythonScalar> parse_number() {
    const size_t start = pos_;
    bool negative = false;
    if (take('-')) negative = true;
    else (void)take('+');
    const size_t digits = pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c >= '0' && c <= '9') ++pos_;
      else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && (peek() == '-' || peek() == '+')) ++pos_;
      } else break;
    }
    if (is_word_char(pos_)) {
      pos_ = start;
      return expected("a decimal number");
    }
    const std::string_view body = text_.substr(digits, pos_ - digits);
    if (body.empty()) {
      pos_ = start;
      return expected("a number");
    }
    if (!is_float) {
      // Python refuses leading zeros in ints ("05").
      if (body.size() > 1 && body[0] == '0') {
        pos_ = start;
        return expected("a number without leading zeros");
      }
      uint64_t magnitude = 0;
      auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), magnitude);
      const uint64_t limit = uint64_t(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
      if (ec != std::errc() || end != body.data() + body.size() || magnitude > limit)
        return fail(Error::invalid_argument(
            fmt::format("the integer at character {} is out of range", start + 1)));
      return PythonScalar(negative ? int64_t(0 - magnitude) : int64_t(magnitude));
    }
    double value = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
    if (ec != std::errc() || end != body.data() + body.size() || !std::isfinite(value)) {
      pos_ = start;
      return expected("a number");
    }
    return PythonScalar(negative ? -value : value);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Result<PythonDict> parse_python_dict(std::string_view text) { return DictParser(text).parse(); }

std::string python_repr(const PythonScalar& value) {
  struct Repr {
    std::string operator()(PythonNone) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
  };
  return std::visit(Repr{}, value);
}

}  // namespace vigil::profiler
