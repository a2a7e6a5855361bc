// The worked example of format spec §10, byte for byte, and the publication order of §1.
#include <gtest/gtest.h>

#include <map>

#include "format/collections_json.h"
#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/tfrecord.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::from_hex;
using test::list_files;
using test::numeric;
using test::read_file;
using test::ScratchDir;

// Spec §10.2.
constexpr std::string_view kExampleEventHex = R"(
4600 0000 0000 0000 7235 b9a5 0900 0000
0084 d7d7 412a 3b0a 390a 0178 4217 0801
1209 1207 0802 1203 785f 3222 0800 0080
3f00 0000 404a 1b0a 0e0a 096d 6f64 655f
7374 6570 1201 300a 090a 046d 6f64 6512
0131 b3c0 2d06)";

// Spec §10.3.
constexpr std::string_view kExampleIndex =
    R"({"meta": {"mode": "TRAIN", "mode_step": 0, "event_file_name": "events/000000000000/000000000000_worker_0.tfevents"}, )"
    R"("tensor_payload": [{"tensorname": "x", "start_idx": 0, "length": 86}], "shape_payload": []})";

// Spec §10.4.
constexpr std::string_view kExampleDefaultCollection =
    R"({"name": "default", "include_regex": [], "tensor_names": ["x"], "reduction_config": {"save_raw_tensor": true, )"
    R"("reductions": "", "save_shape": false}, "save_config": {"TRAIN": {"save_interval": 500, "save_steps": [], )"
    R"("start_step": 0, "end_step": null}, "EVAL": {"save_interval": 500, "save_steps": [], "start_step": 0, )"
    R"("end_step": null}, "PREDICT": {"save_interval": 500, "save_steps": [], "start_step": 0, "end_step": null}, )"
    R"("GLOBAL": {"save_interval": 500, "save_steps": [], "start_step": 0, "end_step": null}}, "save_histogram": true})";

WriterOptions pinned_clock() {
  WriterOptions options;
  options.clock = [] { return 1600000000.0; };
  return options;
}

TEST(WriterExample, Section10BytesExactly) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path(), pinned_clock());
  ASSERT_VIGIL_OK(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.begin_step(Mode::Train));
  EXPECT_EQ(w.global_step(), 0);
  EXPECT_EQ(w.mode(), Mode::Train);
  EXPECT_EQ(w.mode_step(), 0);
  const std::vector<float> x{1.0f, 2.0f};
  ASSERT_TRUE(w.save_tensor("x", numeric(ElementType::Float32, {2}, x)));
  ASSERT_TRUE(w.close());

  EXPECT_EQ(list_files(dir.path()),
            (std::vector<std::string>{"collections/000000000/worker_0_collections.json",
                                      "events/000000000000/000000000000_worker_0.tfevents",
                                      "index/000000000/000000000000_worker_0.json", "training_job_end.ts"}));
  const std::string event = read_file(dir / "events/000000000000/000000000000_worker_0.tfevents");
  EXPECT_EQ(event.size(), 86u);
  EXPECT_EQ(event, from_hex(kExampleEventHex));
  EXPECT_EQ(read_file(dir / "index/000000000/000000000000_worker_0.json"), kExampleIndex);
  EXPECT_EQ(read_file(dir / "training_job_end.ts"), "");

  // The six PyTorch collections; their order is free (Python set order), the size is not.
  const std::string collections = read_file(dir / "collections/000000000/worker_0_collections.json");
  EXPECT_EQ(collections.size(), 3400u);
  EXPECT_NE(collections.find(kExampleDefaultCollection), std::string::npos) << collections;
  auto parsed = format::parse_collections_json(collections, "collections.json");
  ASSERT_VIGIL_OK(parsed);
  std::vector<std::string> names;
  for (const auto& c : parsed->collections) names.push_back(c.name);
  std::ranges::sort(names);
  EXPECT_EQ(names, (std::vector<std::string>{"all", "biases", "default", "gradients", "losses", "weights"}));
  EXPECT_EQ(parsed->num_workers, 1);
}

TEST(WriterExample, CollectionsFileAtTheStepAfterTheFirstSavedStep) {
  ScratchDir dir;
  WriterOptions options = pinned_clock();
  options.save_config[0].save_interval = 2;  // TRAIN: mode steps 0, 2, ...
  auto writer = TrialWriter::create(dir.path(), options);
  ASSERT_TRUE(writer);
  auto& w = **writer;
  const fs::path collections = dir / "collections/000000000/worker_0_collections.json";
  const std::vector<float> v{3.0f};

  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.save_tensor("a", numeric(ElementType::Float32, {1}, v)));
  ASSERT_TRUE(w.end_step());
  EXPECT_FALSE(fs::exists(collections));
  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(fs::exists(collections));
  // Written once: names saved later are not added.
  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.save_tensor("b", numeric(ElementType::Float32, {1}, v)));
  ASSERT_TRUE(w.close());
  auto parsed = format::parse_collections_json(read_file(collections), "c");
  ASSERT_TRUE(parsed);
  for (const auto& c : parsed->collections)
    EXPECT_EQ(c.tensor_names, c.name == "default" ? std::vector<std::string>{"a"} : std::vector<std::string>{});
  EXPECT_TRUE(fs::exists(dir / "events/000000000002/000000000002_worker_0.tfevents"));
}

TEST(WriterExample, CloseWritesTheCollectionsFileWhenNoLaterStepBegins) {
  ScratchDir dir;
  {
    auto writer = TrialWriter::create(dir.path(), pinned_clock());
    ASSERT_TRUE(writer);
    ASSERT_TRUE((*writer)->begin_step(Mode::Train));
    const std::vector<float> v{3.0f};
    ASSERT_TRUE((*writer)->save_tensor("a", numeric(ElementType::Float32, {1}, v)));
  }  // the destructor publishes the step and the collections, but not the end marker
  EXPECT_EQ(list_files(dir.path()),
            (std::vector<std::string>{"collections/000000000/worker_0_collections.json",
                                      "events/000000000000/000000000000_worker_0.tfevents",
                                      "index/000000000/000000000000_worker_0.json"}));
}

TEST(WriterExample, FilesAppearOnlyWhenTheStepEnds) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path(), pinned_clock());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  const fs::path events = dir / "events/000000000000/000000000000_worker_0.tfevents";
  const fs::path index = dir / "index/000000000/000000000000_worker_0.json";
  const std::vector<double> v{1, 2, 3};

  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.save_tensor("a", numeric(ElementType::Float64, {3}, v)));
  ASSERT_TRUE(w.save_tensor("b", numeric(ElementType::Float64, {3}, v)));
  // While the step is open only .tmp names exist, which readers ignore.
  for (const auto& f : list_files(dir.path())) EXPECT_TRUE(f.ends_with(".tmp")) << f;
  EXPECT_FALSE(fs::exists(events));
  EXPECT_FALSE(fs::exists(index));
  EXPECT_TRUE(fs::exists(events.string() + ".tmp"));

  ASSERT_TRUE(w.end_step());
  EXPECT_TRUE(fs::exists(events));
  EXPECT_TRUE(fs::exists(index));
  for (const auto& f : list_files(dir.path())) EXPECT_FALSE(f.ends_with(".tmp")) << f;

  auto parsed = format::parse_index_json(read_file(index), "index");
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->tensor_payload.size(), 2u);
  EXPECT_EQ(parsed->tensor_payload[0].start_idx, 0u);
  EXPECT_EQ(parsed->tensor_payload[1].start_idx, parsed->tensor_payload[0].length);
  EXPECT_EQ(parsed->tensor_payload[0].length + parsed->tensor_payload[1].length, fs::file_size(events));
}

TEST(WriterExample, EmptyStepsWriteNothingAndShapeOnlyStepsNoEventFile) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path(), pinned_clock());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.end_step());
  EXPECT_EQ(list_files(dir.path()), std::vector<std::string>{});

  ASSERT_TRUE(w.begin_step(Mode::Train));
  const std::vector<int64_t> shape{3, 4};
  ASSERT_TRUE(w.write_shape("w", shape));
  ASSERT_TRUE(w.end_step());
  EXPECT_EQ(list_files(dir.path()), std::vector<std::string>{"index/000000000/000000000001_worker_0.json"});
  EXPECT_EQ(read_file(dir / "index/000000000/000000000001_worker_0.json"),
            R"({"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [], )"
            R"("shape_payload": [{"tensorname": "w", "originalname": "w", "shape": [3, 4]}]})");
}

TEST(WriterExample, ZeroSizeArraysAreNotWritten) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path(), pinned_clock());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.begin_step(Mode::Train));
  const std::vector<float> none;
  ASSERT_TRUE(w.save_tensor("empty", numeric(ElementType::Float32, {2, 0}, none)));
  ASSERT_TRUE(w.write_tensor("empty2", numeric(ElementType::Float32, {0}, none)));
  // Nor their reductions (an FSDP1 worker's empty run of a parameter it holds none of).
  const std::vector<format::ReductionSpec> reductions{{"min", false}, {"max", true}, {"mean", false}};
  ASSERT_TRUE(w.write_reductions("empty3", numeric(ElementType::Float32, {0}, none), reductions));
  ASSERT_TRUE(w.end_step());
  EXPECT_EQ(list_files(dir.path()), std::vector<std::string>{});
  ASSERT_TRUE(w.close());
  // smdebug still lists the name in its collection (see the mixed_dtypes fixture's dt_empty_float32).
  auto parsed = format::parse_collections_json(read_file(dir / "collections/000000000/worker_0_collections.json"), "c");
  ASSERT_TRUE(parsed);
  for (const auto& c : parsed->collections) {
    if (c.name == "default") {
      EXPECT_EQ(c.tensor_names, std::vector<std::string>{"empty"});
    }
  }
}

TEST(WriterExample, ReductionNamesDropDeviceSuffixesAndFollowSmdebugOrder) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path(), pinned_clock());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  format::CollectionConfig c;
  c.name = "reduced";
  c.include_regex = {"kernel"};
  c.reduction_config = format::ReductionConfig{
      .save_raw_tensor = false,
      .reductions = {{"l2", true}, {"max", false}, {"l1", false}, {"mean", true}, {"min", false}},
      .save_shape = false};
  ASSERT_TRUE(w.add_collection(c));
  ASSERT_TRUE(w.begin_step(Mode::Train));
  const std::vector<float> v{-1.0f, 2.0f, -3.0f};
  ASSERT_TRUE(w.save_tensor("dense/kernel:0", numeric(ElementType::Float32, {3}, v)));
  ASSERT_TRUE(w.end_step());
  auto parsed = format::parse_index_json(read_file(dir / "index/000000000/000000000000_worker_0.json"), "i");
  ASSERT_TRUE(parsed);
  std::vector<std::string> names;
  for (const auto& e : parsed->tensor_payload) names.push_back(e.tensorname);
  EXPECT_EQ(names, (std::vector<std::string>{"smdebug/reductions/max/dense/kernel", "smdebug/reductions/min/dense/kernel",
                                             "smdebug/reductions/l1/dense/kernel",
                                             "smdebug/reductions/abs_mean/dense/kernel",
                                             "smdebug/reductions/abs_l2/dense/kernel"}));
}


// Computed reductions of 16-bit floats are stored as 0-d tensors of the input dtype, rounded to
// nearest even: subnormals, the largest finite value and overflow to infinity survive exactly.
TEST(WriterExample, SixteenBitFloatReductionsKeepTheirBits) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path(), pinned_clock());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  format::CollectionConfig c;
  c.name = "reduced";
  c.include_regex = {"^h"};
  c.reduction_config = format::ReductionConfig{
      .save_raw_tensor = false, .reductions = {{"min", false}, {"max", false}, {"mean", false}, {"sum", false}},
      .save_shape = false};
  ASSERT_TRUE(w.add_collection(c));
  ASSERT_TRUE(w.begin_step(Mode::Train));
  // float16: smallest subnormal, 3x it, the largest finite value twice (their sum overflows).
  const std::vector<uint16_t> half{0x0001, 0x0003, 0x7bff, 0x7bff};
  ASSERT_TRUE(w.save_tensor("h16", numeric(ElementType::Float16, {4}, half)));
  const std::vector<uint16_t> bf16{0x0001, 0x7f7f};
  ASSERT_TRUE(w.save_tensor("hbf", numeric(ElementType::BFloat16, {2}, bf16)));
  ASSERT_TRUE(w.end_step());

  const std::string events = read_file(dir / "events/000000000000/000000000000_worker_0.tfevents");
  auto records = format::split_records({reinterpret_cast<const uint8_t*>(events.data()), events.size()});
  ASSERT_TRUE(records);
  std::map<std::string, std::pair<int32_t, uint16_t>> stored;  // tag -> (dtype, bits)
  for (const auto& r : *records) {
    auto e = format::decode_event(r.record.payload);
    ASSERT_TRUE(e);
    const auto& t = e->values.at(0).tensor;
    EXPECT_TRUE(t.shape.empty());
    ASSERT_EQ(t.tensor_content.size(), 2u);
    stored[std::string(e->values[0].tag)] = {t.dtype, uint16_t(t.tensor_content[0] | t.tensor_content[1] << 8)};
  }
  using P = std::pair<int32_t, uint16_t>;
  EXPECT_EQ(stored, (std::map<std::string, P>{
                        {"smdebug/reductions/min/h16", P{19, 0x0001}},
                        {"smdebug/reductions/max/h16", P{19, 0x7bff}},
                        {"smdebug/reductions/mean/h16", P{19, 0x77ff}},  // 65504 / 2 (+ 2^-24, rounded away)
                        {"smdebug/reductions/sum/h16", P{19, 0x7c00}},   // inf
                        {"smdebug/reductions/min/hbf", P{14, 0x0001}},
                        {"smdebug/reductions/max/hbf", P{14, 0x7f7f}},
                        {"smdebug/reductions/mean/hbf", P{14, 0x7eff}},  // max / 2
                        {"smdebug/reductions/sum/hbf", P{14, 0x7f7f}},
                    }));
}

}  // namespace
}  // namespace vigil::writer
