// The profiler trial over an S3 prefix: a profiler folder written by the monitor's and the hook's
// writers, uploaded through the S3 store to s3rver (tests/support/s3_test_server.py), reads back the
// same samples and events as the local folder.
#include <gtest/gtest.h>

#include "profiler/profiler_trial.h"
#include "profiler/system_metrics_writer.h"
#include "profiler/trace_event_writer.h"
#include "s3_server_process.h"
#include "storage/object_store.h"
#include "storage/s3_object_store.h"
#include "storage/s3_uri.h"
#include "test_support.h"

namespace vigil::profiler {
namespace {

using nlohmann::json;

class ProfilerS3Test : public test::S3ServerSuite {
 protected:

  static std::shared_ptr<const storage::ObjectStore> s3_store(const std::string& prefix) {
    auto store = storage::open_s3_store(storage::S3Uri{"trials", prefix}, server_->config());
    EXPECT_TRUE(store) << store.error().message;
    return store ? *store : nullptr;
  }

};

constexpr int64_t kBase = 1591160699000000;

// A profiler folder as a job writes it: two system files, two trace files.
void write_profiler_folder(const std::filesystem::path& root) {
  const std::vector<SystemMetric> rows = {{"cpu", "cpu0", "CPUUtilization", 12.5},
                                          {"gpu", "gpu0", "GPUUtilization", 80}};
  SystemMetricsWriter system({.root = root, .node_id = "algo-1", .file_host = "algo-1"});
  ASSERT_VIGIL_OK(system.write(1591160699.5, rows));
  ASSERT_VIGIL_OK(system.write(1591160760.5, std::span(rows).first(1)));  // the next minute's file
  ASSERT_VIGIL_OK(system.close());
  int64_t clock = kBase;
  TraceEventWriter trace({.root = root, .node_id = "0-algo-1", .rotate_close_interval_s = 10, .start_time_us = kBase,
                          .now_us = [&] { return clock; }});
  for (int64_t s : {0, 5, 20}) {
    clock = kBase + s * 1'000'000;
    ASSERT_VIGIL_OK(trace.write({.training_phase = "Step:ModeKeys.TRAIN", .name = "step" + std::to_string(s),
                                 .start_us = clock, .duration_us = 500'000}));
  }
  ASSERT_VIGIL_OK(trace.close());
}

// Every file of `from` written to `to` with the store's write().
void upload(const storage::ObjectStore& from, const storage::ObjectStore& to) {
  auto listed = from.list("");
  ASSERT_VIGIL_OK(listed);
  ASSERT_FALSE(listed->empty());
  for (const auto& object : *listed) {
    auto bytes = from.read(object.relpath);
    ASSERT_VIGIL_OK(bytes);
    ASSERT_VIGIL_OK(to.write(object.relpath, *bytes));
  }
}

TEST_F(ProfilerS3Test, ReadsTheSameSamplesAndEventsAsTheLocalFolder) {
  test::ScratchDir dir;
  write_profiler_folder(dir.path());
  auto local_store = storage::open_object_store(dir.path().string());
  ASSERT_VIGIL_OK(local_store);
  auto s3 = s3_store("jobs/profiled/profiler-output");
  ASSERT_TRUE(s3);
  upload(**local_store, *s3);

  ProfilerTrial local(*local_store), remote(s3);
  EXPECT_EQ(remote.location(), "s3://trials/jobs/profiled/profiler-output");
  auto local_first = local.first_timestamp_us(), remote_first = remote.first_timestamp_us();
  ASSERT_VIGIL_OK(local_first);
  ASSERT_VIGIL_OK(remote_first);
  ASSERT_TRUE(*remote_first);
  EXPECT_EQ(*remote_first, *local_first);
  EXPECT_EQ(remote.system_metrics().files(), local.system_metrics().files());
  EXPECT_EQ(remote.system_metrics().files().size(), 2u);
  EXPECT_EQ(remote.framework_metrics().files(), local.framework_metrics().files());
  EXPECT_EQ(remote.framework_metrics().files().size(), 2u);

  const int64_t end = kBase + 120'000'000;
  auto local_samples = local.system_metrics().events(kBase, end);
  auto remote_samples = remote.system_metrics().events(kBase, end);
  ASSERT_VIGIL_OK(local_samples);
  ASSERT_VIGIL_OK(remote_samples);
  EXPECT_EQ(remote_samples->size(), 3u);
  EXPECT_EQ(*remote_samples, *local_samples);
  auto gpu = remote.system_metrics().events(kBase, end, std::string("gpu"));
  ASSERT_VIGIL_OK(gpu);
  ASSERT_EQ(gpu->size(), 1u);
  EXPECT_EQ((*gpu)[0].value, 80);

  auto local_events = local.framework_metrics().events(kBase, end);
  auto remote_events = remote.framework_metrics().events(kBase, end);
  ASSERT_VIGIL_OK(local_events);
  ASSERT_VIGIL_OK(remote_events);
  ASSERT_EQ(remote_events->size(), 3u);
  EXPECT_EQ(*remote_events, *local_events);
  EXPECT_EQ((*remote_events)[2].name, "step20");
  EXPECT_EQ((*remote_events)[2].node_id, "algo-1-0");

  EXPECT_FALSE(remote.job_ended());
  ASSERT_VIGIL_OK(s3->write("system/training_job_end.ts", ""));
  EXPECT_TRUE(remote.job_ended());
}

TEST_F(ProfilerS3Test, ErrorsNameTheS3Object) {
  auto s3 = s3_store("jobs/damaged/profiler-output");
  ASSERT_TRUE(s3);
  const std::string rel = "framework/pevents/2020060305/1591160700000000_0-algo-1_pythontimeline.json";
  ASSERT_VIGIL_OK(s3->write(rel, "{not a trace"));
  ProfilerTrial trial(s3);
  auto events = trial.framework_metrics().events(kBase, kBase + 10'000'000);
  ASSERT_FALSE(events);
  EXPECT_NE(events.error().message.find("s3://trials/jobs/damaged/profiler-output/" + rel), std::string::npos)
      << events.error().message;
  EXPECT_EQ(events.error().message.find("S3RVER"), std::string::npos);  // never the credentials

  // A listing that keeps failing is the query's error, not an empty trial.
  server_->set_faults(json::array({{{"match", "damaged"}, {"method", "GET"}, {"times", 100}, {"action", "status"},
                                    {"status", 500}, {"code", "InternalError"}}}));
  auto first = trial.first_timestamp_us();
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message.find("s3://trials/jobs/damaged/profiler-output"), std::string::npos)
      << first.error().message;
}

TEST_F(ProfilerS3Test, FolderExistsIsOneListing) {
  auto s3 = s3_store("jobs/beside");
  ASSERT_TRUE(s3);
  for (int i = 0; i < 3; ++i)
    ASSERT_VIGIL_OK(s3->write("profiler-output/system/incremental/x/159116069" + std::to_string(i) + ".algo-1.json", ""));
  const auto before = storage::s3_stats(*s3)->list_requests;
  auto exists = s3->folder_exists("profiler-output");
  ASSERT_VIGIL_OK(exists);
  EXPECT_TRUE(*exists);
  EXPECT_EQ(storage::s3_stats(*s3)->list_requests, before + 1);
  auto other = s3->folder_exists("profiler-out");  // a prefix of the name is not the folder
  ASSERT_VIGIL_OK(other);
  EXPECT_FALSE(*other);
}

}  // namespace
}  // namespace vigil::profiler
