// Byte layout against real smdebug output: every step of the mixed_dtypes fixture (written by
// smdebug 1.0.34's PyTorch hook) is decoded and written again through TrialWriter with the same
// wall times; the event, index and collections files must come out identical.
#include <gtest/gtest.h>

#include "format/collections_json.h"
#include "format/dtype.h"
#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::list_files;
using test::read_file;
using test::ScratchDir;

const fs::path kFixture = fs::path(VIGIL_SHARED_DIR) / "fixtures/smdebug-real/mixed_dtypes";

std::span<const uint8_t> as_u8(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(WriterFixture, MixedDtypesReencodesByteForByte) {
  ASSERT_TRUE(fs::exists(kFixture)) << kFixture;
  ScratchDir dir;
  double wall_time = 0;  // the clock returns the wall time of the record being re-written
  WriterOptions options;
  options.builtin_collections = false;  // reproduce the fixture's own collection order
  options.clock = [&wall_time] { return wall_time; };
  auto writer = TrialWriter::create(dir.path(), options);
  ASSERT_TRUE(writer);
  auto& w = **writer;

  // The fixture's collections in the fixture's order, with their tensor names cleared: the writer
  // must find the same members again from the regexes.
  const std::string collections_rel = format::collections_file_relpath("worker_0");
  const std::string fixture_collections = read_file(kFixture / collections_rel);
  auto parsed_collections = format::parse_collections_json(fixture_collections, collections_rel);
  ASSERT_VIGIL_OK(parsed_collections);
  for (auto c : parsed_collections->collections) {
    c.tensor_names.clear();
    ASSERT_TRUE(w.add_collection(std::move(c)));
  }

  int steps = 0;
  for (int64_t step = 0;; ++step) {
    const std::string event_rel = format::event_file_relpath(step, "worker_0");
    const std::string index_rel = format::index_file_relpath(step, "worker_0");
    if (!fs::exists(kFixture / event_rel)) break;
    ++steps;
    const std::string events = read_file(kFixture / event_rel);
    auto records = format::split_records(as_u8(events));
    ASSERT_TRUE(records) << records.error().reason;

    bool begun = false;
    for (const auto& rec : *records) {
      auto event = format::decode_event(rec.record.payload);
      ASSERT_TRUE(event) << event.error();
      ASSERT_EQ(event->values.size(), 1u);
      const auto& value = event->values[0];
      ASSERT_EQ(value.kind, format::SummaryValueView::Kind::Tensor);
      if (!begun) {
        ASSERT_TRUE(w.begin_step_at(event->step, event->mode, event->mode_step));
        begun = true;
      }
      ASSERT_EQ(w.global_step(), event->step);
      ASSERT_EQ(w.mode(), event->mode);
      ASSERT_EQ(w.mode_step(), event->mode_step);

      const auto& proto = value.tensor;
      TensorData data;
      data.shape = proto.shape;
      std::vector<std::string> strings(proto.string_val.begin(), proto.string_val.end());
      if (proto.dtype == 0) {
        data.dtype = ElementType::String;
        data.strings = strings;
      } else {
        auto type = format::element_type_of(proto.dtype);
        ASSERT_TRUE(type) << proto.dtype;
        data.dtype = *type;
        data.bytes = std::as_bytes(proto.tensor_content);
      }
      wall_time = event->wall_time;
      const std::string tag(value.tag);
      if (tag.starts_with("scalar/")) {
        // hook.save_scalar values bypass the collections; python ints and bools keep their dtype.
        ASSERT_TRUE(w.write_tensor(tag, data));
      } else {
        ASSERT_TRUE(w.should_save(tag)) << tag;
        ASSERT_TRUE(w.save_tensor(tag, data)) << tag;
      }
    }
    // The hook also saved an empty (2, 0) float32 tensor, which smdebug lists but never writes.
    ASSERT_TRUE(w.save_tensor("dt_empty_float32", TensorData{ElementType::Float32, {2, 0}, {}, {}}));
    ASSERT_TRUE(w.end_step());

    EXPECT_EQ(read_file(dir / event_rel), events) << event_rel;
    EXPECT_EQ(read_file(dir / index_rel), read_file(kFixture / index_rel)) << index_rel;
  }
  EXPECT_EQ(steps, 4);
  ASSERT_TRUE(w.close());

  EXPECT_EQ(read_file(dir / collections_rel), fixture_collections);
  EXPECT_EQ(list_files(dir.path()), list_files(kFixture));
}

}  // namespace
}  // namespace vigil::writer
