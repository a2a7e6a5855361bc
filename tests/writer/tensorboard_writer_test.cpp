// TensorBoardWriter: the file layout of spec §1.7, records with real payload CRCs read back by the
// project's own TFRecord and Event decoders, scalar and histogram contents, errors.
#include "writer/tensorboard_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "format/crc32c.h"
#include "format/tfrecord.h"
#include "trial/element_access.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::from_hex;
using test::read_file;
using test::ScratchDir;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
TensorValue value_of(ElementType type, const std::vector<T>& values) {
  return TensorValue::copy_of(type, {static_cast<int64_t>(values.size())}, std::as_bytes(std::span(values)));
}

std::unique_ptr<TensorBoardWriter> open_writer(const fs::path& dir, Mode mode = Mode::Train, int64_t step = 0) {
  auto w = TensorBoardWriter::open(dir, mode, step);
  EXPECT_VIGIL_OK(w);
  return w ? std::move(*w) : nullptr;
}

// Every record of a file, checked to carry the real masked payload CRC.
std::vector<std::string> payloads(const fs::path& file) {
  const std::string bytes = read_file(file);
  auto records = format::split_records({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  EXPECT_TRUE(records) << (records ? "" : records.error().reason);
  std::vector<std::string> out;
  if (!records) return out;
  for (const auto& r : *records) {
    EXPECT_EQ(r.record.footer, format::Footer::PayloadCrc);
    uint32_t footer = 0;
    std::memcpy(&footer, bytes.data() + r.offset + 12 + r.record.payload.size(), 4);
    EXPECT_EQ(footer, format::mask_crc(format::crc32c(r.record.payload.data(), r.record.payload.size())));
    EXPECT_NE(footer, format::kMagicFooter);
    out.emplace_back(reinterpret_cast<const char*>(r.record.payload.data()), r.record.payload.size());
  }
  return out;
}

format::EventView decode(const std::string& payload) {
  auto ev = format::decode_event({reinterpret_cast<const uint8_t*>(payload.data()), payload.size()});
  EXPECT_TRUE(ev) << ev.error();
  return ev ? *ev : format::EventView{};
}

// The histogram event of one add_histogram call (the file's second record).
format::Histogram histogram_of(const TensorValue& v) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  EXPECT_TRUE(w->add_histogram("h", v, 1, 2.0));
  EXPECT_TRUE(w->close());
  auto events = payloads(w->path());
  EXPECT_EQ(events.size(), 2u);
  if (events.size() != 2) return {};
  auto ev = decode(events[1]);
  EXPECT_EQ(ev.values.size(), 1u);
  EXPECT_EQ(ev.values.at(0).kind, format::SummaryValueView::Kind::Histogram);
  return ev.values.at(0).histogram;
}

// The bucket structure TensorBoard relies on: parallel arrays, increasing limits, an empty first
// bucket, counts summing to num, each finite element in the bucket [limit[j-1], limit[j]).
void expect_consistent(const format::Histogram& h, const std::vector<double>& elements) {
  ASSERT_EQ(h.bucket.size(), h.bucket_limit.size());
  ASSERT_GE(h.bucket.size(), 2u);
  EXPECT_TRUE(std::ranges::is_sorted(h.bucket_limit));
  EXPECT_EQ(std::adjacent_find(h.bucket_limit.begin(), h.bucket_limit.end()), h.bucket_limit.end());
  EXPECT_EQ(h.bucket.front(), 0);
  EXPECT_NE(h.bucket.back(), 0);
  EXPECT_EQ(std::accumulate(h.bucket.begin(), h.bucket.end(), 0.0), h.num);
  for (size_t j = 1; j < h.bucket.size(); ++j) {
    const bool last = j + 1 == h.bucket.size();
    double n = 0;
    for (double x : elements)
      if (std::isfinite(x) && x >= h.bucket_limit[j - 1] && (x < h.bucket_limit[j] || (last && x == h.bucket_limit[j])))
        ++n;
    EXPECT_EQ(h.bucket[j], n) << "bucket " << j << " up to " << h.bucket_limit[j];
  }
}

TEST(TensorBoardWriter, FileNameAndPublication) {
  ScratchDir dir;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const std::pair<Mode, std::string_view> modes[] = {
      {Mode::Train, "TRAIN"}, {Mode::Eval, "EVAL"}, {Mode::Predict, "PREDICT"}, {Mode::Global, "GLOBAL"}};
  for (auto [mode, name] : modes) {
    auto w = open_writer(dir / "tb", mode, 42);
    const fs::path expected = dir / "tb" / name / fmt::format("000000000042_{}_{}.tfevents", ::getpid(), host);
    EXPECT_EQ(w->path(), expected);
    // Written as "<path>.tmp" until close, like every local smdebug file (§1.6).
    EXPECT_FALSE(fs::exists(expected));
    EXPECT_TRUE(fs::exists(fs::path(expected) += ".tmp"));
    ASSERT_TRUE(w->close());
    EXPECT_TRUE(fs::exists(expected));
    EXPECT_FALSE(fs::exists(fs::path(expected) += ".tmp"));
  }
}

TEST(TensorBoardWriter, FirstEventIsTheFileVersion) {
  ScratchDir dir;
  const double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto w = open_writer(dir.path(), Mode::Eval, 3);
  ASSERT_TRUE(w->close());
  auto events = payloads(w->path());
  ASSERT_EQ(events.size(), 1u);
  auto ev = decode(events[0]);
  EXPECT_EQ(ev.file_version, "brain.Event:2");
  EXPECT_FALSE(ev.has_summary);
  EXPECT_EQ(ev.step, 0);
  EXPECT_GE(ev.wall_time, before - 1);
  EXPECT_LE(ev.wall_time, before + 60);
}

TEST(TensorBoardWriter, ScalarBytes) {
  // Event{1: 1.5, 2: 3, 5: Summary{1: Value{1: "loss", 2: 0.25f}}}, written from the field list.
  EXPECT_EQ(format::encode_scalar_event(1.5, 3, "loss", 0.25f),
            from_hex("09 000000000000F83F 1003 2A0D 0A0B 0A04 6C6F7373 15 0000803E"));
  // simple_value is a oneof member: written even when it is 0; step 0 and an empty tag are not.
  EXPECT_EQ(format::encode_scalar_event(1.5, 0, "", 0.0f), from_hex("09 000000000000F83F 2A07 0A05 15 00000000"));
}

TEST(TensorBoardWriter, Scalars) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  ASSERT_TRUE(w->add_scalar("loss", 0.1, 7, 1234.5));
  ASSERT_TRUE(w->add_scalar("accuracy", 0.0, 0, 1235.0));
  ASSERT_TRUE(w->add_scalar("scalar/lr", -3e38 * 10, -1, 1236.0));  // beyond float: -inf, like float(x)
  ASSERT_TRUE(w->close());
  auto events = payloads(w->path());
  ASSERT_EQ(events.size(), 4u);
  struct Expected {
    std::string_view tag;
    float value;
    int64_t step;
    double wall_time;
  };
  const Expected expected[] = {{"loss", 0.1f, 7, 1234.5},
                               {"accuracy", 0.0f, 0, 1235.0},
                               {"scalar/lr", -std::numeric_limits<float>::infinity(), -1, 1236.0}};
  for (size_t i = 0; i < 3; ++i) {
    auto ev = decode(events[i + 1]);
    EXPECT_EQ(ev.wall_time, expected[i].wall_time);
    EXPECT_EQ(ev.step, expected[i].step);
    ASSERT_EQ(ev.values.size(), 1u);
    EXPECT_EQ(ev.values[0].tag, expected[i].tag);
    EXPECT_EQ(ev.values[0].kind, format::SummaryValueView::Kind::SimpleValue);
    EXPECT_EQ(ev.values[0].simple_value, expected[i].value);
    EXPECT_TRUE(ev.values[0].plugin_data.empty());
  }
}

TEST(TensorBoardWriter, TagsAreCleanedLikeSmdebug) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  ASSERT_TRUE(w->add_scalar("//gradients/conv 1.weight:0", 1, 1, 1));
  ASSERT_TRUE(w->add_histogram("a+b/c-d_e", value_of(ElementType::Float64, std::vector<double>{1}), 1, 1));
  ASSERT_TRUE(w->close());
  auto events = payloads(w->path());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(decode(events[1]).values.at(0).tag, "gradients/conv_1.weight_0");
  EXPECT_EQ(decode(events[2]).values.at(0).tag, "a_b/c-d_e");
}

TEST(TensorBoardWriter, HistogramEvent) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  const std::vector<float> v{-2, -0.5, 0, 0.5, 1, 1, 3};
  ASSERT_TRUE(w->add_histogram("weights/fc1.weight", value_of(ElementType::Float32, v), 5, 99.25));
  ASSERT_TRUE(w->close());
  auto events = payloads(w->path());
  ASSERT_EQ(events.size(), 2u);
  auto ev = decode(events[1]);
  EXPECT_EQ(ev.wall_time, 99.25);
  EXPECT_EQ(ev.step, 5);
  ASSERT_EQ(ev.values.size(), 1u);
  EXPECT_EQ(ev.values[0].tag, "weights/fc1.weight");
  ASSERT_EQ(ev.values[0].kind, format::SummaryValueView::Kind::Histogram);
  const auto& h = ev.values[0].histogram;
  EXPECT_EQ(h.num, 7);
  EXPECT_EQ(h.min, -2);
  EXPECT_EQ(h.max, 3);
  EXPECT_EQ(h.sum, 3);
  EXPECT_EQ(h.sum_squares, 4 + 0.25 + 0 + 0.25 + 1 + 1 + 9);
  expect_consistent(h, {v.begin(), v.end()});
  // The limits are TensorFlow's edges: the bucket of 0 is [0, 1e-12).
  auto zero = std::ranges::find(h.bucket_limit, 1e-12);
  ASSERT_NE(zero, h.bucket_limit.end());
  EXPECT_EQ(h.bucket[size_t(zero - h.bucket_limit.begin())], 1);
  EXPECT_EQ(*(zero - 1), 0.0);
}

TEST(TensorBoardWriter, HistogramOfEqualValues) {
  // Everything in one bucket: an empty bucket on its left, nothing else.
  auto h = histogram_of(value_of(ElementType::Float64, std::vector<double>(5, 0.0)));
  EXPECT_EQ(h.bucket_limit, (std::vector<double>{0.0, 1e-12}));
  EXPECT_EQ(h.bucket, (std::vector<double>{0, 5}));
  EXPECT_EQ(h.num, 5);
  EXPECT_EQ(h.min, 0);
  EXPECT_EQ(h.max, 0);
  EXPECT_EQ(h.sum, 0);
}

TEST(TensorBoardWriter, HistogramOfEveryNumericDtype) {
  const std::vector<double> expected{-3, 0, 1, 2, 250};
  const std::vector<int8_t> i8{-3, 0, 1, 2, 120};
  const std::vector<int16_t> i16{-3, 0, 1, 2, 250};
  const std::vector<int32_t> i32{-3, 0, 1, 2, 250};
  const std::vector<int64_t> i64{-3, 0, 1, 2, 250};
  const std::vector<uint8_t> u8{3, 0, 1, 2, 250};
  const std::vector<uint64_t> u64{3, 0, 1, 2, 250};
  const std::vector<uint16_t> f16{0xC200, 0x0000, 0x3C00, 0x4000, 0x5BD0};  // -3 0 1 2 250 as binary16
  struct Case {
    std::string_view name;
    TensorValue value;
    double min, sum;
  };
  const Case cases[] = {
      {"int8", value_of(ElementType::Int8, i8), -3, 120},
      {"int16", value_of(ElementType::Int16, i16), -3, 250},
      {"int32", value_of(ElementType::Int32, i32), -3, 250},
      {"int64", value_of(ElementType::Int64, i64), -3, 250},
      {"uint8", value_of(ElementType::UInt8, u8), 0, 256},
      {"uint64", value_of(ElementType::UInt64, u64), 0, 256},
      {"float16", value_of(ElementType::Float16, f16), -3, 250},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto h = make_histogram(c.value);
    ASSERT_VIGIL_OK(h);
    ASSERT_TRUE(*h);
    EXPECT_EQ((*h)->num, 5);
    EXPECT_EQ((*h)->min, c.min);
    EXPECT_EQ((*h)->sum, c.sum);
    std::vector<double> elements;
    detail::for_each_as_double(c.value, [&](double x) { elements.push_back(x); });
    expect_consistent(**h, elements);
  }
}

TEST(TensorBoardWriter, NonFiniteElementsAreSkipped) {
  const std::vector<double> v{kNaN, 1, kInf, 2, -kInf, 4};
  auto h = histogram_of(value_of(ElementType::Float64, v));
  EXPECT_EQ(h.num, 3);
  EXPECT_EQ(h.min, 1);
  EXPECT_EQ(h.max, 4);
  EXPECT_EQ(h.sum, 7);
  EXPECT_EQ(h.sum_squares, 21);
  expect_consistent(h, v);
}

TEST(TensorBoardWriter, ExtremeFiniteValuesAreCounted) {
  // Beyond TensorFlow's ±1e20 edges, up to ±DBL_MAX.
  const std::vector<double> v{-DBL_MAX, -1e300, 1e25, DBL_MAX};
  auto h = histogram_of(value_of(ElementType::Float64, v));
  EXPECT_EQ(h.num, 4);
  EXPECT_EQ(h.min, -DBL_MAX);
  EXPECT_EQ(h.max, DBL_MAX);
  EXPECT_EQ(h.bucket_limit.front(), -DBL_MAX);
  EXPECT_EQ(h.bucket_limit.back(), DBL_MAX);
  expect_consistent(h, v);
}

TEST(TensorBoardWriter, NoHistogramWithoutFiniteElementsOrForBools) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  const std::vector<double> nan{kNaN, kInf};
  const std::vector<uint8_t> bools{1, 0, 1};
  ASSERT_TRUE(w->add_histogram("nan", value_of(ElementType::Float64, nan), 1, 1));
  ASSERT_TRUE(w->add_histogram("empty", value_of(ElementType::Float32, std::vector<float>{}), 1, 1));
  ASSERT_TRUE(w->add_histogram("bool", value_of(ElementType::Bool, bools), 1, 1));
  ASSERT_TRUE(w->close());
  EXPECT_EQ(payloads(w->path()).size(), 1u);  // only the file_version event
}

TEST(TensorBoardWriter, UnsupportedValuesAreErrors) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  auto strings = w->add_histogram("s", TensorValue::strings({1}, {"a"}), 1, 1);
  ASSERT_FALSE(strings);
  EXPECT_EQ(strings.error().code, ErrorCode::NotSupported);
  const std::vector<float> c64{1, 2};
  auto complex = w->add_histogram("c", TensorValue::copy_of(ElementType::Complex64, {1}, std::as_bytes(std::span(c64))), 1, 1);
  ASSERT_FALSE(complex);
  EXPECT_EQ(complex.error().code, ErrorCode::NotSupported);
  const std::vector<float> three{1, 2, 3};
  auto short_bytes = w->add_histogram("x", TensorValue::copy_of(ElementType::Float32, {4}, std::as_bytes(std::span(three))), 1, 1);
  ASSERT_FALSE(short_bytes);
  EXPECT_EQ(short_bytes.error().code, ErrorCode::InvalidArgument);
}

TEST(TensorBoardWriter, FlushWritesIntoTheTmpFile) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  ASSERT_TRUE(w->add_scalar("a", 1, 1, 1));
  ASSERT_TRUE(w->flush());
  EXPECT_EQ(payloads(fs::path(w->path()) += ".tmp").size(), 2u);
  ASSERT_TRUE(w->close());
}

TEST(TensorBoardWriter, DestructorPublishes) {
  ScratchDir dir;
  fs::path path;
  {
    auto w = open_writer(dir.path());
    ASSERT_TRUE(w->add_scalar("a", 1, 1, 1));
    path = w->path();
  }
  EXPECT_EQ(payloads(path).size(), 2u);
}

TEST(TensorBoardWriter, ManyRecordsOverTheBuffer) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  std::vector<double> v(10000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i)) * std::pow(10.0, double(i % 40) - 20);
  const TensorValue value = value_of(ElementType::Float64, v);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(w->add_histogram("h", value, i, i));
  ASSERT_TRUE(w->close());
  auto events = payloads(w->path());
  ASSERT_EQ(events.size(), 201u);
  expect_consistent(decode(events.back()).values.at(0).histogram, v);
}

TEST(TensorBoardWriter, UnwritableFolderIsAnIoError) {
  ScratchDir dir;
  std::ofstream(dir / "file").put('x');
  auto under_file = TensorBoardWriter::open(dir / "file/tb", Mode::Train, 0);
  ASSERT_FALSE(under_file);
  EXPECT_EQ(under_file.error().code, ErrorCode::Io);
  EXPECT_NE(under_file.error().message.find("file/tb"), std::string::npos) << under_file.error().message;
  // Nobody, root included, can create folders inside /proc.
  auto in_proc = TensorBoardWriter::open("/proc/vigil-tb-test", Mode::Train, 0);
  ASSERT_FALSE(in_proc);
  EXPECT_EQ(in_proc.error().code, ErrorCode::Io);
  auto bad_mode = TensorBoardWriter::open(dir / "tb", static_cast<Mode>(9), 0);
  ASSERT_FALSE(bad_mode);
  EXPECT_EQ(bad_mode.error().code, ErrorCode::InvalidArgument);
}

TEST(TensorBoardWriter, ClosedWriterRefusesAndCloseIsIdempotent) {
  ScratchDir dir;
  auto w = open_writer(dir.path());
  ASSERT_TRUE(w->close());
  ASSERT_TRUE(w->close());
  ASSERT_TRUE(w->flush());
  auto scalar = w->add_scalar("a", 1, 1, 1);
  ASSERT_FALSE(scalar);
  EXPECT_EQ(scalar.error().code, ErrorCode::Internal);
  EXPECT_FALSE(w->add_histogram("h", value_of(ElementType::Float64, std::vector<double>{1}), 1, 1));
  EXPECT_EQ(payloads(w->path()).size(), 1u);
}

}  // namespace
}  // namespace vigil::writer
