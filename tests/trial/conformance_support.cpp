#include <unistd.h>
#include "conformance_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "common/sha256.h"
#include "format/dtype.h"

#ifndef VIGIL_SHARED_DIR
#error "VIGIL_SHARED_DIR must be defined (tests/trial/CMakeLists.txt)"
#endif

namespace fs = std::filesystem;

#include "rewrite_with_writer.h"
#include "test_support.h"

namespace conf {

__extension__ typedef __int128 i128;  // exact integer sums / JSON integer comparison

// ---------------------------------------------------------------- fixtures

fs::path fixtures_root() { return fs::path(VIGIL_SHARED_DIR) / "fixtures" / "smdebug-real"; }

std::vector<std::string> list_fixtures() {
  std::vector<std::string> out;
  std::error_code ec;
  const std::string suffix = ".expected.json";
  for (const auto& entry : fs::directory_iterator(fixtures_root(), ec)) {
    std::string file = entry.path().filename().string();
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string name = file.substr(0, file.size() - suffix.size());
    if (fs::is_directory(fixtures_root() / name)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string base_fixture(const std::string& fixture) {
  auto at = fixture.find(kRewrittenSuffix);
  return at == std::string::npos ? fixture : fixture.substr(0, at);
}

fs::path trial_dir(const std::string& fixture) {
  if (base_fixture(fixture) == fixture) return fixtures_root() / fixture;
  // The fixture written again by Vigil's writer, once per process, in a temporary folder.
  static std::mutex mu;
  static std::map<std::string, fs::path> rewritten;
  std::lock_guard lock(mu);
  auto& dir = rewritten[fixture];
  if (dir.empty()) {
    const std::string base = base_fixture(fixture);
    static vigil::test::ScratchDir scratch("vigil-conformance");  // one per process, removed at exit
    dir = scratch / base;
    if (std::string problem = rewrite_with_writer(fixtures_root() / base, dir); !problem.empty())
      throw std::runtime_error("rewriting " + base + " with the writer failed: " + problem);
  }
  return dir;
}

using vigil::test::read_file_if_present;

const json& expected_json(const std::string& fixture) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<json>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[fixture];
  if (!slot) {
    fs::path p = fixtures_root() / (base_fixture(fixture) + ".expected.json");
    slot = std::make_unique<json>(json::parse(read_file_if_present(p)));
  }
  return *slot;
}

vigil::Result<std::shared_ptr<vigil::Trial>> shared_trial(const std::string& fixture) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<vigil::Trial>> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(fixture);
  if (it != cache.end()) return it->second;
  auto t = vigil::Trial::open(trial_dir(fixture));  // default options, like create_trial(path)
  if (!t) return std::unexpected(t.error());
  cache[fixture] = *t;
  return *t;
}

// ---------------------------------------------------------------- helpers

std::optional<vigil::Mode> mode_from_name(std::string_view name) {
  if (name == "TRAIN") return vigil::Mode::Train;
  if (name == "EVAL") return vigil::Mode::Eval;
  if (name == "PREDICT") return vigil::Mode::Predict;
  if (name == "GLOBAL") return vigil::Mode::Global;
  return std::nullopt;
}

std::string mode_str(vigil::Mode m) {
  switch (m) {
    case vigil::Mode::Train: return "TRAIN";
    case vigil::Mode::Eval: return "EVAL";
    case vigil::Mode::Predict: return "PREDICT";
    case vigil::Mode::Global: return "GLOBAL";
  }
  return "MODE(" + std::to_string(static_cast<int>(m)) + ")";
}

std::string state_str(vigil::StepState s) {
  switch (s) {
    case vigil::StepState::Unavailable: return "UNAVAILABLE";
    case vigil::StepState::Available: return "AVAILABLE";
    case vigil::StepState::NotYetAvailable: return "NOT_YET_AVAILABLE";
  }
  return "STATE(" + std::to_string(static_cast<int>(s)) + ")";
}

std::string describe(const vigil::Error& e) { return std::string(e.class_name()) + ": \"" + e.message + "\""; }

std::string join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
  return s + "]";
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<std::string> json_strings(const json& j) {
  std::vector<std::string> out;
  for (const auto& x : j) out.push_back(x.get<std::string>());
  return out;
}

std::vector<int64_t> json_ints(const json& j) {
  std::vector<int64_t> out;
  for (const auto& x : j) out.push_back(x.get<int64_t>());
  return out;
}

std::string numpy_name(vigil::ElementType t) { return std::string(vigil::format::element_type_info(t).numpy_name); }

// ---------------------------------------------------------------- reporter

Reporter::Reporter(std::string fixture, std::string section, size_t cap)
    : fixture_(std::move(fixture)), section_(std::move(section)), cap_(cap) {}

Reporter::~Reporter() {
  if (failures_ > cap_) {
    ADD_FAILURE() << "[" << fixture_ << "] " << (failures_ - cap_) << " further mismatches in " << section_
                  << " were not printed (cap " << cap_ << ")";
  }
  std::cout << "[ conformance ] " << fixture_ << " / " << section_ << ": " << checks_ << " checks, " << failures_
            << " mismatches";
  if (notes_) std::cout << ", " << notes_ << " notes";
  std::cout << std::endl;
  ::testing::Test::RecordProperty("checks", std::to_string(checks_));
  ::testing::Test::RecordProperty("mismatches", std::to_string(failures_));
}

bool Reporter::check(bool ok, const std::string& where, const std::string& what) {
  ++checks_;
  if (ok) return true;
  ++failures_;
  if (failures_ <= cap_) ADD_FAILURE() << "[" << fixture_ << "] " << where << ": " << what;
  return false;
}

void Reporter::harness_failure(const std::string& where, const std::string& what) {
  ++checks_;
  ++failures_;
  if (failures_ <= cap_) ADD_FAILURE() << "[" << fixture_ << "] TEST HARNESS: " << where << ": " << what;
}

void Reporter::note(const std::string& where, const std::string& what) {
  ++notes_;
  std::cout << "[ note        ] " << fixture_ << " " << where << ": " << what << std::endl;
}

// ---------------------------------------------------------------- comparisons

static bool is_int_kind(const json& j) { return j.is_number_integer(); }  // integer or unsigned

static i128 as_i128(const json& j) {
  if (j.is_number_unsigned()) return static_cast<i128>(j.get<uint64_t>());
  return static_cast<i128>(j.get<int64_t>());
}

bool json_scalar_equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    if (is_int_kind(a) != is_int_kind(b)) return false;
    if (is_int_kind(a)) return as_i128(a) == as_i128(b);
    double x = a.get<double>(), y = b.get<double>();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  if (a.is_string() && b.is_string()) return a.get<std::string>() == b.get<std::string>();
  if (a.is_boolean() && b.is_boolean()) return a.get<bool>() == b.get<bool>();
  if (a.is_null() && b.is_null()) return true;
  return false;
}

std::optional<double> json_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

bool same_nonfinite_or_close(double expected, double actual, double tol) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return expected == actual;
  return std::fabs(expected - actual) <= tol;
}

static std::string jstr(const json& j) { return j.dump(); }

static std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void compare_summary(Reporter& rep, const std::string& where, const json& expected, const json& actual) {
  if (!rep.check(actual.is_object(), where, "Vigil's summary is not an object: " + jstr(actual))) return;
  // Key sets.
  for (auto it = expected.begin(); it != expected.end(); ++it) {
    rep.check(actual.contains(it.key()), where + " field=" + it.key(),
              "missing in Vigil's summary (expected " + jstr(it.value()) + ")");
  }
  for (auto it = actual.begin(); it != actual.end(); ++it) {
    rep.check(expected.contains(it.key()), where + " field=" + it.key(),
              "unexpected field in Vigil's summary (value " + jstr(it.value()) + ")");
  }
  std::string dtype = expected.value("dtype", "");
  bool int_dtype = dtype.starts_with("int") || dtype.starts_with("uint");
  // Scale for the absolute tolerance of sum / mean / mean_abs: the largest magnitude.
  double scale = 0;
  for (const char* k : {"min", "max"}) {
    if (expected.contains(k)) {
      auto d = json_double(expected[k]);
      if (d && std::isfinite(*d)) scale = std::max(scale, std::fabs(*d));
    }
  }
  double size = expected.contains("size") && expected["size"].is_number() ? expected["size"].get<double>() : 1.0;

  for (auto it = expected.begin(); it != expected.end(); ++it) {
    const std::string& key = it.key();
    const json& e = it.value();
    if (!actual.contains(key)) continue;
    const json& a = actual[key];
    std::string w = where + " field=" + key;
    if (key == "values") {
      if (!rep.check(a.is_array() && a.size() == e.size(), w,
                     "expected " + std::to_string(e.size()) + " values " + jstr(e) + ", got " + jstr(a)))
        continue;
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < e.size(); ++i) {
        if (!json_scalar_equal(e[i], a[i])) {
          if (bad++ == 0) first = i;
        }
      }
      rep.check(bad == 0, w,
                std::to_string(bad) + " of " + std::to_string(e.size()) + " elements differ; first at [" +
                    std::to_string(first) + "]: expected " + (bad ? jstr(e[first]) : "") + ", got " +
                    (bad ? jstr(a[first]) : "") + "; expected " + jstr(e) + ", got " + jstr(a));
    } else if (key == "sum" || key == "mean" || key == "mean_abs") {
      if (key == "sum" && int_dtype) {
        rep.check(json_scalar_equal(e, a), w, "expected " + jstr(e) + " (exact integer), got " + jstr(a));
        continue;
      }
      auto ed = json_double(e), ad = json_double(a);
      if (!rep.check(ed && ad, w, "expected " + jstr(e) + ", got " + jstr(a))) continue;
      double tol = 1e-6 * std::fabs(*ed) + 1e-12 * (key == "sum" ? size : 1.0) * scale + 1e-300;
      bool kind_ok = e.is_string() == a.is_string() && e.is_number_integer() == a.is_number_integer();
      rep.check(kind_ok && same_nonfinite_or_close(*ed, *ad, tol), w,
                "expected " + jstr(e) + ", got " + jstr(a) + " (tolerance " + fmt_double(tol) + ")");
    } else {
      // dtype, dtype_str, shape, size, sha256, min, max, n_nan, n_posinf, n_neginf, n_true: exact.
      bool ok;
      if (e.is_array()) {
        ok = a.is_array() && a.size() == e.size();
        for (size_t i = 0; ok && i < e.size(); ++i) ok = json_scalar_equal(e[i], a[i]);
      } else {
        ok = json_scalar_equal(e, a);
      }
      rep.check(ok, w, "expected " + jstr(e) + ", got " + jstr(a));
    }
  }
}

// ---------------------------------------------------------------- raw records

size_t RawTensor::size() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

namespace {

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;
  std::string_view bytes;
};

bool read_varint(std::string_view b, size_t& i, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= b.size()) return false;
    uint8_t c = static_cast<uint8_t>(b[i++]);
    out |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

bool parse_fields(std::string_view b, std::vector<Field>& out) {
  size_t i = 0;
  while (i < b.size()) {
    uint64_t key;
    if (!read_varint(b, i, key)) return false;
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    switch (f.wire) {
      case 0:
        if (!read_varint(b, i, f.varint)) return false;
        break;
      case 1:
        if (i + 8 > b.size()) return false;
        f.bytes = b.substr(i, 8);
        i += 8;
        break;
      case 5:
        if (i + 4 > b.size()) return false;
        f.bytes = b.substr(i, 4);
        i += 4;
        break;
      case 2: {
        uint64_t n;
        if (!read_varint(b, i, n) || i + n > b.size()) return false;
        f.bytes = b.substr(i, n);
        i += n;
        break;
      }
      default: return false;
    }
    out.push_back(f);
  }
  return true;
}

const Field* first_field(const std::vector<Field>& fs, uint32_t number, uint32_t wire) {
  for (const auto& f : fs)
    if (f.number == number && f.wire == wire) return &f;
  return nullptr;
}

fs::path index_path(const fs::path& trial, int64_t step, const std::string& worker) {
  char dir[32], file[64];
  std::snprintf(dir, sizeof dir, "%09lld", static_cast<long long>(step / 1000));
  std::snprintf(file, sizeof file, "%012lld_", static_cast<long long>(step));
  return trial / "index" / dir / (std::string(file) + worker + ".json");
}

// The oracle decodes float16 on its own (not with the SDK's half.hpp), so a defect there cannot
// hide from the comparison.
double half_to_double(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(static_cast<double>(mant), -24);
  else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

template <typename T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;  // the test machine is little endian, like the files
}

}  // namespace

std::optional<RawTensor> read_raw_tensor(const fs::path& trial, const std::string& tensor, int64_t step,
                                         const std::string& worker, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<RawTensor> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  if (step < 0) return fail("negative step");
  fs::path ip = index_path(trial, step, worker);
  if (!fs::exists(ip)) return fail("no index file " + ip.string());
  json idx;
  try {
    idx = json::parse(read_file_if_present(ip));
  } catch (const std::exception& e) {
    return fail(std::string("index parse: ") + e.what());
  }
  if (!idx.contains("tensor_payload")) return fail("no tensor_payload");
  const json* entry = nullptr;
  for (const auto& e : idx["tensor_payload"])
    if (e.value("tensorname", "") == tensor) entry = &e;
  if (!entry) return fail("no tensor_payload entry for " + tensor);
  std::string ev_rel = idx["meta"].value("event_file_name", "");
  std::string data = read_file_if_present(trial / ev_rel);
  uint64_t start = (*entry)["start_idx"].get<uint64_t>(), length = (*entry)["length"].get<uint64_t>();
  if (start + length > data.size() || length < 16) return fail("record out of range in " + ev_rel);
  std::string_view rec(data.data() + start, length);
  uint64_t payload_len = load_le<uint64_t>(rec.data());
  if (payload_len + 16 != length) return fail("record length mismatch in " + ev_rel);
  std::string_view payload = rec.substr(12, payload_len);

  std::vector<Field> event, summary, value, tproto;
  if (!parse_fields(payload, event)) return fail("bad Event proto");
  const Field* s = first_field(event, 5, 2);
  if (!s || !parse_fields(s->bytes, summary)) return fail("no Event.summary");
  const Field* v = first_field(summary, 1, 2);
  if (!v || !parse_fields(v->bytes, value)) return fail("no Summary.value");
  const Field* t = first_field(value, 8, 2);
  if (!t || !parse_fields(t->bytes, tproto)) return fail("no Summary.Value.tensor");

  RawTensor raw;
  raw.file = ev_rel;
  raw.offset = start;
  if (const Field* dt = first_field(tproto, 1, 0)) raw.data_type = static_cast<int32_t>(dt->varint);
  if (const Field* sh = first_field(tproto, 2, 2)) {
    std::vector<Field> shape;
    if (!parse_fields(sh->bytes, shape)) return fail("bad TensorShapeProto");
    for (const auto& dim : shape) {
      if (dim.number != 2 || dim.wire != 2) continue;
      std::vector<Field> df;
      if (!parse_fields(dim.bytes, df)) return fail("bad Dim");
      const Field* size = first_field(df, 1, 0);
      raw.shape.push_back(size ? static_cast<int64_t>(size->varint) : 0);
    }
  }
  if (const Field* c = first_field(tproto, 4, 2)) raw.content = std::string(c->bytes);
  for (const auto& f : tproto)
    if (f.number == 8 && f.wire == 2) raw.strings.emplace_back(f.bytes);
  return raw;
}

bool index_has_shape_entry(const fs::path& trial, const std::string& tensor, int64_t step, const std::string& worker) {
  if (step < 0) return false;
  fs::path ip = index_path(trial, step, worker);
  if (!fs::exists(ip)) return false;
  try {
    json idx = json::parse(read_file_if_present(ip));
    if (!idx.contains("shape_payload")) return false;
    for (const auto& e : idx["shape_payload"])
      if (e.value("tensorname", "") == tensor) return true;
  } catch (...) {
  }
  return false;
}

// DataType values (format spec §3.5).
namespace dt {
constexpr int32_t Float = 1, Double = 2, Int32 = 3, Uint8 = 4, Int16 = 5, Int8 = 6, Int64 = 9, Bool = 10,
                  Uint16 = 17, Half = 19, Uint32 = 22, Uint64 = 23;
}

std::optional<std::string> dtype_name_of(int32_t d) {
  switch (d) {
    case dt::Float: return "float32";
    case dt::Double: return "float64";
    case dt::Half: return "float16";
    case dt::Int8: return "int8";
    case dt::Int16: return "int16";
    case dt::Int32: return "int32";
    case dt::Int64: return "int64";
    case dt::Uint8: return "uint8";
    case dt::Uint16: return "uint16";
    case dt::Uint32: return "uint32";
    case dt::Uint64: return "uint64";
    case dt::Bool: return "bool";
    default: return std::nullopt;
  }
}

std::optional<std::string> dtype_str_of(int32_t d) {
  switch (d) {
    case dt::Float: return "<f4";
    case dt::Double: return "<f8";
    case dt::Half: return "<f2";
    case dt::Int8: return "|i1";
    case dt::Int16: return "<i2";
    case dt::Int32: return "<i4";
    case dt::Int64: return "<i8";
    case dt::Uint8: return "|u1";
    case dt::Uint16: return "<u2";
    case dt::Uint32: return "<u4";
    case dt::Uint64: return "<u8";
    case dt::Bool: return "|b1";
    default: return std::nullopt;
  }
}

static size_t item_size(int32_t d) {
  switch (d) {
    case dt::Double: case dt::Int64: case dt::Uint64: return 8;
    case dt::Float: case dt::Int32: case dt::Uint32: return 4;
    case dt::Half: case dt::Int16: case dt::Uint16: return 2;
    case dt::Int8: case dt::Uint8: case dt::Bool: return 1;
    default: return 0;
  }
}

bool is_integer_data_type(int32_t d) {
  return d == dt::Int8 || d == dt::Int16 || d == dt::Int32 || d == dt::Int64 || d == dt::Uint8 || d == dt::Uint16 ||
         d == dt::Uint32 || d == dt::Uint64;
}
static bool is_unsigned_data_type(int32_t d) {
  return d == dt::Uint8 || d == dt::Uint16 || d == dt::Uint32 || d == dt::Uint64;
}
static bool is_float_data_type(int32_t d) { return d == dt::Float || d == dt::Double || d == dt::Half; }

std::vector<long double> raw_values(const RawTensor& raw) {
  std::vector<long double> out;
  size_t isz = item_size(raw.data_type);
  if (isz == 0 || raw.content.size() % isz) return out;
  size_t n = raw.content.size() / isz;
  out.reserve(n);
  const char* p = raw.content.data();
  for (size_t i = 0; i < n; ++i, p += isz) {
    long double v = 0;
    switch (raw.data_type) {
      case dt::Float: v = load_le<float>(p); break;
      case dt::Double: v = load_le<double>(p); break;
      case dt::Half: v = half_to_double(load_le<uint16_t>(p)); break;
      case dt::Int8: v = load_le<int8_t>(p); break;
      case dt::Int16: v = load_le<int16_t>(p); break;
      case dt::Int32: v = load_le<int32_t>(p); break;
      case dt::Int64: v = static_cast<long double>(load_le<int64_t>(p)); break;
      case dt::Uint8: v = load_le<uint8_t>(p); break;
      case dt::Uint16: v = load_le<uint16_t>(p); break;
      case dt::Uint32: v = load_le<uint32_t>(p); break;
      case dt::Uint64: v = static_cast<long double>(load_le<uint64_t>(p)); break;
      case dt::Bool: v = load_le<uint8_t>(p) ? 1 : 0; break;
    }
    out.push_back(v);
  }
  return out;
}

RawStats raw_stats(const RawTensor& raw) {
  RawStats s;
  auto xs = raw_values(raw);
  long double sa = 0, sq = 0;
  for (long double x : xs) {
    if (!std::isfinite(static_cast<double>(x))) continue;
    sa += std::fabs(x);
    sq += x * x;
  }
  s.size = static_cast<double>(xs.size());
  s.sum_abs = static_cast<double>(sa);
  s.mean_sq = xs.empty() ? 0.0 : static_cast<double>(sq / static_cast<long double>(xs.size()));
  return s;
}

static std::string sha256_hex(std::string_view bytes) {
  vigil::Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.finish_hex();
}

// Exact integer value of element i (for sums/products that must wrap like numpy int64/uint64).
static std::vector<i128> raw_ints(const RawTensor& raw) {
  std::vector<i128> out;
  for (long double v : raw_values(raw)) out.push_back(static_cast<i128>(v));
  return out;
}

static json int_json(i128 v, bool unsigned_kind) {
  if (unsigned_kind) return json(static_cast<uint64_t>(v));
  return json(static_cast<int64_t>(v));
}

std::optional<json> reference_int_summary(const RawTensor& raw) {
  auto name = dtype_name_of(raw.data_type);
  auto str = dtype_str_of(raw.data_type);
  if (!name || !str || !(is_integer_data_type(raw.data_type) || raw.data_type == dt::Bool)) return std::nullopt;
  json s = json::object();
  s["dtype"] = *name;
  s["dtype_str"] = *str;
  s["shape"] = raw.shape;
  s["size"] = raw.size();
  s["sha256"] = sha256_hex(raw.content);
  auto ints = raw_ints(raw);
  if (raw.data_type == dt::Bool) {
    int64_t n_true = 0;
    for (auto v : ints) n_true += v != 0;
    s["n_true"] = n_true;
    if (ints.size() <= 16) {
      json vals = json::array();
      for (auto v : ints) vals.push_back(v != 0);
      s["values"] = vals;
    }
    return s;
  }
  bool uns = is_unsigned_data_type(raw.data_type);
  if (!ints.empty()) {
    i128 sum = 0, mn = ints[0], mx = ints[0];
    for (auto v : ints) {
      sum += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    // The fixture computes sum/mean "in float64 after casting"; for integers that is exact here.
    s["sum"] = int_json(sum, uns && sum >= 0);
    s["min"] = int_json(mn, uns);
    s["max"] = int_json(mx, uns);
    s["mean"] = static_cast<double>(static_cast<long double>(sum) / static_cast<long double>(ints.size()));
  }
  if (ints.size() <= 16) {
    json vals = json::array();
    for (auto v : ints) vals.push_back(int_json(v, uns));
    s["values"] = vals;
  }
  return s;
}

bool is_float_dtype(std::string_view d) { return d == "float16" || d == "float32" || d == "float64"; }

double round_to_dtype(double v, std::string_view d) {
  if (d == "float32") return static_cast<double>(static_cast<float>(v));
  if (d == "float16") return static_cast<double>(static_cast<_Float16>(v));
  return v;
}

std::optional<RefReduction> reference_reduction(const RawTensor& raw, std::string_view op, bool abs) {
  auto in_name = dtype_name_of(raw.data_type);
  if (!in_name) return std::nullopt;
  bool is_bool = raw.data_type == dt::Bool;
  bool is_float = is_float_data_type(raw.data_type);
  bool is_uns = is_unsigned_data_type(raw.data_type);
  auto xs = raw_values(raw);
  if (xs.empty()) return std::nullopt;
  if (abs) {
    // np.abs keeps the dtype: the most negative signed integer stays negative (wraps).
    size_t bits = item_size(raw.data_type) * 8;
    long double most_negative = -std::ldexp(1.0L, static_cast<int>(bits) - 1);
    for (auto& x : xs) {
      if (!is_float && !is_uns && !is_bool && x == most_negative) continue;
      x = std::fabs(x);
    }
  }
  long double n = static_cast<long double>(xs.size());
  // Float results: the input's float dtype; integer/bool inputs give float64 (numpy).
  std::string fdt = is_float ? *in_name : "float64";
  auto fl = [&](long double v) { return RefReduction{round_to_dtype(static_cast<double>(v), fdt), fdt}; };
  auto any_nan = std::any_of(xs.begin(), xs.end(), [](long double x) { return std::isnan(x); });
  long double nan = std::numeric_limits<long double>::quiet_NaN();

  if (op == "min" || op == "max") {
    long double r = xs[0];
    for (auto x : xs) r = op == "min" ? std::min(r, x) : std::max(r, x);
    if (any_nan) r = nan;
    return RefReduction{static_cast<double>(r), *in_name};
  }
  if ((op == "sum" || op == "prod") && !is_float) {
    // Integer/bool sums and products: int64 (uint64 for unsigned input), wrapping like numpy.
    uint64_t acc = op == "sum" ? 0 : 1;
    for (auto x : xs) {
      uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(x));
      acc = op == "sum" ? acc + v : acc * v;
    }
    if (is_uns) return RefReduction{static_cast<double>(acc), "uint64"};
    return RefReduction{static_cast<double>(static_cast<int64_t>(acc)), "int64"};
  }
  long double sum = 0, sum_abs = 0, sum_sq = 0, prod = 1;
  for (auto x : xs) {
    sum += x;
    sum_abs += std::fabs(x);
    sum_sq += x * x;
    prod *= x;
  }
  long double mean = sum / n;
  long double ssd = 0;
  for (auto x : xs) ssd += (x - mean) * (x - mean);
  if (op == "sum") return fl(sum);
  if (op == "prod") return fl(prod);
  if (op == "mean") return fl(mean);
  if (op == "variance") return fl(ssd / n);
  if (op == "std") return fl(std::sqrt(ssd / n));
  if (op == "l1") return fl(sum_abs);
  if (op == "l2") return fl(std::sqrt(sum_sq));
  return std::nullopt;
}

double reduction_tolerance(std::string_view op, std::string_view dtype, double expected, const RawStats& st) {
  if (!is_float_dtype(dtype)) return 0.0;  // integer and bool results are exact
  double eps, rel, denorm, tiny;
  if (dtype == "float16") {
    eps = std::ldexp(1.0, -10);
    rel = 1e-2;  // numpy sums float16 in float16: a few float16 ulps
    denorm = std::ldexp(1.0, -24);
    tiny = std::ldexp(1.0, -14);
  } else if (dtype == "float32") {
    eps = std::ldexp(1.0, -23);
    rel = 1e-5;
    denorm = std::numeric_limits<float>::denorm_min();
    tiny = std::numeric_limits<float>::min();
  } else {
    eps = std::ldexp(1.0, -52);
    rel = 1e-9;
    denorm = std::numeric_limits<double>::denorm_min();
    tiny = std::numeric_limits<double>::min();
  }
  double e = std::fabs(expected);
  double n = std::max(st.size, 1.0);
  if (op == "min" || op == "max") return 0.0;
  if (op == "sum") return rel * e + 8 * eps * st.sum_abs + tiny;
  if (op == "mean") return rel * e + 8 * eps * st.sum_abs / n + tiny;
  if (op == "prod") return (rel + 2 * n * eps) * e + tiny;
  if (op == "l1") return (rel + 8 * eps) * e + tiny;
  // Squares: float32 squares of tiny values are subnormal and lose precision in numpy.
  double var_abs = 32 * eps * st.mean_sq + 16 * denorm;
  if (op == "variance") return rel * e + var_abs + denorm;
  if (op == "std") return rel * e + (e > 0 ? std::min(std::sqrt(var_abs), var_abs / e) : std::sqrt(var_abs)) + denorm;
  if (op == "l2") {
    double sq_abs = 4 * n * denorm;
    return (rel + 8 * eps) * e + (e > 0 ? std::min(std::sqrt(sq_abs), sq_abs / e) : std::sqrt(sq_abs)) + denorm;
  }
  return rel * e;
}

}  // namespace conf
