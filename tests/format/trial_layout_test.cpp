#include "format/trial_layout.h"

#include <gtest/gtest.h>

#include "format/dtype.h"
#include "test_support.h"

namespace vigil::format {
namespace {

TEST(TrialLayout, RelativePaths) {
  EXPECT_EQ(event_file_relpath(7, "worker_0"), "events/000000000007/000000000007_worker_0.tfevents");
  EXPECT_EQ(event_file_relpath(0, "worker_0"), "events/000000000000/000000000000_worker_0.tfevents");
  EXPECT_EQ(index_file_relpath(0, "worker_0"), "index/000000000/000000000000_worker_0.json");
  EXPECT_EQ(index_file_relpath(999, "worker_0"), "index/000000000/000000000999_worker_0.json");
  EXPECT_EQ(index_file_relpath(1234, "worker_0"), "index/000000001/000000001234_worker_0.json");
  EXPECT_EQ(index_file_relpath(123456789012, "algo-1"), "index/123456789/123456789012_algo-1.json");
  EXPECT_EQ(collections_file_relpath("worker_0"), "collections/000000000/worker_0_collections.json");
  EXPECT_EQ(kEndOfTrainingMarker, "training_job_end.ts");
}

TEST(TrialLayout, TfDeviceNames) {
  const std::string device = "/job:worker/replica:0/task:1/device:GPU:0";
  EXPECT_EQ(serialize_worker_name(device), "_job-worker_replica-0_task-1_device-GPU-0");
  EXPECT_EQ(deserialize_worker_name("_job-worker_replica-0_task-1_device-GPU-0"), device);
  EXPECT_EQ(serialize_worker_name("worker_0"), "worker_0");
  EXPECT_EQ(deserialize_worker_name("worker_0"), "worker/0");
}

TEST(TrialLayout, ParseStepFileNames) {
  auto p = parse_step_file_name("/tmp/run/index/000000001/000000001234_worker_0.json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->global_step, 1234);
  EXPECT_EQ(p->worker, "worker_0");

  p = parse_step_file_name("events/000000000007/000000000007_worker_0.tfevents");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->global_step, 7);
  EXPECT_EQ(p->worker, "worker_0");

  p = parse_step_file_name("000000000012_algo-1.json");  // bare basename
  ASSERT_TRUE(p);
  EXPECT_EQ(p->global_step, 12);
  EXPECT_EQ(p->worker, "algo-1");

  p = parse_step_file_name("s3://bucket/prefix/index/000000000/000000000003_worker_1.csv");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->global_step, 3);
  EXPECT_EQ(p->worker, "worker_1");

  p = parse_step_file_name("index/000000000/000000000001_w.json.json");  // (.+) is greedy
  ASSERT_TRUE(p);
  EXPECT_EQ(p->worker, "w.json");

  p = parse_step_file_name("x/9223372036854775807_w.json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->global_step, INT64_MAX);
}

TEST(TrialLayout, ParseStepFileNamesDeserializesTfDevices) {
  auto p = parse_step_file_name("index/000000000/000000000499__job-worker_replica-0_task-0_device-GPU-0.json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->global_step, 499);
  EXPECT_EQ(p->worker, "/job:worker/replica:0/task:0/device:GPU:0");
  // QUIRK kept from smdebug: a "__" anywhere in the path deserializes every worker name.
  p = parse_step_file_name("/data/my__trial/index/000000000/000000000001_worker_0.json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->worker, "worker/0");
}

TEST(TrialLayout, ParseStepFileNamesRejects) {
  for (std::string bad : {
           "index/000000000/000000000001_worker_0.json.tmp",
           "events/000000000001/000000000001_worker_0.tfevents.tmp",
           "index/000000000/000000000001_worker_0.txt",
           "index/000000000/worker_0.json",
           "index/000000000/_worker_0.json",
           "index/000000000/000000000001worker_0.json",
           "index/000000000/000000000001_.json",
           "index/000000000/000000000001_worker_0",
           "index/000000000/1a_worker_0.json",
           "/000000000001_worker_0.json",
           "x/99999999999999999999_w.json",
           "index/000000000/000000000001_w\n.json",
           "",
           ".json",
       }) {
    EXPECT_FALSE(parse_step_file_name(bad)) << bad;
  }
}

TEST(TrialLayout, ParseStepFileNamesOfEveryFixtureFile) {
  size_t n = 0;
  for (const auto& path : test::files_under(test::real_fixtures(), [](const std::string& rel) {
         return rel.ends_with(".tfevents") || (test::has_component(rel, "index") && rel.ends_with(".json"));
       })) {
    auto p = parse_step_file_name(path.string());
    ASSERT_TRUE(p) << path;
    EXPECT_EQ(p->worker, "worker_0");
    const std::string base = path.filename().string();
    EXPECT_EQ(p->global_step, std::stoll(base.substr(0, base.find('_'))));
    ++n;
  }
  EXPECT_GT(n, 100u);
}

TEST(TrialLayout, CollectionsFileNames) {
  EXPECT_EQ(parse_collections_file_name("worker_0_collections.json"), "worker_0");
  EXPECT_EQ(parse_collections_file_name("algo-1_collections.json"), "algo-1");
  EXPECT_EQ(parse_collections_file_name("_job-worker_replica-0_task-0_device-GPU-0_collections.json"),
            "/job:worker/replica:0/task:0/device:GPU:0");
  EXPECT_FALSE(parse_collections_file_name("collections.json"));
  EXPECT_FALSE(parse_collections_file_name("_collections.json"));
  EXPECT_FALSE(parse_collections_file_name("worker_0_collections.json.tmp"));
  EXPECT_FALSE(parse_collections_file_name("worker_0.json"));
}

TEST(Dtype, ElementTypeInfo) {
  struct Row {
    ElementType t;
    std::string_view name, str;
    size_t size;
    DataType dt;
  };
  const Row rows[] = {
      {ElementType::Float16, "float16", "<f2", 2, DataType::Half},
      {ElementType::BFloat16, "bfloat16", "<V2", 2, DataType::BFloat16},
      {ElementType::Float32, "float32", "<f4", 4, DataType::Float},
      {ElementType::Float64, "float64", "<f8", 8, DataType::Double},
      {ElementType::Int8, "int8", "|i1", 1, DataType::Int8},
      {ElementType::Int16, "int16", "<i2", 2, DataType::Int16},
      {ElementType::Int32, "int32", "<i4", 4, DataType::Int32},
      {ElementType::Int64, "int64", "<i8", 8, DataType::Int64},
      {ElementType::UInt8, "uint8", "|u1", 1, DataType::Uint8},
      {ElementType::UInt16, "uint16", "<u2", 2, DataType::Uint16},
      {ElementType::UInt32, "uint32", "<u4", 4, DataType::Uint32},
      {ElementType::UInt64, "uint64", "<u8", 8, DataType::Uint64},
      {ElementType::Bool, "bool", "|b1", 1, DataType::Bool},
      {ElementType::Complex64, "complex64", "<c8", 8, DataType::Complex64},
      {ElementType::Complex128, "complex128", "<c16", 16, DataType::Complex128},
      {ElementType::String, "str", "<U", 0, DataType::Invalid},
  };
  for (const auto& r : rows) {
    const auto& info = element_type_info(r.t);
    EXPECT_EQ(info.numpy_name, r.name);
    EXPECT_EQ(info.numpy_str, r.str);
    EXPECT_EQ(info.item_size, r.size);
    EXPECT_EQ(info.data_type, r.dt);
    if (r.t != ElementType::String) {
      // Every numeric type reads back as itself, *_REF included.
      EXPECT_EQ(element_type_of(static_cast<int32_t>(r.dt)), r.t) << r.name;
      EXPECT_EQ(element_type_of(static_cast<int32_t>(r.dt) + 100), r.t) << r.name;
    }
  }
}

TEST(Dtype, ElementTypeOf) {
  EXPECT_EQ(element_type_of(7), ElementType::String);
  EXPECT_EQ(element_type_of(107), ElementType::String);
  EXPECT_EQ(element_type_of(6), ElementType::Int8);  // not uint8, unlike smdebug
  // TensorFlow's types.proto: DT_FLOAT8_E5M2 = 24, DT_FLOAT8_E4M3FN = 25 (and their _REF variants).
  EXPECT_EQ(element_type_of(24), ElementType::Float8E5M2);
  EXPECT_EQ(element_type_of(125), ElementType::Float8E4M3FN);
  for (ElementType t : {ElementType::Float8E4M3FN, ElementType::Float8E5M2, ElementType::BFloat16, ElementType::Float16})
    EXPECT_EQ(element_type_of(int32_t(element_type_info(t).data_type)), t);
  for (int32_t unsupported : {0, 100, 11, 12, 13, 15, 16, 20, 21, 26, 29, 99, 126, 200, -1, -101})
    EXPECT_FALSE(element_type_of(unsupported)) << unsupported;
}

}  // namespace
}  // namespace vigil::format
