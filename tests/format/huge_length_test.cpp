// Lengths read from untrusted bytes never size an allocation: a record or field that announces 2^60
// bytes is refused by comparing with the bytes actually there, before anything is allocated.
// This binary replaces operator new to see the largest allocation made while a check runs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "format/crc32c.h"
#include "format/event_proto.h"
#include "format/tfrecord.h"
#include "trial/tensor_value.h"
#include "proto_bytes.h"

namespace {

std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest{0};

}  // namespace

void* operator new(std::size_t size) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    size_t seen = g_largest.load(std::memory_order_relaxed);
    while (size > seen && !g_largest.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace vigil::format {
namespace {

constexpr uint64_t kHuge = uint64_t{1} << 60;
// Far above anything the inputs below could justify (they are a few dozen bytes).
constexpr size_t kSmallAllocation = 4096;

// The largest single operator-new request made during its lifetime.
class LargestAllocation {
 public:
  LargestAllocation() {
    g_largest = 0;
    g_tracking = true;
  }
  ~LargestAllocation() { g_tracking = false; }
  size_t bytes() const { return g_largest.load(); }
};

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

using namespace test::proto;  // the protobuf writer of proto_bytes.h

// A length-delimited field that announces `length` bytes but holds only "abc".
std::string lying_ld(uint32_t field, uint64_t length) {
  std::string out;
  key(out, field, 2);
  varint(out, length);
  return out + "abc";
}

TEST(HugeLength, TfRecordLengthOf2To60IsRefusedWithoutAllocating) {
  std::string record;
  for (int i = 0; i < 8; ++i) record.push_back(static_cast<char>((kHuge >> (8 * i)) & 0xFF));
  const uint32_t crc = mask_crc(crc32c(record.data(), 8));  // a valid length CRC: the length is trusted as read
  for (int i = 0; i < 4; ++i) record.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  record += "payload bytes and a footer";

  size_t largest = 0;
  bool parsed_ok = true, split_ok = true;
  {
    LargestAllocation tracker;
    parsed_ok = parse_record(bytes_of(record)).has_value();
    split_ok = split_records(bytes_of(record)).has_value();
    largest = tracker.bytes();
  }
  EXPECT_FALSE(parsed_ok);
  EXPECT_FALSE(split_ok);
  EXPECT_LT(largest, kSmallAllocation);
  auto parsed = parse_record(bytes_of(record));
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().find("length 1152921504606846976 exceeds the available bytes"), std::string::npos)
      << parsed.error();
}

TEST(HugeLength, ProtoFieldLengthsOf2To60AreRefusedWithoutAllocating) {
  // The same lie at every level that holds length-delimited fields.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Event.summary", lying_ld(5, kHuge)},
      {"Summary.value", ld(5, lying_ld(1, kHuge))},
      {"Value.tag", ld(5, ld(1, lying_ld(1, kHuge)))},
      {"Value.tensor", ld(5, ld(1, lying_ld(8, kHuge)))},
      {"TensorProto.tensor_content", ld(5, ld(1, ld(8, lying_ld(4, kHuge))))},
      {"TensorProto.string_val", ld(5, ld(1, ld(8, lying_ld(8, kHuge))))},
      {"TensorProto.float_val (packed)", ld(5, ld(1, ld(8, lying_ld(5, kHuge))))},
      {"TensorProto.int64_val (packed)", ld(5, ld(1, ld(8, lying_ld(10, kHuge))))},
      {"TensorShapeProto.dim", ld(5, ld(1, ld(8, ld(2, lying_ld(2, kHuge)))))},
      {"SummaryMetadata.plugin_data", ld(5, ld(1, ld(9, lying_ld(1, kHuge))))},
      {"an unknown field", lying_ld(99, kHuge)},
  };
  for (const auto& [where, bytes] : cases) {
    size_t largest = 0;
    std::expected<EventView, std::string> event;
    {
      LargestAllocation tracker;
      event = decode_event(bytes_of(bytes));
      largest = tracker.bytes();
    }
    ASSERT_FALSE(event.has_value()) << where;
    EXPECT_NE(event.error().find("runs past the end"), std::string::npos) << where << ": " << event.error();
    EXPECT_LT(largest, kSmallAllocation) << where;
  }
}

TEST(HugeLength, HugeTensorShapesAreRefusedWithoutAllocating) {
  // A shape of 2^60 elements backed by 4 bytes of content, and one whose element count overflows.
  const std::vector<std::vector<int64_t>> shapes = {{int64_t(kHuge)}, {int64_t(1) << 40, int64_t(1) << 40}};
  const std::vector<uint8_t> content = {0, 0, 128, 63};
  for (const auto& shape : shapes) {
    TensorProtoView proto;
    proto.dtype = 1;  // DT_FLOAT
    proto.shape = shape;
    proto.tensor_content = content;
    size_t largest = 0;
    bool ok = true;
    {
      LargestAllocation tracker;
      ok = decode_tensor_value(proto, nullptr, "f", 0).has_value();
      largest = tracker.bytes();
    }
    EXPECT_FALSE(ok);
    EXPECT_LT(largest, kSmallAllocation);
    auto value = decode_tensor_value(proto, nullptr, "f", 0);
    ASSERT_FALSE(value.has_value());
    EXPECT_EQ(value.error().code, ErrorCode::CorruptData);
  }
}

}  // namespace
}  // namespace vigil::format
