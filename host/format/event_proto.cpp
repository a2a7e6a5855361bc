#include "format/event_proto.h"

#include <bit>
#include <charconv>
#include <limits>

namespace vigil::format {
namespace {

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

// Deprecated groups are the only way protobuf nests without a length prefix; cap their depth so a
// hostile payload cannot recurse without bound.
constexpr int kMaxGroupDepth = 64;

std::string_view as_string_view(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// A bounds-checked cursor over one message's bytes. Every read either succeeds or records the
// first error and returns false; nothing reads past `end`.
class Parser {
 public:
  // `error` receives the first failure; sub-parsers share it.
  Parser(std::span<const uint8_t> bytes, std::string* error)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), error_(error) {}

  bool done() const { return p_ == end_; }

  bool fail(std::string why) {
    if (error_->empty()) *error_ = std::move(why);
    return false;
  }

  bool varint(uint64_t& out) {
    if (p_ != end_ && *p_ < 0x80) {  // most tags and lengths are one byte
      out = *p_++;
      return true;
    }
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p_ == end_) return fail("truncated varint");
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) {
        out = v;
        return true;
      }
    }
    return fail("varint longer than 10 bytes");
  }

  bool tag(uint32_t& field, uint32_t& wire) {
    uint64_t t = 0;
    if (!varint(t)) return false;
    if (t > std::numeric_limits<uint32_t>::max()) return fail("field tag out of range");
    field = static_cast<uint32_t>(t >> 3);
    wire = static_cast<uint32_t>(t & 7);
    if (field == 0) return fail("field number 0");
    return true;
  }

  bool fixed64(uint64_t& out) {
    if (end_ - p_ < 8) return fail("truncated 64-bit field");
    out = 0;
    for (int i = 7; i >= 0; --i) out = (out << 8) | p_[i];
    p_ += 8;
    return true;
  }

  bool fixed32(uint32_t& out) {
    if (end_ - p_ < 4) return fail("truncated 32-bit field");
    out = static_cast<uint32_t>(p_[0]) | static_cast<uint32_t>(p_[1]) << 8 | static_cast<uint32_t>(p_[2]) << 16 |
          static_cast<uint32_t>(p_[3]) << 24;
    p_ += 4;
    return true;
  }

  bool length_delimited(uint32_t field, std::span<const uint8_t>& out) {
    uint64_t len = 0;
    if (!varint(len)) return false;
    if (len > static_cast<uint64_t>(end_ - p_))
      return fail("length of field " + std::to_string(field) + " runs past the end of its message");
    out = {p_, static_cast<size_t>(len)};
    p_ += len;
    return true;
  }

  // A sub-parser over `bytes` that reports into this parser's error slot.
  Parser sub(std::span<const uint8_t> bytes) const { return Parser(bytes, error_); }

  bool skip(uint32_t field, uint32_t wire, int depth = 0) {
    uint64_t u64 = 0;
    uint32_t u32 = 0;
    std::span<const uint8_t> bytes;
    switch (wire) {
      case kVarint: return varint(u64);
      case kFixed64: return fixed64(u64);
      case kLengthDelimited: return length_delimited(field, bytes);
      case kFixed32: return fixed32(u32);
      case kStartGroup: {
        if (depth >= kMaxGroupDepth) return fail("groups nested too deeply");
        for (;;) {
          if (done()) return fail("unterminated group " + std::to_string(field));
          uint32_t f = 0, w = 0;
          if (!tag(f, w)) return false;
          if (w == kEndGroup) {
            if (f != field) return fail("mismatched end-group tag");
            return true;
          }
          if (!skip(f, w, depth + 1)) return false;
        }
      }
      case kEndGroup: return fail("unexpected end-group tag");
      default: return fail("invalid wire type " + std::to_string(wire));
    }
  }

  bool expect(uint32_t field, uint32_t wire, uint32_t wanted, const char* message) {
    if (wire == wanted) return true;
    return fail(std::string("wrong wire type ") + std::to_string(wire) + " for " + message + " field " +
                std::to_string(field));
  }

  // Repeated numeric fields: one element in its scalar wire type, or a packed run (wire type 2).
  template <typename Fn>
  bool repeated_varint(uint32_t field, uint32_t wire, const char* message, Fn push) {
    uint64_t v = 0;
    if (wire == kVarint) {
      if (!varint(v)) return false;
      push(v);
      return true;
    }
    if (!expect(field, wire, kLengthDelimited, message)) return false;
    std::span<const uint8_t> packed;
    if (!length_delimited(field, packed)) return false;
    Parser s = sub(packed);
    while (!s.done()) {
      if (!s.varint(v)) return false;
      push(v);
    }
    return true;
  }

  template <size_t Width, typename Fn>
  bool repeated_fixed(uint32_t field, uint32_t wire, const char* message, Fn push) {
    constexpr uint32_t scalar_wire = Width == 8 ? kFixed64 : kFixed32;
    uint64_t v = 0;
    if (wire == scalar_wire) {
      if (!read_fixed<Width>(v)) return false;
      push(v);
      return true;
    }
    if (!expect(field, wire, kLengthDelimited, message)) return false;
    std::span<const uint8_t> packed;
    if (!length_delimited(field, packed)) return false;
    if (packed.size() % Width != 0) return fail("packed field " + std::to_string(field) + " has a partial element");
    Parser s = sub(packed);
    while (!s.done()) {
      if (!s.read_fixed<Width>(v)) return false;
      push(v);
    }
    return true;
  }

 private:
  template <size_t Width>
  bool read_fixed(uint64_t& v) {
    if constexpr (Width == 8) {
      return fixed64(v);
    } else {
      uint32_t w = 0;
      if (!fixed32(w)) return false;
      v = w;
      return true;
    }
  }

  const uint8_t* p_;
  const uint8_t* end_;
  std::string* error_;
};

// proto int32 fields are sign-extended 64-bit varints on the wire; keep the low 32 bits.
int64_t as_int32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

bool decode_dim(Parser& p, std::vector<int64_t>& shape) {
  int64_t size = 0;
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    if (f == 1) {
      uint64_t v = 0;
      if (!p.expect(f, w, kVarint, "TensorShapeProto.Dim") || !p.varint(v)) return false;
      size = static_cast<int64_t>(v);
    } else if (f == 2) {
      std::span<const uint8_t> name;  // "<tag>_<size>", ignored by readers
      if (!p.expect(f, w, kLengthDelimited, "TensorShapeProto.Dim") || !p.length_delimited(f, name)) return false;
    } else if (!p.skip(f, w)) {
      return false;
    }
  }
  shape.push_back(size);
  return true;
}

bool decode_shape(Parser& p, std::vector<int64_t>& shape) {
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    if (f == 2) {
      std::span<const uint8_t> dim;
      if (!p.expect(f, w, kLengthDelimited, "TensorShapeProto") || !p.length_delimited(f, dim)) return false;
      Parser s = p.sub(dim);
      if (!decode_dim(s, shape)) return false;
    } else if (!p.skip(f, w)) {
      return false;
    }
  }
  return true;
}

bool decode_tensor(Parser& p, TensorProtoView& t) {
  constexpr const char* kMsg = "TensorProto";
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    std::span<const uint8_t> bytes;
    switch (f) {
      case 1: {
        uint64_t v = 0;
        if (!p.expect(f, w, kVarint, kMsg) || !p.varint(v)) return false;
        t.dtype = static_cast<int32_t>(as_int32(v));
        break;
      }
      case 2: {
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        Parser s = p.sub(bytes);
        if (!decode_shape(s, t.shape)) return false;  // repeated occurrences merge, as in protobuf
        break;
      }
      case 4:
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        t.tensor_content = bytes;
        break;
      case 8:
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        t.string_val.push_back(as_string_view(bytes));
        break;
      case 5:
        if (!p.repeated_fixed<4>(f, w, kMsg, [&](uint64_t v) {
              t.float_val.push_back(std::bit_cast<float>(static_cast<uint32_t>(v)));
            }))
          return false;
        break;
      case 6:
        if (!p.repeated_fixed<8>(f, w, kMsg, [&](uint64_t v) { t.double_val.push_back(std::bit_cast<double>(v)); }))
          return false;
        break;
      case 7:
        if (!p.repeated_varint(f, w, kMsg, [&](uint64_t v) { t.int_val.push_back(as_int32(v)); })) return false;
        break;
      case 10:
        if (!p.repeated_varint(f, w, kMsg, [&](uint64_t v) { t.int64_val.push_back(static_cast<int64_t>(v)); }))
          return false;
        break;
      case 11:
        if (!p.repeated_varint(f, w, kMsg, [&](uint64_t v) { t.bool_val.push_back(v != 0); })) return false;
        break;
      case 13:
        if (!p.repeated_varint(f, w, kMsg, [&](uint64_t v) { t.half_val.push_back(as_int32(v)); })) return false;
        break;
      default:
        if (!p.skip(f, w)) return false;
    }
  }
  return true;
}

bool decode_plugin_data(Parser& p, std::vector<std::pair<std::string_view, std::string_view>>& out) {
  std::string_view name, content;
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    if (f == 1 || f == 2) {
      std::span<const uint8_t> bytes;
      if (!p.expect(f, w, kLengthDelimited, "PluginData") || !p.length_delimited(f, bytes)) return false;
      (f == 1 ? name : content) = as_string_view(bytes);
    } else if (!p.skip(f, w)) {
      return false;
    }
  }
  out.emplace_back(name, content);
  return true;
}

bool decode_metadata(Parser& p, std::vector<std::pair<std::string_view, std::string_view>>& out) {
  out.reserve(2);  // smdebug writes two (mode_step, mode): one allocation per record, not two
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    if (f == 1) {
      std::span<const uint8_t> bytes;
      if (!p.expect(f, w, kLengthDelimited, "SummaryMetadata") || !p.length_delimited(f, bytes)) return false;
      Parser s = p.sub(bytes);
      if (!decode_plugin_data(s, out)) return false;
    } else if (!p.skip(f, w)) {
      return false;
    }
  }
  return true;
}

bool decode_histogram(Parser& p, Histogram& h) {
  constexpr const char* kMsg = "HistogramProto";
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    if (f >= 1 && f <= 5) {
      uint64_t bits = 0;
      if (!p.expect(f, w, kFixed64, kMsg) || !p.fixed64(bits)) return false;
      double* fields[] = {&h.min, &h.max, &h.num, &h.sum, &h.sum_squares};
      *fields[f - 1] = std::bit_cast<double>(bits);
    } else if (f == 6 || f == 7) {
      auto& out = f == 6 ? h.bucket_limit : h.bucket;
      if (!p.repeated_fixed<8>(f, w, kMsg, [&](uint64_t v) { out.push_back(std::bit_cast<double>(v)); })) return false;
    } else if (!p.skip(f, w)) {
      return false;
    }
  }
  return true;
}

// Walks a message we do not interpret (images, audio) so that damage inside it is still caught.
bool validate_message(Parser& p) {
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w) || !p.skip(f, w)) return false;
  }
  return true;
}

bool decode_value(Parser& p, SummaryValueView& v) {
  constexpr const char* kMsg = "Summary.Value";
  using Kind = SummaryValueView::Kind;
  // `value` is a oneof: setting one member clears the others, as protobuf does.
  auto set_kind = [&](Kind k) {
    if (v.kind != k && v.kind != Kind::None) {  // a fresh value has nothing to clear
      v.tensor = TensorProtoView{};
      v.simple_value = 0;
      v.histogram = Histogram{};
    }
    v.kind = k;
  };
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    std::span<const uint8_t> bytes;
    switch (f) {
      case 1:
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        v.tag = as_string_view(bytes);
        break;
      case 2: {
        uint32_t bits = 0;
        if (!p.expect(f, w, kFixed32, kMsg) || !p.fixed32(bits)) return false;
        set_kind(Kind::SimpleValue);
        v.simple_value = std::bit_cast<float>(bits);
        break;
      }
      case 8: {
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        set_kind(Kind::Tensor);
        Parser s = p.sub(bytes);
        if (!decode_tensor(s, v.tensor)) return false;
        break;
      }
      case 9: {
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        Parser s = p.sub(bytes);
        if (!decode_metadata(s, v.plugin_data)) return false;
        break;
      }
      case 5: {
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        set_kind(Kind::Histogram);
        Parser s = p.sub(bytes);
        if (!decode_histogram(s, v.histogram)) return false;  // repeated occurrences merge
        break;
      }
      case 3: case 4: case 6: {  // obsolete histogram, image, audio
        if (!p.expect(f, w, kLengthDelimited, kMsg) || !p.length_delimited(f, bytes)) return false;
        set_kind(Kind::Other);
        Parser s = p.sub(bytes);
        if (!validate_message(s)) return false;
        break;
      }
      default:
        if (!p.skip(f, w)) return false;
    }
  }
  return true;
}

bool decode_summary(Parser& p, std::vector<SummaryValueView>& values) {
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return false;
    if (f == 1) {
      std::span<const uint8_t> bytes;
      if (!p.expect(f, w, kLengthDelimited, "Summary") || !p.length_delimited(f, bytes)) return false;
      Parser s = p.sub(bytes);
      if (!decode_value(s, values.emplace_back())) return false;
    } else if (!p.skip(f, w)) {
      return false;
    }
  }
  return true;
}

// Python's int(str) for the plugin contents smdebug writes: optional whitespace and sign, digits.
std::optional<int64_t> parse_decimal(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;  // "+-1", "++1"
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

size_t varint_size(uint64_t v) { return 1 + static_cast<size_t>((std::bit_width(v | 1) - 1) / 7); }
size_t field_size(size_t len) { return 1 + varint_size(len) + len; }  // tag (< 16) + length + body

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_header(std::string& out, uint32_t field, uint32_t wire) { put_varint(out, (field << 3) | wire); }

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_header(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A proto3 double: omitted when its bits are zero (+0.0), as Python's protobuf does.
void put_double(std::string& out, uint32_t field, double v) {
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  if (bits == 0) return;
  put_header(out, field, kFixed64);
  put_le(out, bits, 8);
}

void put_packed_doubles(std::string& out, uint32_t field, std::span<const double> values) {
  if (values.empty()) return;
  put_header(out, field, kLengthDelimited);
  put_varint(out, values.size() * 8);
  for (double v : values) put_le(out, std::bit_cast<uint64_t>(v), 8);
}

// Event{1 wall_time, 2 step, <what>}: `what` is the already encoded oneof member.
std::string tb_event(double wall_time, int64_t step, uint32_t what_field, std::string_view what) {
  std::string out;
  put_double(out, 1, wall_time);
  if (step != 0) {
    put_header(out, 2, kVarint);
    put_varint(out, static_cast<uint64_t>(step));
  }
  put_bytes(out, what_field, what);
  return out;
}

// Event{..., 5 summary: Summary{1 value: Value{1 tag, <member>}}}.
std::string tb_summary_event(double wall_time, int64_t step, std::string_view tag, std::string_view member) {
  std::string value;
  if (!tag.empty()) put_bytes(value, 1, tag);
  value += member;
  std::string summary;
  put_bytes(summary, 1, value);
  return tb_event(wall_time, step, 5, summary);
}

}  // namespace

std::expected<EventView, std::string> decode_event(std::span<const uint8_t> payload) {
  std::string error;
  Parser p(payload, &error);
  EventView ev;
  while (!p.done()) {
    uint32_t f = 0, w = 0;
    if (!p.tag(f, w)) return std::unexpected(std::move(error));  // tag() always sets the reason
    bool ok = true;
    switch (f) {
      case 1: {
        uint64_t bits = 0;
        ok = p.expect(f, w, kFixed64, "Event") && p.fixed64(bits);
        ev.wall_time = std::bit_cast<double>(bits);
        break;
      }
      case 2: {
        uint64_t v = 0;
        ok = p.expect(f, w, kVarint, "Event") && p.varint(v);
        ev.step = static_cast<int64_t>(v);
        break;
      }
      case 5: {
        std::span<const uint8_t> bytes;
        ok = p.expect(f, w, kLengthDelimited, "Event") && p.length_delimited(f, bytes);
        if (ok) {
          Parser s = p.sub(bytes);
          ok = decode_summary(s, ev.values);
          ev.has_summary = true;
          ev.file_version = {};
        }
        break;
      }
      case 3: {
        std::span<const uint8_t> bytes;
        ok = p.expect(f, w, kLengthDelimited, "Event") && p.length_delimited(f, bytes);
        ev.file_version = as_string_view(bytes);
        ev.has_summary = false;
        ev.values.clear();
        break;
      }
      case 4: case 6: case 7: case 8: case 9:
        // Other members of the `what` oneof: they replace a summary seen earlier.
        ok = p.skip(f, w);
        ev.has_summary = false;
        ev.values.clear();
        ev.file_version = {};
        break;
      default:
        ok = p.skip(f, w);
    }
    if (!ok) return std::unexpected(error.empty() ? std::string("malformed event") : std::move(error));
  }

  ev.mode = Mode::Global;
  ev.mode_step = ev.step;
  if (!ev.values.empty()) {
    for (const auto& [name, content] : ev.values.front().plugin_data) {
      if (name == "mode_step") {
        auto v = parse_decimal(content);
        if (!v) return std::unexpected("invalid mode_step plugin content '" + std::string(content) + "'");
        ev.mode_step = *v;
      } else if (name == "mode") {
        auto v = parse_decimal(content);
        auto m = v ? mode_from_int(*v) : std::nullopt;
        if (!m) return std::unexpected("invalid mode plugin content '" + std::string(content) + "'");
        ev.mode = *m;
      }
    }
  }
  return ev;
}

EncodedTensorEvent encode_tensor_event_pieces(const TensorEventSpec& spec) {
  // Field numbers (spec §3): Event{1 wall_time, 2 step, 5 summary}, Summary{1 value},
  // Value{1 tag, 8 tensor, 9 metadata}, TensorProto{1 dtype, 2 tensor_shape, 4 tensor_content,
  // 8 string_val}, TensorShapeProto{2 dim}, Dim{1 size, 2 name}, SummaryMetadata{1 plugin_data},
  // PluginData{1 plugin_name, 2 content}. Sizes are computed first so the bytes are written once.
  const std::string tag(spec.tag);
  std::vector<std::string> dim_names;
  dim_names.reserve(spec.shape.size());
  size_t shape_len = 0;
  std::vector<size_t> dim_lens;
  dim_lens.reserve(spec.shape.size());
  for (int64_t size : spec.shape) {
    dim_names.push_back(tag + "_" + std::to_string(size));
    const size_t len = (size != 0 ? 1 + varint_size(static_cast<uint64_t>(size)) : 0) + field_size(dim_names.back().size());
    dim_lens.push_back(len);
    shape_len += field_size(len);
  }
  const uint64_t dtype_wire = static_cast<uint64_t>(static_cast<int64_t>(spec.dtype));  // sign-extended, like protobuf
  size_t tensor_len = (spec.dtype != 0 ? 1 + varint_size(dtype_wire) : 0) + field_size(shape_len);
  if (!spec.tensor_content.empty()) tensor_len += field_size(spec.tensor_content.size());
  for (const auto& s : spec.strings) tensor_len += field_size(s.size());

  const std::string mode_step = std::to_string(spec.mode_step);
  const std::string mode = std::to_string(static_cast<int32_t>(spec.mode));
  const size_t plugin1_len = field_size(9) + field_size(mode_step.size());  // "mode_step"
  const size_t plugin2_len = field_size(4) + field_size(mode.size());       // "mode"
  const size_t metadata_len = field_size(plugin1_len) + field_size(plugin2_len);

  const size_t value_len =
      (tag.empty() ? 0 : field_size(tag.size())) + field_size(tensor_len) + field_size(metadata_len);
  const size_t summary_len = field_size(value_len);
  const uint64_t wall_bits = std::bit_cast<uint64_t>(spec.wall_time);
  const size_t event_len = (wall_bits != 0 ? 9 : 0) +
                           (spec.step != 0 ? 1 + varint_size(static_cast<uint64_t>(spec.step)) : 0) +
                           field_size(summary_len);

  EncodedTensorEvent pieces;
  pieces.content = spec.tensor_content;
  std::string& out = pieces.before;
  out.reserve(event_len - spec.tensor_content.size());
  if (wall_bits != 0) {
    put_header(out, 1, kFixed64);
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((wall_bits >> (8 * i)) & 0xFF));
  }
  if (spec.step != 0) {
    put_header(out, 2, kVarint);
    put_varint(out, static_cast<uint64_t>(spec.step));
  }
  put_header(out, 5, kLengthDelimited);
  put_varint(out, summary_len);
  put_header(out, 1, kLengthDelimited);
  put_varint(out, value_len);
  if (!tag.empty()) put_bytes(out, 1, tag);

  put_header(out, 8, kLengthDelimited);
  put_varint(out, tensor_len);
  if (spec.dtype != 0) {
    put_header(out, 1, kVarint);
    put_varint(out, dtype_wire);
  }
  put_header(out, 2, kLengthDelimited);  // always present, empty for 0-d tensors
  put_varint(out, shape_len);
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    put_header(out, 2, kLengthDelimited);
    put_varint(out, dim_lens[i]);
    if (spec.shape[i] != 0) {
      put_header(out, 1, kVarint);
      put_varint(out, static_cast<uint64_t>(spec.shape[i]));
    }
    put_bytes(out, 2, dim_names[i]);
  }
  if (!spec.tensor_content.empty()) {
    put_header(out, 4, kLengthDelimited);
    put_varint(out, spec.tensor_content.size());
  }
  std::string& rest = pieces.after;  // what follows the content
  for (const auto& s : spec.strings) put_bytes(rest, 8, s);

  put_header(rest, 9, kLengthDelimited);
  put_varint(rest, metadata_len);
  put_header(rest, 1, kLengthDelimited);
  put_varint(rest, plugin1_len);
  put_bytes(rest, 1, "mode_step");
  put_bytes(rest, 2, mode_step);
  put_header(rest, 1, kLengthDelimited);
  put_varint(rest, plugin2_len);
  put_bytes(rest, 1, "mode");
  put_bytes(rest, 2, mode);
  return pieces;
}

std::string encode_file_version_event(double wall_time, std::string_view file_version) {
  return tb_event(wall_time, 0, 3, file_version);
}

std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float simple_value) {
  std::string member;  // Value.simple_value = 2, a oneof member: written even when 0
  put_header(member, 2, kFixed32);
  put_le(member, std::bit_cast<uint32_t>(simple_value), 4);
  return tb_summary_event(wall_time, step, tag, member);
}

std::string encode_histogram_event(double wall_time, int64_t step, std::string_view tag, const Histogram& h) {
  // HistogramProto{1 min, 2 max, 3 num, 4 sum, 5 sum_squares, 6 bucket_limit, 7 bucket}.
  std::string histo;
  put_double(histo, 1, h.min);
  put_double(histo, 2, h.max);
  put_double(histo, 3, h.num);
  put_double(histo, 4, h.sum);
  put_double(histo, 5, h.sum_squares);
  put_packed_doubles(histo, 6, h.bucket_limit);
  put_packed_doubles(histo, 7, h.bucket);
  std::string member;  // Value.histo = 5
  put_bytes(member, 5, histo);
  return tb_summary_event(wall_time, step, tag, member);
}

std::string encode_tensor_event(const TensorEventSpec& spec) {
  const EncodedTensorEvent pieces = encode_tensor_event_pieces(spec);
  std::string out;
  out.reserve(pieces.size());
  out += pieces.before;
  out.append(reinterpret_cast<const char*>(pieces.content.data()), pieces.content.size());
  out += pieces.after;
  return out;
}

}  // namespace vigil::format
