#include "format/event_proto.h"
#include "proto_bytes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "format/crc32c.h"
#include "format/tfrecord.h"
#include "test_support.h"
#include "trial/tensor_value.h"

namespace vigil::format {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

using test::from_hex;

// spec §10.2: the whole 86-byte event file of the worked example.
const std::string kSpecFile = from_hex(
    "4600 0000 0000 0000 7235 b9a5 0900 0000"
    "0084 d7d7 412a 3b0a 390a 0178 4217 0801"
    "1209 1207 0802 1203 785f 3222 0800 0080"
    "3f00 0000 404a 1b0a 0e0a 096d 6f64 655f"
    "7374 6570 1201 300a 090a 046d 6f64 6512"
    "0131 b3c0 2d06");
const std::string kSpecPayload = kSpecFile.substr(12, 70);

// The worked example of spec §10: tag "x", float32 [1, 2], TRAIN mode step 0.
std::string spec_example(int64_t step = 0) {
  static const float values[2] = {1.0f, 2.0f};
  static const int64_t shape[1] = {2};
  TensorEventSpec spec;
  spec.wall_time = 1600000000.0;
  spec.step = step;
  spec.tag = "x";
  spec.dtype = 1;
  spec.shape = shape;
  spec.tensor_content = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values), sizeof values);
  spec.mode = Mode::Train;
  spec.mode_step = 0;
  return encode_tensor_event(spec);
}

using namespace test::proto;  // the protobuf writer of proto_bytes.h

// Event{summary{value{tag, tensor{<tensor>}}}}
std::string event_with_tensor(const std::string& tensor, const std::string& extra_event = {}) {
  return extra_event + ld(5, ld(1, ld(1, "t") + ld(8, tensor)));
}

// ---- encoder --------------------------------------------------------------------------------------

TEST(EventProtoEncode, SpecExampleBytesExactly) {
  const std::string payload = spec_example();
  ASSERT_EQ(payload.size(), 70u);
  EXPECT_EQ(payload, kSpecPayload);
  std::string file;
  append_record(file, bytes_of(payload), Footer::Magic);
  EXPECT_EQ(file, kSpecFile);
}

TEST(EventProtoEncode, SpecExampleWithPayloadCrcFooter) {
  std::string file;
  append_record(file, bytes_of(spec_example()), Footer::PayloadCrc);
  EXPECT_EQ(file.substr(82), std::string("\xcc\x55\x3a\xa1", 4));
}

TEST(EventProtoEncode, NonZeroStepFollowsWallTime) {
  const std::string payload = spec_example(5);
  EXPECT_EQ(payload.substr(0, 9), kSpecPayload.substr(0, 9));
  EXPECT_EQ(payload.substr(9, 2), std::string("\x10\x05", 2));
  EXPECT_EQ(payload.substr(11), kSpecPayload.substr(9));
}

TEST(EventProtoEncode, NegativeStepIsATenByteVarint) {
  const std::string payload = spec_example(-1);
  EXPECT_EQ(payload.substr(9, 11), std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));
  auto ev = decode_event(bytes_of(payload));
  ASSERT_TRUE(ev) << ev.error();
  EXPECT_EQ(ev->step, -1);
}

TEST(EventProtoEncode, ZeroDTensorHasAnEmptyShape) {
  const float v = 3.0f;
  TensorEventSpec spec;
  spec.wall_time = 1.5;
  spec.tag = "loss";
  spec.dtype = 1;
  spec.tensor_content = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&v), 4);
  spec.mode = Mode::Eval;
  spec.mode_step = 3;
  const std::string zero_d = encode_tensor_event(spec);
  // tensor (10 bytes) = 08 01 | 12 00 | 22 04 <float>
  EXPECT_NE(zero_d.find(std::string("\x42\x0a\x08\x01\x12\x00\x22\x04", 8)), std::string::npos);
  auto ev = decode_event(bytes_of(zero_d));
  ASSERT_TRUE(ev) << ev.error();
  ASSERT_EQ(ev->values.size(), 1u);
  EXPECT_TRUE(ev->values[0].tensor.shape.empty());
  EXPECT_EQ(ev->mode, Mode::Eval);
  EXPECT_EQ(ev->mode_step, 3);
}

TEST(EventProtoEncode, ZeroSizedDimKeepsItsName) {
  TensorEventSpec spec;
  spec.wall_time = 2.0;
  spec.tag = "e";
  spec.dtype = 1;
  const int64_t shape[2] = {2, 0};
  spec.shape = shape;
  const std::string payload = encode_tensor_event(spec);
  // dims: {size 2, name "e_2"} and {name "e_0"} (size 0 omitted)
  EXPECT_NE(payload.find(std::string("\x12\x10\x12\x07\x08\x02\x12\x03" "e_2" "\x12\x05\x12\x03" "e_0", 18)),
            std::string::npos);
  auto ev = decode_event(bytes_of(payload));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->values[0].tensor.shape, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(ev->values[0].tensor.tensor_content.empty());
}

TEST(EventProtoEncode, StringTensorHasNoDtype) {
  TensorEventSpec spec;
  spec.wall_time = 2.0;
  spec.tag = "s";
  const int64_t shape[1] = {3};
  spec.shape = shape;
  const std::vector<std::string> strings = {"a", "", "\xc3\xa9"};
  spec.strings = strings;
  spec.mode = Mode::Predict;
  spec.mode_step = 12345;
  const std::string payload = encode_tensor_event(spec);
  auto ev = decode_event(bytes_of(payload));
  ASSERT_TRUE(ev) << ev.error();
  const auto& t = ev->values[0].tensor;
  EXPECT_EQ(t.dtype, 0);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(t.string_val.size(), 3u);
  EXPECT_EQ(t.string_val[0], "a");
  EXPECT_EQ(t.string_val[1], "");
  EXPECT_EQ(t.string_val[2], "\xc3\xa9");
  EXPECT_EQ(ev->mode, Mode::Predict);
  EXPECT_EQ(ev->mode_step, 12345);
  // The whole tensor: shape first (no dtype field), then one string_val per element, empty included.
  const std::string tensor("\x42\x14\x12\x09\x12\x07\x08\x03\x12\x03s_3\x42\x01" "a\x42\x00\x42\x02\xc3\xa9", 22);
  EXPECT_NE(payload.find(tensor), std::string::npos);
}

TEST(EventProtoEncode, ZeroWallTimeIsOmitted) {
  TensorEventSpec spec;
  spec.tag = "z";
  spec.dtype = 9;
  const std::string payload = encode_tensor_event(spec);
  EXPECT_EQ(payload[0], '\x2a');  // starts directly with the summary
}

// ---- decoder --------------------------------------------------------------------------------------

TEST(EventProtoDecode, SpecExample) {
  auto ev = decode_event(bytes_of(kSpecPayload));
  ASSERT_TRUE(ev) << ev.error();
  EXPECT_EQ(ev->wall_time, 1600000000.0);
  EXPECT_EQ(ev->step, 0);
  EXPECT_TRUE(ev->has_summary);
  ASSERT_EQ(ev->values.size(), 1u);
  const auto& v = ev->values[0];
  EXPECT_EQ(v.tag, "x");
  EXPECT_EQ(v.kind, SummaryValueView::Kind::Tensor);
  EXPECT_EQ(v.tensor.dtype, 1);
  EXPECT_EQ(v.tensor.shape, std::vector<int64_t>{2});
  ASSERT_EQ(v.tensor.tensor_content.size(), 8u);
  float f[2];
  std::memcpy(f, v.tensor.tensor_content.data(), 8);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 2.0f);
  ASSERT_EQ(v.plugin_data.size(), 2u);
  EXPECT_EQ(v.plugin_data[0].first, "mode_step");
  EXPECT_EQ(v.plugin_data[0].second, "0");
  EXPECT_EQ(v.plugin_data[1].first, "mode");
  EXPECT_EQ(v.plugin_data[1].second, "1");
  EXPECT_EQ(ev->mode, Mode::Train);
  EXPECT_EQ(ev->mode_step, 0);
}

TEST(EventProtoDecode, ModeDefaultsToGlobalAndEventStep) {
  const std::string payload = vi(2, 42) + event_with_tensor(vi(1, 1));
  auto ev = decode_event(bytes_of(payload));
  ASSERT_TRUE(ev) << ev.error();
  EXPECT_EQ(ev->mode, Mode::Global);
  EXPECT_EQ(ev->mode_step, 42);
  EXPECT_EQ(ev->step, 42);
}

TEST(EventProtoDecode, BadPluginContentIsAnError) {
  auto with_plugin = [](const std::string& name, const std::string& content) {
    return ld(5, ld(1, ld(1, "t") + ld(8, vi(1, 1)) + ld(9, ld(1, ld(1, name) + ld(2, content)))));
  };
  EXPECT_TRUE(decode_event(bytes_of(with_plugin("mode", " 2 "))));
  EXPECT_EQ(decode_event(bytes_of(with_plugin("mode", "2")))->mode, Mode::Eval);
  EXPECT_EQ(decode_event(bytes_of(with_plugin("mode_step", "-7")))->mode_step, -7);
  EXPECT_FALSE(decode_event(bytes_of(with_plugin("mode", "9"))));
  EXPECT_FALSE(decode_event(bytes_of(with_plugin("mode", "TRAIN"))));
  EXPECT_FALSE(decode_event(bytes_of(with_plugin("mode_step", ""))));
  EXPECT_FALSE(decode_event(bytes_of(with_plugin("mode_step", "1x"))));
  EXPECT_FALSE(decode_event(bytes_of(with_plugin("mode_step", "+-1"))));
  EXPECT_EQ(decode_event(bytes_of(with_plugin("mode_step", "+4")))->mode_step, 4);
  EXPECT_TRUE(decode_event(bytes_of(with_plugin("other", "whatever"))));
}

TEST(EventProtoDecode, EmptyPayloadIsAnEventWithoutSummary) {
  auto ev = decode_event({});
  ASSERT_TRUE(ev);
  EXPECT_FALSE(ev->has_summary);
  EXPECT_TRUE(ev->values.empty());
}

TEST(EventProtoDecode, PackedAndUnpackedRepeatedFields) {
  std::string packed_floats;
  for (float f : {1.5f, -2.0f}) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    for (int i = 0; i < 4; ++i) packed_floats.push_back(static_cast<char>(b >> (8 * i)));
  }
  std::string packed_doubles;
  for (double d : {0.25, 1e300}) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    for (int i = 0; i < 8; ++i) packed_doubles.push_back(static_cast<char>(b >> (8 * i)));
  }
  std::string packed_ints, packed_int64, packed_bools, packed_half;
  varint(packed_ints, 5);
  varint(packed_ints, static_cast<uint64_t>(int64_t{-3}));
  varint(packed_int64, uint64_t{1} << 40);
  varint(packed_int64, static_cast<uint64_t>(int64_t{-1}));
  varint(packed_bools, 1);
  varint(packed_bools, 0);
  varint(packed_half, 0x3C00);

  const std::string tensor = vi(1, 1) + ld(5, packed_floats) + f32(5, 3.0f) + ld(6, packed_doubles) + f64(6, -4.0) +
                             ld(7, packed_ints) + vi(7, 9) + ld(10, packed_int64) + vi(10, 77) + ld(11, packed_bools) +
                             vi(11, 5) + ld(13, packed_half) + vi(13, 0x4000);
  auto ev = decode_event(bytes_of(event_with_tensor(tensor)));
  ASSERT_TRUE(ev) << ev.error();
  const auto& t = ev->values[0].tensor;
  EXPECT_EQ(t.float_val, (std::vector<float>{1.5f, -2.0f, 3.0f}));
  EXPECT_EQ(t.double_val, (std::vector<double>{0.25, 1e300, -4.0}));
  EXPECT_EQ(t.int_val, (std::vector<int64_t>{5, -3, 9}));
  EXPECT_EQ(t.int64_val, (std::vector<int64_t>{int64_t{1} << 40, -1, 77}));
  EXPECT_EQ(t.bool_val, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(t.half_val, (std::vector<int64_t>{0x3C00, 0x4000}));
}

TEST(EventProtoDecode, UnknownFieldsOfEveryWireTypeAreSkipped) {
  std::string unknown;
  unknown += vi(100, 123456789);
  unknown += f64(101, 1.0);
  unknown += ld(102, "opaque bytes");
  unknown += f32(103, 2.0f);
  std::string group;
  key(group, 104, 3);
  group += vi(1, 1) + ld(2, "in group");
  key(group, 7, 3);  // nested group
  key(group, 7, 4);
  key(group, 104, 4);
  unknown += group;
  // Unknown fields at every level: Event, Summary, Value, TensorProto, shape, dim, metadata, plugin.
  const std::string dim = unknown + vi(1, 4) + unknown + ld(2, "t_4");
  const std::string shape = unknown + ld(2, dim) + vi(3, 0);
  const std::string tensor = unknown + vi(1, 3) + ld(2, shape) + ld(4, std::string(16, '\0')) + unknown;
  const std::string plugin = unknown + ld(1, "mode") + ld(2, "3") + unknown;
  const std::string value = unknown + ld(1, "t") + ld(8, tensor) + ld(9, unknown + ld(1, plugin)) + ld(7, "node");
  const std::string payload = unknown + f64(1, 9.5) + vi(2, 8) + ld(5, unknown + ld(1, value) + unknown) + unknown;
  auto ev = decode_event(bytes_of(payload));
  ASSERT_TRUE(ev) << ev.error();
  EXPECT_EQ(ev->wall_time, 9.5);
  EXPECT_EQ(ev->step, 8);
  ASSERT_EQ(ev->values.size(), 1u);
  EXPECT_EQ(ev->values[0].tensor.dtype, 3);
  EXPECT_EQ(ev->values[0].tensor.shape, std::vector<int64_t>{4});
  EXPECT_EQ(ev->values[0].tensor.tensor_content.size(), 16u);
  EXPECT_EQ(ev->mode, Mode::Predict);
  EXPECT_EQ(ev->mode_step, 8);
}

TEST(EventProtoDecode, OtherValueKinds) {
  const std::string payload =
      ld(5, ld(1, ld(1, "scalar") + f32(2, 0.5f)) + ld(1, ld(1, "h") + ld(5, f64(1, 0.0) + f64(2, 1.0))));
  auto ev = decode_event(bytes_of(payload));
  ASSERT_TRUE(ev) << ev.error();
  ASSERT_EQ(ev->values.size(), 2u);
  EXPECT_EQ(ev->values[0].kind, SummaryValueView::Kind::SimpleValue);
  EXPECT_EQ(ev->values[0].simple_value, 0.5f);
  EXPECT_EQ(ev->values[1].kind, SummaryValueView::Kind::Histogram);
}

TEST(EventProtoDecode, OtherEventKindsHaveNoSummary) {
  auto ev = decode_event(bytes_of(f64(1, 1.0) + ld(4, "graph def bytes")));
  ASSERT_TRUE(ev);
  EXPECT_FALSE(ev->has_summary);
}

TEST(EventProtoDecode, MalformedInputsGiveReasons) {
  struct Case {
    std::string name;
    std::string bytes;
    std::string reason_part;
  };
  std::string long_varint = std::string("\x10", 1) + std::string(10, '\x80') + std::string("\x01", 1);
  std::string group_open;
  key(group_open, 50, 3);
  std::string group_mismatch = group_open;
  key(group_mismatch, 51, 4);
  std::string lone_end;
  key(lone_end, 50, 4);
  std::string deep;
  for (int i = 0; i < 100; ++i) key(deep, 60, 3);
  for (int i = 0; i < 100; ++i) key(deep, 60, 4);
  std::string wire6, wire7;
  key(wire6, 60, 6);
  key(wire7, 60, 7);
  const std::vector<Case> cases = {
      {"truncated varint", std::string("\x10\x80", 2), "truncated varint"},
      {"varint too long", long_varint, "longer than 10 bytes"},
      {"length past end", std::string("\x2a\x05\x0a", 3), "runs past the end"},
      {"truncated fixed64", std::string("\x09\x00\x00", 3), "truncated 64-bit"},
      {"truncated fixed32", std::string("\x65\x00", 2), "truncated 32-bit"},
      {"wrong wire type for wall_time", vi(1, 5), "wrong wire type"},
      {"wrong wire type for step", ld(2, "x"), "wrong wire type"},
      {"wrong wire type for summary", vi(5, 1), "wrong wire type"},
      {"wrong wire type for tag", ld(5, ld(1, vi(1, 3))), "wrong wire type"},
      {"wrong wire type for dtype", event_with_tensor(ld(1, "x")), "wrong wire type"},
      {"wrong wire type for tensor_content", event_with_tensor(vi(4, 1)), "wrong wire type"},
      {"partial packed float", event_with_tensor(ld(5, "abc")), "partial element"},
      {"truncated packed varint", event_with_tensor(ld(7, "\x80")), "truncated varint"},
      {"field number 0", std::string("\x00\x01", 2), "field number 0"},
      {"unterminated group", group_open, "unterminated group"},
      {"mismatched group", group_mismatch, "mismatched end-group"},
      {"lone end group", lone_end, "unexpected end-group"},
      {"groups too deep", deep, "nested too deeply"},
      {"wire type 6", wire6, "invalid wire type"},
      {"wire type 7", wire7, "invalid wire type"},
      {"nested length past end", ld(5, ld(1, std::string("\x42\x7f", 2))), "runs past the end"},
  };
  for (const auto& c : cases) {
    auto ev = decode_event(bytes_of(c.bytes));
    ASSERT_FALSE(ev) << c.name;
    EXPECT_NE(ev.error().find(c.reason_part), std::string::npos) << c.name << ": " << ev.error();
  }
}

// ---- real smdebug data ----------------------------------------------------------------------------

std::vector<std::filesystem::path> event_files(const std::filesystem::path& root) {
  return test::files_under(root, [](const std::string& rel) { return rel.ends_with(".tfevents"); });
}

TensorEventSpec spec_from(const EventView& ev, std::vector<std::string>& strings) {
  const auto& v = ev.values.at(0);
  strings.assign(v.tensor.string_val.begin(), v.tensor.string_val.end());
  TensorEventSpec spec;
  spec.wall_time = ev.wall_time;
  spec.step = ev.step;
  spec.tag = v.tag;
  spec.dtype = v.tensor.dtype;
  spec.shape = v.tensor.shape;
  spec.tensor_content = v.tensor.tensor_content;
  spec.strings = strings;
  spec.mode = ev.mode;
  spec.mode_step = ev.mode_step;
  return spec;
}

// Every record decodes to one tensor, and re-encoding it gives smdebug's bytes back exactly.
void check_event_files(const std::filesystem::path& root, size_t& files, size_t& records) {
  for (const auto& path : event_files(root)) {
    ++files;
    const std::string data = test::read_file(path);
    auto split = split_records(bytes_of(data));
    ASSERT_TRUE(split) << path << " at " << split.error().offset << ": " << split.error().reason;
    ASSERT_FALSE(split->empty()) << path;
    for (const auto& rec : *split) {
      ++records;
      EXPECT_EQ(rec.record.footer, Footer::Magic) << path;
      auto ev = decode_event(rec.record.payload);
      ASSERT_TRUE(ev) << path << " @" << rec.offset << ": " << ev.error();
      ASSERT_TRUE(ev->has_summary) << path << " @" << rec.offset;
      ASSERT_EQ(ev->values.size(), 1u) << path << " @" << rec.offset;
      EXPECT_EQ(ev->values[0].kind, SummaryValueView::Kind::Tensor) << path << " @" << rec.offset;
      EXPECT_FALSE(ev->values[0].tag.empty());
      std::vector<std::string> strings;
      const std::string again = encode_tensor_event(spec_from(*ev, strings));
      const std::string original(reinterpret_cast<const char*>(rec.record.payload.data()), rec.record.payload.size());
      EXPECT_EQ(again, original) << path << " @" << rec.offset << " tag " << ev->values[0].tag;
    }
  }
}

TEST(EventProtoFixtures, EveryRealRecordDecodesAndReencodesIdentically) {
  size_t files = 0, records = 0;
  check_event_files(test::real_fixtures(), files, records);
  EXPECT_GT(files, 50u);
  EXPECT_GT(records, 500u);
  std::cout << "decoded " << records << " records in " << files << " event files\n";
}

TEST(EventProtoFixtures, EveryPathologyRecordDecodesAndReencodesIdentically) {
  size_t files = 0, records = 0;
  check_event_files(test::pathology_fixtures(), files, records);
  EXPECT_GT(files, 0u);
  std::cout << "decoded " << records << " records in " << files << " event files\n";
}

TEST(EventProtoFixtures, MixedDtypesCoverStringsAndZeroD) {
  bool saw_string = false, saw_zero_d = false;
  std::set<int32_t> dtypes;
  for (const auto& path : event_files(test::real_fixtures() / "mixed_dtypes")) {
    const std::string data = test::read_file(path);
    auto split = split_records(bytes_of(data));
    ASSERT_TRUE(split);
    for (const auto& rec : *split) {
      auto ev = decode_event(rec.record.payload);
      ASSERT_TRUE(ev);
      const auto& t = ev->values[0].tensor;
      dtypes.insert(t.dtype);
      if (t.dtype == 0 && !t.string_val.empty()) saw_string = true;
      if (t.shape.empty()) saw_zero_d = true;
    }
  }
  EXPECT_TRUE(saw_string);
  EXPECT_TRUE(saw_zero_d);
  EXPECT_GE(dtypes.size(), 8u);
}

// ---- robustness -----------------------------------------------------------------------------------

std::string first_real_payload() {
  auto files = event_files(test::real_fixtures() / "mixed_dtypes");
  if (files.empty()) return kSpecPayload;
  const std::string data = test::read_file(files.front());
  auto split = split_records(bytes_of(data));
  if (!split || split->empty()) return kSpecPayload;
  const auto& p = split->front().record.payload;
  return {reinterpret_cast<const char*>(p.data()), p.size()};
}

// Found by fuzz/event_proto_fuzzer: dtype 107 (DT_STRING_REF) maps to the string element type,
// which has no item size, yet took the numeric path, which divides by it (SIGFPE on x86). Reference
// string tensors now decode like DT_STRING ones.
TEST(EventProtoFuzzFindings, StringRefTensorWithContentDecodesWithoutDividingByZero) {
  const std::string crash(
      "\x10\xe1\xae\x01\x2a\x38\x0a\x36\x0a\x0e\x64\x74\x5f\x73\x63\x61\x6c\x6c\x72\x61\x5f\x62\x6f\x6f"
      "\x42\x07\x08\x6b\x12\x00\x22\x01\x00\x4a\x1b\x0a\x0e\x0a\x09\x6d\x6f\x64\x65\x5f\x73\x74\x65\x70"
      "\x12\x01\x31\x0a\x09\x0a\x04\x6d\x6f\x64\x65\x12\x01\x31",
      62);
  auto event = decode_event(bytes_of(crash));
  ASSERT_TRUE(event.has_value()) << event.error();
  ASSERT_EQ(event->values.size(), 1u);
  const TensorProtoView& tensor = event->values[0].tensor;
  EXPECT_EQ(tensor.dtype, 107);
  EXPECT_EQ(tensor.tensor_content.size(), 1u);
  auto value = decode_tensor_value(tensor, nullptr, "crash.tfevents", 0);
  ASSERT_VIGIL_OK(value);
  EXPECT_TRUE(value->is_string());
  EXPECT_EQ(value->size(), value->string_values().size());

  // The same tensor declared as DT_STRING decodes the same way.
  TensorProtoView as_string = tensor;
  as_string.dtype = 7;
  auto reference = decode_tensor_value(as_string, nullptr, "crash.tfevents", 0);
  ASSERT_TRUE(reference.has_value());
  EXPECT_EQ(reference->shape(), value->shape());
}

TEST(EventProtoRobustness, EveryTruncationDecodesOrFailsCleanly) {
  for (const std::string& payload : {first_real_payload(), kSpecPayload}) {
    for (size_t n = 0; n < payload.size(); ++n) {
      std::vector<uint8_t> cut(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(n));  // exact size for ASan
      auto ev = decode_event(cut);
      if (!ev) {
        EXPECT_FALSE(ev.error().empty());
      }
    }
  }
}

TEST(EventProtoRobustness, RandomMutationsDecodeOrFailCleanly) {
  std::mt19937 rng(2024);
  for (const std::string& payload : {first_real_payload(), kSpecPayload}) {
    for (int i = 0; i < 20000; ++i) {
      std::vector<uint8_t> bytes(payload.begin(), payload.end());
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < edits; ++k) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
      auto ev = decode_event(bytes);
      if (!ev) {
        EXPECT_FALSE(ev.error().empty());
      }
    }
    for (size_t pos = 0; pos < payload.size(); ++pos) {
      for (int value : {0x00, 0x7f, 0x80, 0xff}) {
        std::vector<uint8_t> bytes(payload.begin(), payload.end());
        bytes[pos] = static_cast<uint8_t>(value);
        (void)decode_event(bytes);
      }
    }
  }
}

TEST(EventProtoRobustness, RandomBytesDecodeOrFailCleanly) {
  std::mt19937 rng(99);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes(rng() % 64);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    (void)decode_event(bytes);
  }
}

}  // namespace
}  // namespace vigil::format
