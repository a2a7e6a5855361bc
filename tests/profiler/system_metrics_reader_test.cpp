#include "profiler/system_metrics_reader.h"

#include <gtest/gtest.h>

#include <fstream>

#include "profiler/file_selection.h"
#include "profiler/framework_metrics_reader.h"
#include "profiler/profiler_trial.h"
#include "profiler/system_metrics_writer.h"
#include "profiler/trace_event_writer.h"
#include "storage/object_store.h"
#include "test_support.h"

namespace vigil::profiler {
namespace {

using test::ScratchDir;
namespace fs = std::filesystem;

constexpr std::string_view kSpecLine =
    R"({"Type": "cpu", "Name":"cpu0", "Dimension": "CPUUtilization", "Value":4.76,"NodeId":"algo-1","Timestamp":1591160699.4570894})";

void write_text(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string sample(std::string_view type, std::string_view name, double value, double timestamp) {
  return fmt::format(R"({{"Type": "{}", "Name": "{}", "Dimension": "Utilization", "Value": {}, "NodeId": "algo-1", "Timestamp": {:.6f}}})",
                     type, name, value, timestamp) + "\n";
}

// The profiler readers read a local folder through its ObjectStore, as an S3 prefix is read.
std::shared_ptr<const storage::ObjectStore> local_store(const fs::path& folder) {
  auto store = storage::open_object_store(folder.string());
  EXPECT_TRUE(store) << store.error().message;
  return store ? *store : nullptr;
}

std::vector<int64_t> stamps(std::span<const TimedFile> files) {
  std::vector<int64_t> out;
  for (const auto& f : files) out.push_back(f.timestamp_us);
  return out;
}

TEST(SystemMetrics, SpecLineParses) {
  auto metrics = parse_system_metrics(std::string(kSpecLine) + "\n", "f.json");
  ASSERT_VIGIL_OK(metrics);
  ASSERT_EQ(metrics->size(), 1u);
  const SystemMetric& m = (*metrics)[0];
  EXPECT_EQ(m.type, "cpu");
  EXPECT_EQ(m.name, "cpu0");
  EXPECT_EQ(m.dimension, "CPUUtilization");
  EXPECT_DOUBLE_EQ(m.value, 4.76);
  EXPECT_EQ(m.node_id, "algo-1");
  EXPECT_DOUBLE_EQ(m.timestamp_s, 1591160699.4570894);
  EXPECT_NEAR(double(m.timestamp_ns()), 1591160699457089400.0, 1000.0);
  // Name is optional.
  metrics = parse_system_metrics(R"({"Type": "gpu", "Dimension": "GPUUtilization", "Value": 1, "NodeId": "algo-2", "Timestamp": 5})",
                                 "f.json");
  ASSERT_VIGIL_OK(metrics);
  ASSERT_EQ(metrics->size(), 1u);
  EXPECT_EQ((*metrics)[0].name, "");
  EXPECT_EQ((*metrics)[0].value, 1.0);
}

TEST(SystemMetrics, WhatTheMonitorsWriterWritesTheReaderReadsBack) {
  test::ScratchDir dir;
  const std::vector<SystemMetric> rows = {{"cpu", "cpu0", "CPUUtilization", 12.5},
                                          {"memory", "MemoryUsedPercent", "MemoryUsedPercent", 40.25}};
  {
    SystemMetricsWriter writer({.root = dir.path(), .node_id = "algo-1", .file_host = "algo-1"});
    ASSERT_VIGIL_OK(writer.write(1700000000.5, rows));
    ASSERT_VIGIL_OK(writer.write(1700000001.5, std::span(rows).first(1)));
    ASSERT_VIGIL_OK(writer.close());
  }
  SystemMetricsReader reader(local_store(dir.path()));
  auto read = reader.events(1700000000.0, 1700000002.0, TimeUnit::Seconds);
  ASSERT_VIGIL_OK(read);
  auto stamped = [](SystemMetric m, double at) {
    m.node_id = "algo-1";
    m.timestamp_s = at;
    return m;
  };
  EXPECT_EQ(*read, (std::vector<SystemMetric>{stamped(rows[0], 1700000000.5), stamped(rows[1], 1700000000.5),
                                              stamped(rows[0], 1700000001.5)}));
  auto memory = reader.events(1700000000.0, 1700000002.0, TimeUnit::Seconds, std::string("memory"));
  ASSERT_VIGIL_OK(memory);
  EXPECT_EQ(memory->size(), 1u);
}

TEST(SystemMetrics, BadLastLineIsSkippedBadMiddleLineIsAnError) {
  const std::string good = std::string(kSpecLine) + "\n";
  auto metrics = parse_system_metrics(good + good + R"({"Type": "cpu", "Na)", "f.json");
  ASSERT_VIGIL_OK(metrics);
  EXPECT_EQ(metrics->size(), 2u);
  metrics = parse_system_metrics(good + "not json\n", "f.json");  // still the last line
  ASSERT_VIGIL_OK(metrics);
  EXPECT_EQ(metrics->size(), 1u);
  metrics = parse_system_metrics(good + R"({"Type": "cpu"})" + "\n" + good, "dir/1591160699.algo-1.json");
  ASSERT_FALSE(metrics);
  EXPECT_EQ(metrics.error().code, ErrorCode::CorruptData);
  EXPECT_NE(metrics.error().message.find("line 2"), std::string::npos) << metrics.error().message;
  EXPECT_NE(metrics.error().message.find("dir/1591160699.algo-1.json"), std::string::npos);
  metrics = parse_system_metrics("\n" + good, "f.json");  // an empty first line is a bad line
  EXPECT_FALSE(metrics);
}

TEST(SystemMetrics, SystemFileNames) {
  EXPECT_EQ(parse_system_file_timestamp_us("/r/system/incremental/2020060305/1591160699.algo-1.json"), 1591160699000000);
  EXPECT_EQ(parse_system_file_timestamp_us("/r/system/incremental/1591160699.algo-12.json"), 1591160699000000);
  EXPECT_FALSE(parse_system_file_timestamp_us("/r/system/159116069.algo-1.json"));      // no folder below system
  EXPECT_FALSE(parse_system_file_timestamp_us("/r/system/x/159116069.algo-1.json"));    // 9 digits
  EXPECT_FALSE(parse_system_file_timestamp_us("/r/framework/x/1591160699.algo-1.json"));
  EXPECT_FALSE(parse_system_file_timestamp_us("/r/system/x/1591160699.node-1.json"));
  EXPECT_EQ(parse_system_file_timestamp_us("/r/system/x/1591160699.algo-1.json.tmp"), 1591160699000000);  // as re.match
}

TEST(FileSelection, SystemBisectEdges) {
  const std::vector<TimedFile> T{{100, "a"}, {200, "b"}, {300, "c"}};
  using V = std::vector<int64_t>;
  EXPECT_EQ(stamps(select_system_files(T, 150, 250, 0)), (V{100, 200, 300}));  // hi = bisect_left(250) = 2, inclusive
  EXPECT_EQ(stamps(select_system_files(T, 200, 200, 0)), (V{200}));            // bisect_right(200) - 1 = 1
  EXPECT_EQ(stamps(select_system_files(T, 199, 199, 0)), (V{100, 200}));
  EXPECT_EQ(stamps(select_system_files(T, 50, 60, 0)), (V{100}));              // lo clamped to 0
  EXPECT_EQ(stamps(select_system_files(T, 250, 301, 0)), (V{200, 300}));       // hi past the end, clamped
  EXPECT_EQ(stamps(select_system_files(T, 400, 500, 0)), (V{300}));            // after the last: the last
  EXPECT_EQ(stamps(select_system_files(T, 270, 280, 0)), (V{200, 300}));
  EXPECT_EQ(stamps(select_system_files(T, 270, 280, 80)), (V{100, 200, 300}));  // start - B = 190
  EXPECT_EQ(stamps(select_system_files(T, 120, 130, 0)), (V{100, 200}));
  EXPECT_EQ(stamps(select_system_files(T, 120, 130, 71)), (V{100, 200, 300}));  // end + B = 201
  EXPECT_TRUE(select_system_files({}, 0, 1000, 0).empty());
}

TEST(FileSelection, TraceBisectEdges) {
  const std::vector<TimedFile> T{{100, "a"}, {200, "b"}, {300, "c"}};
  using V = std::vector<int64_t>;
  EXPECT_EQ(stamps(select_trace_files(T, 150, 200, 0)), (V{200}));  // lo = bisect_left(150) = 1, hi = 1
  EXPECT_EQ(stamps(select_trace_files(T, 200, 250, 0)), (V{200, 300}));
  EXPECT_EQ(stamps(select_trace_files(T, 201, 250, 0)), (V{300}));
  EXPECT_EQ(stamps(select_trace_files(T, 0, 50, 0)), (V{100}));
  EXPECT_TRUE(select_trace_files(T, 301, 400, 0).empty());  // every file ended before the range
  EXPECT_EQ(stamps(select_trace_files(T, 301, 400, 1)), (V{300}));
  EXPECT_EQ(stamps(select_trace_files(T, 250, 260, 60)), (V{200, 300}));  // start - B = 190
  EXPECT_EQ(stamps(select_trace_files(T, 250, 260, kDefaultSelectionBufferUs)), (V{100, 200, 300}));
}

TEST(SystemMetricsReader, QueriesARangeFollowingTheJob) {
  ScratchDir dir;
  const double t0 = 1591160699.0;
  write_text(dir / "system/incremental/2020060305/1591160699.algo-1.json",
             sample("cpu", "cpu0", 1, t0) + sample("gpu", "gpu0", 2, t0 + 10) + sample("cpu", "cpu0", 3, t0 + 20.5));
  write_text(dir / "system/incremental/1591160759.algo-1.json", sample("cpu", "cpu0", 4, t0 + 60));  // no hour folder
  SystemMetricsReader reader(local_store(dir.path()), 0);
  const int64_t us0 = 1591160699000000;
  auto all = reader.events(us0, us0 + 60'000'000);
  ASSERT_VIGIL_OK(all);
  std::vector<double> values;
  for (const auto& m : *all) values.push_back(m.value);
  EXPECT_EQ(values, (std::vector<double>{1, 2, 3, 4}));  // both ends inclusive
  EXPECT_EQ(reader.files().size(), 2u);
  // QUIRK kept: smdebug's pattern is matched at the start only, so a ".json.tmp" is a system file too.
  write_text(dir / "system/incremental/2020060305/1591160700.algo-1.json.tmp", sample("cpu", "cpu9", 9, t0 + 1));
  auto with_tmp = reader.events(us0, us0 + 1'000'000);
  ASSERT_VIGIL_OK(with_tmp);
  ASSERT_EQ(with_tmp->size(), 2u);
  EXPECT_EQ((*with_tmp)[1].value, 9);
  fs::remove(dir / "system/incremental/2020060305/1591160700.algo-1.json.tmp");

  auto gpu = reader.events(us0, us0 + 60'000'000, std::string("gpu"));
  ASSERT_VIGIL_OK(gpu);
  ASSERT_EQ(gpu->size(), 1u);
  EXPECT_EQ((*gpu)[0].name, "gpu0");

  auto middle = reader.events(t0 + 10, t0 + 20.5, TimeUnit::Seconds);
  ASSERT_VIGIL_OK(middle);
  ASSERT_EQ(middle->size(), 2u);
  EXPECT_EQ((*middle)[1].value, 3);
  middle = reader.events((t0 + 10.000001) * 1000, (t0 + 20.499) * 1000, TimeUnit::Milliseconds);
  ASSERT_VIGIL_OK(middle);
  EXPECT_TRUE(middle->empty());

  // A file that appears later is found by the next query.
  write_text(dir / "system/incremental/2020060305/1591160819.algo-1.json", sample("cpu", "cpu0", 5, t0 + 120));
  auto later = reader.events(us0 + 100'000'000, us0 + 200'000'000);
  ASSERT_VIGIL_OK(later);
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].value, 5);
  EXPECT_EQ(reader.first_timestamp_us(), us0);

  // A damaged middle line of a selected file fails the query, naming the file.
  write_text(dir / "system/incremental/1591160759.algo-1.json", "oops\n" + sample("cpu", "cpu0", 4, t0 + 60));
  auto bad = reader.events(us0, us0 + 60'000'000);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("1591160759.algo-1.json"), std::string::npos);
}

TEST(FrameworkMetricsReader, OverlapQueriesOverWrittenFiles) {
  ScratchDir dir;
  const int64_t base = 1591160699000000;
  int64_t clock = base;
  TraceEventWriter writer({.root = dir.path(), .node_id = "0-algo-1", .rotate_close_interval_s = 10,
                           .start_time_us = base, .now_us = [&] { return clock; }});
  auto step = [&](int64_t s) {
    return TraceRecord{.training_phase = "Step:ModeKeys.TRAIN", .name = "step" + std::to_string(s),
                       .start_us = base + s * 1'000'000, .duration_us = 500'000};
  };
  for (int64_t s : {0, 5, 20, 25}) {
    clock = base + s * 1'000'000;
    ASSERT_VIGIL_OK(writer.write(step(s)));
  }
  ASSERT_VIGIL_OK(writer.close());
  ASSERT_EQ(writer.published().size(), 2u);  // steps 0 and 5, then 20 and 25

  FrameworkMetricsReader reader(local_store(dir.path()), 0);
  auto names = [&](int64_t start_s_us, int64_t end_s_us) {
    std::vector<std::string> out;
    auto events = reader.events(start_s_us, end_s_us);
    EXPECT_TRUE(events) << events.error().message;
    if (events) for (const auto& e : *events) out.push_back(e.name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(base, base + 30'000'000), (V{"step0", "step5", "step20", "step25"}));
  EXPECT_EQ(names(base + 5'500'000, base + 20'000'000), (V{"step5", "step20"}));  // touching ends overlap
  EXPECT_EQ(names(base + 5'500'001, base + 19'999'999), V{});
  EXPECT_EQ(reader.files().size(), 2u);
  EXPECT_EQ(reader.first_timestamp_us(), base + 5'500'000);

  // A live job: a third file appears and the next query reads it.
  TraceEventWriter later({.root = dir.path(), .node_id = "1-algo-1", .start_time_us = base, .now_us = [&] { return clock; }});
  ASSERT_VIGIL_OK(later.write(step(40)));
  ASSERT_VIGIL_OK(later.close());
  auto events = reader.events(base + 40'000'000, base + 41'000'000);
  ASSERT_VIGIL_OK(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].node_id, "algo-1-1");
  EXPECT_EQ((*events)[0].start_us, base + 40'000'000);
  auto seconds = reader.events(1591160739.0, 1591160740.0, TimeUnit::Seconds);
  ASSERT_VIGIL_OK(seconds);
  EXPECT_EQ(seconds->size(), 1u);
}

TEST(ProfilerTrial, FirstTimestampAndEndOfJob) {
  ScratchDir dir;
  auto opened = ProfilerTrial::open(dir.path().string());
  ASSERT_VIGIL_OK(opened);
  ProfilerTrial& trial = *opened;
  EXPECT_EQ(trial.location(), dir.path().string());
  auto first = [&] {
    auto t0 = trial.first_timestamp_us();
    EXPECT_TRUE(t0) << t0.error().message;
    return t0 ? *t0 : std::optional<int64_t>(-1);
  };
  EXPECT_EQ(first(), std::nullopt);
  EXPECT_FALSE(trial.job_ended());
  write_text(dir / "system/incremental/2020060305/1591160759.algo-1.json", sample("cpu", "cpu0", 1, 1591160759.0));
  EXPECT_EQ(first(), 1591160759000000);
  write_text(dir / "framework/pevents/2020060305/1591160700000000_0-algo-1_pythontimeline.json", "[\n]");
  EXPECT_EQ(first(), 1591160700000000);
  write_text(dir / "training_job_end.ts", "");  // the debugger's place, not the profiler's
  EXPECT_FALSE(trial.job_ended());
  write_text(dir / "framework/training_job_end.ts", "");
  EXPECT_TRUE(trial.job_ended());
  fs::remove(dir / "framework/training_job_end.ts");
  write_text(dir / "system/training_job_end.ts", "");
  EXPECT_TRUE(training_job_ended(*local_store(dir.path())));
}

TEST(ProfilerTrial, AMissingFolderIsAnErrorNamingIt) {
  ScratchDir dir;
  const std::string missing = (dir / "no-profiler-output").string();
  auto trial = ProfilerTrial::open(missing);
  ASSERT_FALSE(trial);
  EXPECT_NE(trial.error().message.find(missing), std::string::npos) << trial.error().message;
  auto reader = SystemMetricsReader::open(missing);
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().message.find(missing), std::string::npos) << reader.error().message;
}

TEST(FileSelection, ListsOnlyTheNamedFilesOfEachKindByRelpath) {
  ScratchDir dir;
  write_text(dir / "system/incremental/2020060305/1591160759.algo-1.json", "");
  write_text(dir / "system/incremental/2020060305/1591160699.algo-2.json", "");
  write_text(dir / "system/incremental/2020060305/notes.txt", "");
  write_text(dir / "system/1591160699.algo-1.json", "");  // no folder below system/
  write_text(dir / "framework/pevents/2020060305/1591160700000000_0-algo-1_pythontimeline.json", "[]");
  write_text(dir / "framework/pevents/2020060305/1591160600000000_0-algo-1.json", "[]");  // two fields only
  write_text(dir / "framework/0-algo-1_pythontimeline.json.tmp", "[]");
  write_text(dir / "other/pevents/1591160500000000_0-algo-1_pythontimeline.json", "[]");  // not under framework/
  auto store = local_store(dir.path());
  auto system = list_system_files(*store);
  ASSERT_VIGIL_OK(system);
  EXPECT_EQ(*system, (std::vector<TimedFile>{
                         {1591160699000000, "system/incremental/2020060305/1591160699.algo-2.json"},
                         {1591160759000000, "system/incremental/2020060305/1591160759.algo-1.json"}}));
  auto traces = list_trace_files(*store);
  ASSERT_VIGIL_OK(traces);
  EXPECT_EQ(*traces, (std::vector<TimedFile>{
                         {1591160700000000, "framework/pevents/2020060305/1591160700000000_0-algo-1_pythontimeline.json"}}));
}

TEST(FrameworkMetricsReader, ReadsOneListedFileNamingItInErrors) {
  ScratchDir dir;
  const std::string rel = "framework/pevents/2020060305/1591160700000000_0-algo-1_pythontimeline.json";
  write_text(dir / rel, R"([{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1591160699000000, "name": "Step:ModeKeys.TRAIN"}},
{"name": "step0", "pid": 0, "ph": "X", "ts": 10, "dur": 5}])");
  FrameworkMetricsReader reader(local_store(dir.path()));
  auto events = reader.read_file(rel);
  ASSERT_VIGIL_OK(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].name, "step0");
  EXPECT_EQ((*events)[0].node_id, "algo-1-0");  // from the file's name
  write_text(dir / rel, "{not json");
  auto bad = reader.read_file(rel);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find((dir / rel).string()), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace vigil::profiler
