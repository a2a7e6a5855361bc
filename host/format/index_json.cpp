#include "format/index_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstring>

#include "format/json_limits.h"
#include "format/python_json.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"

namespace vigil::format {
namespace {

using json = nlohmann::json;

std::optional<int64_t> as_int64(const json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(v.get<uint64_t>());
  return std::nullopt;  // floats, bools, strings, and integers beyond int64
}

// smdebug, and Vigil's writer, write every index file in one layout (Python's json.dumps of a dict
// in this key order):
//   {"meta": {"mode": "TRAIN", "mode_step": 3, "event_file_name": "events/..."},
//    "tensor_payload": [{"tensorname": "x", "start_idx": 0, "length": 120}, ...], "shape_payload": []}
// Loading a trial parses one such file per step and worker, so this reads exactly that layout in
// one pass. Anything else (another order or spacing, escapes, non-ASCII, shape entries, a value the
// full parser would refuse) gives nullopt, and the full parser decides, with its messages.
class CanonicalIndexReader {
 public:
  explicit CanonicalIndexReader(std::string_view text) : text_(text) {}

  std::optional<StepIndex> read() {
    StepIndex index;
    std::string_view mode, file;
    int64_t mode_step = 0;
    if (!literal(R"({"meta": {"mode": )") || !string(mode) || !literal(R"(, "mode_step": )") || !number(mode_step) ||
        !literal(R"(, "event_file_name": )") || !string(file) || !literal(R"(}, "tensor_payload": [)"))
      return std::nullopt;
    auto parsed_mode = parse_mode_name(mode);
    if (!parsed_mode || unsafe_relative_path(file)) return std::nullopt;
    index.mode = *parsed_mode;
    index.mode_step = mode_step;
    index.event_file_name = std::string(file);
    index.tensor_payload.reserve(16);
    for (bool first = true; !literal("]"); first = false) {
      if (!first && !literal(", ")) return std::nullopt;
      std::string_view name;
      int64_t start = 0, length = 0;
      if (!literal(R"({"tensorname": )") || !string(name) || !literal(R"(, "start_idx": )") || !number(start) ||
          !literal(R"(, "length": )") || !number(length) || !literal("}"))
        return std::nullopt;
      if (name.size() > kMaxTensorNameLength) return std::nullopt;  // the generic parser says why
      index.tensor_payload.push_back({std::string(name), uint64_t(start), uint64_t(length)});
    }
    if (!literal(R"(, "shape_payload": []})")) return std::nullopt;
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
    if (pos_ != text_.size()) return std::nullopt;
    return index;
  }

 private:
  bool literal(std::string_view expected) {
    if (text_.size() - pos_ < expected.size() || std::memcmp(text_.data() + pos_, expected.data(), expected.size()) != 0)
      return false;
    pos_ += expected.size();
    return true;
  }
  // A string of printable ASCII without escapes: its end found with memchr, its bytes checked
  // without a branch per byte.
  bool string(std::string_view& out) {
    if (pos_ >= text_.size() || text_[pos_] != '"') return false;
    const size_t begin = pos_ + 1;
    const void* quote = std::memchr(text_.data() + begin, '"', text_.size() - begin);
    if (!quote) return false;
    const size_t end = size_t(static_cast<const char*>(quote) - text_.data());
    unsigned bad = 0;
    for (size_t i = begin; i < end; ++i) {
      const auto c = static_cast<unsigned char>(text_[i]);
      bad |= unsigned(c - 0x20u >= 0x60u) | unsigned(c == '\\');
    }
    if (bad) return false;
    out = text_.substr(begin, end - begin);
    pos_ = end + 1;
    return true;
  }
  // A non-negative integer of at most 18 digits without a leading zero (so it fits in int64).
  bool number(int64_t& out) {
    const size_t begin = pos_;
    out = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9' && pos_ - begin < 18)
      out = out * 10 + (text_[pos_++] - '0');
    const size_t digits = pos_ - begin;
    if (digits == 0 || (digits > 1 && text_[begin] == '0')) return false;
    return pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9';
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<StepIndex> parse_canonical_index_json(std::string_view text) { return CanonicalIndexReader(text).read(); }

Result<StepIndex> parse_index_json(std::string_view text, std::string_view file) {
  if (auto index = parse_canonical_index_json(text)) return std::move(*index);
  return parse_index_json_generic(text, file);
}

namespace {
std::string overlong_name(const std::string& where) {
  return fmt::format("{}: a tensor name longer than {} characters (regexes are matched against names)", where,
                     kMaxTensorNameLength);
}
}  // namespace

Result<StepIndex> parse_index_json_generic(std::string_view text, std::string_view file) {
  const std::string file_name(file);
  auto bad = [&](std::string message) { return fail(Error::index_reader(std::move(message), file_name)); };

  if (json_nesting_exceeds(text)) return bad(fmt::format("index file nests deeper than {} levels", kMaxJsonDepth));
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return bad("Empty/Corrupt Index File");
  // smdebug's checks, in smdebug's order and wording.
  if (!doc.is_object() || !doc.contains("meta")) return bad("meta section is not present");
  const json& meta = doc["meta"];
  // Python's len(meta) == 0; nlohmann's empty() is false for every string, so test that apart.
  const bool meta_empty = ((meta.is_object() || meta.is_array()) && meta.empty()) ||
                          (meta.is_string() && meta.get_ref<const std::string&>().empty());
  if (meta_empty) return bad("meta section is empty");
  if (!doc.contains("tensor_payload") && !doc.contains("shape_payload"))
    return bad("neither tensor_payload nor shape_payload sections are present");
  if (!meta.is_object()) return bad("meta section must be a JSON object");

  StepIndex index;
  if (!meta.contains("mode")) return bad("meta.mode is missing");
  if (!meta["mode"].is_string()) return bad("meta.mode must be a string");
  const auto& mode_name = meta["mode"].get_ref<const std::string&>();
  auto mode = parse_mode_name(mode_name);
  if (!mode) return bad(fmt::format("meta.mode has an unknown mode name '{}'", mode_name));
  index.mode = *mode;

  if (!meta.contains("mode_step")) return bad("meta.mode_step is missing");
  auto mode_step = as_int64(meta["mode_step"]);
  if (!mode_step) return bad("meta.mode_step must be an integer");
  if (*mode_step < 0) return bad(fmt::format("meta.mode_step must not be negative (got {})", *mode_step));
  index.mode_step = *mode_step;

  if (meta.contains("event_file_name")) {
    const json& efn = meta["event_file_name"];
    if (!efn.is_string()) return bad("meta.event_file_name must be a string");
    const auto& name = efn.get_ref<const std::string&>();
    // Joined to the trial root later: anything that could leave the trial is refused here already.
    // An empty name is kept: smdebug's own tests index such "dummy" steps, whose step bookkeeping
    // works; only reading one of their values fails (Trial::State::event_file).
    if (!name.empty())
      if (auto why = unsafe_relative_path(name)) return bad(fmt::format("meta.event_file_name '{}' {}", name, *why));
    index.event_file_name = name;
  }

  if (doc.contains("tensor_payload")) {
    const json& payload = doc["tensor_payload"];
    if (!payload.is_array()) return bad("tensor_payload must be a list");
    if (!payload.empty() && !index.event_file_name)
      return bad("meta.event_file_name is missing although tensor_payload is not empty");
    index.tensor_payload.reserve(payload.size());
    for (size_t i = 0; i < payload.size(); ++i) {
      const json& e = payload[i];
      // Built only for a message: this loop runs for every tensor of every step a trial indexes.
      auto where = [i] { return fmt::format("tensor_payload[{}]", i); };
      if (!e.is_object()) return bad(where() + " must be a JSON object");
      const auto name = e.find("tensorname"), start_it = e.find("start_idx"), length_it = e.find("length");
      if (name == e.end() || !name->is_string()) return bad(where() + ".tensorname must be a string");
      IndexTensorEntry entry;
      entry.tensorname = name->get_ref<const std::string&>();
      if (entry.tensorname.size() > kMaxTensorNameLength) return bad(overlong_name(where()));
      auto start = start_it != e.end() ? as_int64(*start_it) : std::nullopt;
      if (!start || *start < 0) return bad(where() + ".start_idx must be a non-negative integer");
      auto length = length_it != e.end() ? as_int64(*length_it) : std::nullopt;
      // A length shorter than any record is kept, as smdebug keeps it (it reads lazily): smdebug's own
      // tests index "dummy" entries of length 1, whose steps, modes and names answer; only reading
      // such a value fails (RecordReader::read).
      if (!length || *length < 0) return bad(where() + ".length must be a non-negative integer");
      entry.start_idx = static_cast<uint64_t>(*start);
      entry.length = static_cast<uint64_t>(*length);
      index.tensor_payload.push_back(std::move(entry));
    }
  }

  if (doc.contains("shape_payload")) {
    const json& payload = doc["shape_payload"];
    if (!payload.is_array()) return bad("shape_payload must be a list");
    index.shape_payload.reserve(payload.size());
    for (size_t i = 0; i < payload.size(); ++i) {
      const json& e = payload[i];
      const std::string where = fmt::format("shape_payload[{}]", i);
      if (!e.is_object()) return bad(where + " must be a JSON object");
      if (!e.contains("tensorname") || !e["tensorname"].is_string()) return bad(where + ".tensorname must be a string");
      if (!e.contains("originalname") || !e["originalname"].is_string())
        return bad(where + ".originalname must be a string");
      if (!e.contains("shape") || !e["shape"].is_array()) return bad(where + ".shape must be a list of integers");
      IndexShapeEntry entry;
      entry.tensorname = e["tensorname"].get<std::string>();
      entry.originalname = e["originalname"].get<std::string>();
      if (entry.tensorname.size() > kMaxTensorNameLength || entry.originalname.size() > kMaxTensorNameLength)
        return bad(overlong_name(where));
      for (const json& d : e["shape"]) {
        auto dim = as_int64(d);
        if (!dim || *dim < 0) return bad(where + ".shape must be a list of non-negative integers");
        entry.shape.push_back(*dim);
      }
      index.shape_payload.push_back(std::move(entry));
    }
  }
  return index;
}

std::string serialize_index_json(const StepIndex& index) {
  using ojson = nlohmann::ordered_json;
  ojson meta = ojson::object();
  meta["mode"] = std::string(mode_name(index.mode));
  meta["mode_step"] = index.mode_step;
  if (index.event_file_name) meta["event_file_name"] = *index.event_file_name;

  ojson tensors = ojson::array();
  for (const auto& t : index.tensor_payload) {
    ojson e = ojson::object();
    e["tensorname"] = t.tensorname;
    e["start_idx"] = t.start_idx;
    e["length"] = t.length;
    tensors.push_back(std::move(e));
  }
  ojson shapes = ojson::array();
  for (const auto& s : index.shape_payload) {
    ojson e = ojson::object();
    e["tensorname"] = s.tensorname;
    e["originalname"] = s.originalname;
    e["shape"] = s.shape;
    shapes.push_back(std::move(e));
  }
  ojson doc = ojson::object();
  doc["meta"] = std::move(meta);
  doc["tensor_payload"] = std::move(tensors);
  doc["shape_payload"] = std::move(shapes);
  return python_json_dumps(doc);
}

}  // namespace vigil::format
