// Damaged trials: every kind of corruption gives a clear error naming the file (and the byte
// offset where there is one), never a crash and never wrong data.
#include <gtest/gtest.h>

#include <fstream>

#include "format/event_proto.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "test_support.h"
#include "trial/trial.h"

namespace vigil {
namespace {

using test::read_file;
using test::ScratchDir;
namespace fs = std::filesystem;

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override { test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 3), true); }

  fs::path event_file(int64_t step) const { return dir.path() / format::event_file_relpath(step, "worker_0"); }
  fs::path index_file(int64_t step) const { return dir.path() / format::index_file_relpath(step, "worker_0"); }

  Result<TensorValue> read_step(int64_t step) {
    auto t = Trial::open(dir.path());
    if (!t) return fail(t.error());
    return (*t)->value("w", step);
  }

  void expect_error(int64_t step, ErrorCode code, const fs::path& file) {
    auto v = read_step(step);
    ASSERT_FALSE(v.has_value()) << "damaged data was read as a value";
    EXPECT_EQ(v.error().code, code) << v.error().message;
    EXPECT_NE(v.error().message.find(file.string()), std::string::npos)
        << "message does not name the file: " << v.error().message;
  }

  ScratchDir dir;
};

TEST_F(Corruption, IntactTrialReads) {
  auto v = read_step(2);
  ASSERT_VIGIL_OK(v);
  EXPECT_EQ(v->as<float>()[1], 2.5f);
}

TEST_F(Corruption, TruncatedEventFile) {
  std::string bytes = read_file(event_file(1));
  for (size_t keep : {size_t(0), size_t(5), size_t(12), bytes.size() / 2, bytes.size() - 1}) {
    write_file(event_file(1), bytes.substr(0, keep));
    expect_error(1, ErrorCode::CorruptData, event_file(1));
    auto v = read_step(1);
    if (!v) {
      EXPECT_TRUE(v.error().offset.has_value());
    }
  }
}

TEST_F(Corruption, FlippedBitInLength) {
  std::string bytes = read_file(event_file(1));
  bytes[0] ^= 0x04;
  write_file(event_file(1), bytes);
  expect_error(1, ErrorCode::CorruptData, event_file(1));
}

TEST_F(Corruption, FlippedBitInLengthCrc) {
  std::string bytes = read_file(event_file(1));
  bytes[9] ^= 0x01;
  write_file(event_file(1), bytes);
  expect_error(1, ErrorCode::CorruptData, event_file(1));
}

TEST_F(Corruption, BadFooter) {
  std::string bytes = read_file(event_file(1));
  bytes[bytes.size() - 1] ^= 0x10;
  write_file(event_file(1), bytes);
  expect_error(1, ErrorCode::CorruptData, event_file(1));
}

TEST_F(Corruption, FlippedPayloadBitWithRealCrcFooter) {
  // Re-frame the record with the real payload CRC (TensorBoard style), then damage the payload.
  std::string bytes = read_file(event_file(1));
  auto rec = format::parse_record({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  ASSERT_TRUE(rec.has_value());
  std::string payload(reinterpret_cast<const char*>(rec->payload.data()), rec->payload.size());
  std::string reframed;
  format::append_record(reframed, {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()},
                        format::Footer::PayloadCrc);
  ASSERT_EQ(reframed.size(), bytes.size());
  write_file(event_file(1), reframed);
  ASSERT_TRUE(read_step(1).has_value()) << "a real payload CRC must be accepted";
  reframed[reframed.size() - 8] ^= 0x01;  // a byte of the float data
  write_file(event_file(1), reframed);
  expect_error(1, ErrorCode::CorruptData, event_file(1));
}

TEST_F(Corruption, DamagedPayloadStructure) {
  // With smdebug's constant footer the payload has no checksum; structural damage is still caught.
  std::string bytes = read_file(event_file(1));
  bytes[12] = char(0xff);  // the first field tag of the Event becomes garbage
  bytes[13] = char(0xff);
  write_file(event_file(1), bytes);
  expect_error(1, ErrorCode::CorruptData, event_file(1));
}

TEST_F(Corruption, MalformedIndexJson) {
  write_file(index_file(2), "{\"meta\": {\"mode\": \"TRAIN\", ");
  TrialOptions o;
  auto t = Trial::open(dir.path(), o);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ErrorCode::IndexReader);
  EXPECT_EQ(t.error().message, "Empty/Corrupt Index File");
  EXPECT_EQ(t.error().file, index_file(2).string());
}

TEST_F(Corruption, IndexWithoutMeta) {
  write_file(index_file(2), R"({"tensor_payload": [], "shape_payload": []})");
  auto t = Trial::open(dir.path());
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ErrorCode::IndexReader);
  EXPECT_EQ(t.error().message, "meta section is not present");
}

TEST_F(Corruption, MissingIndexFileMeansMissingStep) {
  fs::remove(index_file(2));
  auto v = read_step(2);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, ErrorCode::StepUnavailable);
}

TEST_F(Corruption, IndexPointsPastFileEnd) {
  std::string index = read_file(index_file(1));
  auto pos = index.find("\"start_idx\": 0");
  ASSERT_NE(pos, std::string::npos) << index;
  index.replace(pos, 14, "\"start_idx\": 4096");
  write_file(index_file(1), index);
  expect_error(1, ErrorCode::CorruptData, event_file(1));
}

TEST_F(Corruption, IndexPointsOutsideTheTrial) {
  std::string index = read_file(index_file(1));
  auto pos = index.find("events/");
  ASSERT_NE(pos, std::string::npos);
  index.insert(pos, "../../");
  write_file(index_file(1), index);
  auto t = Trial::open(dir.path());
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ErrorCode::IndexReader) << t.error().message;
}

TEST_F(Corruption, MissingEventFile) {
  fs::remove(event_file(3));
  expect_error(3, ErrorCode::Io, event_file(3));
}

TEST_F(Corruption, UnknownDtype) {
  // Re-encode step 1's record with a dtype Vigil cannot decode (DT_VARIANT = 21).
  std::string bytes = read_file(event_file(1));
  auto rec = format::parse_record({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  ASSERT_TRUE(rec.has_value());
  auto ev = format::decode_event(rec->payload);
  ASSERT_TRUE(ev.has_value());
  const auto& tensor = ev->values.at(0).tensor;
  format::TensorEventSpec spec{.wall_time = ev->wall_time,
                               .step = ev->step,
                               .tag = ev->values[0].tag,
                               .dtype = 21,
                               .shape = tensor.shape,
                               .tensor_content = tensor.tensor_content,
                               .mode = ev->mode,
                               .mode_step = ev->mode_step};
  std::string payload = format::encode_tensor_event(spec);
  std::string framed;
  format::append_record(framed, {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()});
  ASSERT_EQ(framed.size(), bytes.size());
  write_file(event_file(1), framed);
  expect_error(1, ErrorCode::NotSupported, event_file(1));
}

}  // namespace
}  // namespace vigil
