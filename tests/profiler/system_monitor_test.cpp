// The system metrics files: names, lines, rotation, publication; the monitor thread on this
// machine and on a fixed /proc tree; node names.
#include "profiler/system_monitor.h"

#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "profiler/node_id.h"
#include "test_support.h"

namespace vigil::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The readers' pattern (format spec §8.6) plus the hour folder.
const std::regex kSystemFile(R"(system/incremental/(\d{10})/(\d{10})\.algo-\d+\.json)");

std::vector<std::string> system_files(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& rel : test::list_files(root))
    if (rel.starts_with("system/incremental/")) out.push_back(rel);
  return out;
}

std::vector<json> read_lines(const fs::path& path) {
  std::vector<json> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto row = json::parse(line, nullptr, false);
    EXPECT_FALSE(row.is_discarded()) << path << ": " << line;
    rows.push_back(row);
  }
  return rows;
}

void expect_well_formed(const json& row) {
  ASSERT_TRUE(row.is_object());
  std::vector<std::string> keys;
  for (auto it = row.begin(); it != row.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys.size(), 6u) << row.dump();
  for (const char* k : {"Type", "Name", "Dimension", "NodeId"}) EXPECT_TRUE(row[k].is_string()) << k << row.dump();
  EXPECT_TRUE(row["Value"].is_number()) << row.dump();
  EXPECT_TRUE(row["Timestamp"].is_number_float()) << row.dump();
}

TEST(SystemMetricsFile, LineAndPath) {
  EXPECT_EQ(system_metric_line({"cpu", "cpu0", "CPUUtilization", 4.76}, "algo-1", 1591160699.4570894),
            R"({"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,"NodeId":"algo-1","Timestamp":1591160699.4570894})"
            "\n");
  EXPECT_EQ(system_metrics_file_path(1591160699, "algo-2"), fs::path("system/incremental/2020060305/1591160699.algo-2.json"));
  EXPECT_EQ(system_metrics_file_path(1700000000, "algo-1"), fs::path("system/incremental/2023111422/1700000000.algo-1.json"));
}

TEST(SystemMetricsFile, PublishedOnlyWhenFinished) {
  test::ScratchDir dir;
  SystemMetricsWriter writer({dir.path(), "algo-1", "algo-1", 1 << 20, 60});
  const SystemMetric row{"memory", "MemoryUsedPercent", "MemoryUsedPercent", 50};
  ASSERT_VIGIL_OK(writer.write(1700000000.25, std::span(&row, 1)));
  ASSERT_VIGIL_OK(writer.write(1700000000.75, std::span(&row, 1)));
  EXPECT_TRUE(system_files(dir.path()).empty());  // still being written, under a name readers skip
  ASSERT_VIGIL_OK(writer.close());
  const auto files = system_files(dir.path());
  ASSERT_EQ(files, std::vector<std::string>{"system/incremental/2023111422/1700000000.algo-1.json"});
  EXPECT_EQ(read_lines(dir / files[0]).size(), 2u);
  // Nothing else is left behind (the temporary file was renamed).
  EXPECT_EQ(test::list_files(dir.path()).size(), 1u);
}

TEST(SystemMetricsFile, RotatesBySizeAndByAgeNeverReusingAName) {
  test::ScratchDir dir;
  const SystemMetric row{"cpu", "cpu0", "CPUUtilization", 1};
  const size_t line = system_metric_line(row, "n", 1700000000.5).size();
  SystemMetricsWriter writer({dir.path(), "n", "algo-1", 3 * line, 10});
  // Size: three lines fill a file, but a file is only rotated in a later second than its name.
  for (int i = 0; i < 8; ++i) ASSERT_VIGIL_OK(writer.write(1700000000.5 + i * 0.05, std::span(&row, 1)));
  ASSERT_VIGIL_OK(writer.write(1700000001.5, std::span(&row, 1)));  // rotates: 8 lines in the first file
  for (int i = 0; i < 2; ++i) ASSERT_VIGIL_OK(writer.write(1700000001.6 + i * 0.1, std::span(&row, 1)));
  ASSERT_VIGIL_OK(writer.write(1700000002.0, std::span(&row, 1)));  // rotates: 3 lines
  // Age: the third file holds one line; 10 s later the next sample opens another.
  ASSERT_VIGIL_OK(writer.write(1700000012.0, std::span(&row, 1)));
  ASSERT_VIGIL_OK(writer.close());
  EXPECT_EQ(writer.files_published(), 4u);
  const auto files = system_files(dir.path());
  ASSERT_EQ(files.size(), 4u);
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"1700000000", 8}, {"1700000001", 3}, {"1700000002", 1}, {"1700000012", 1}};
  for (size_t i = 0; i < files.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(files[i], m, kSystemFile)) << files[i];
    EXPECT_EQ(m[2].str(), expected[i].first);
    EXPECT_EQ(read_lines(dir / files[i]).size(), expected[i].second) << files[i];
  }
}

TEST(SystemMetricsFile, UnwritableRootIsAnError) {
  test::ScratchDir dir;
  { std::ofstream(dir / "file") << "x"; }
  SystemMetricsWriter writer({dir / "file", "n", "algo-1", 1024, 60});
  const SystemMetric row{"cpu", "cpu0", "CPUUtilization", 1};
  EXPECT_FALSE(writer.write(1700000000, std::span(&row, 1)));
}

TEST(NodeId, SpecRules) {
  EXPECT_EQ(framework_node_id(0, std::string("algo-1"), "ignored"), "0-algo-1");
  EXPECT_EQ(framework_node_id(1234, std::nullopt, "ip_10_0_0_1"), "1234-ip-10-0-0-1");
  EXPECT_EQ(framework_node_id(2, std::string("algo_2"), "x"), "2-algo-2");
  auto inside = system_node_names(std::string("algo-3"), "host");
  EXPECT_EQ(inside.node_id, "algo-3");
  EXPECT_EQ(inside.file_host, "algo-3");
  auto outside = system_node_names(std::nullopt, "my_box");
  EXPECT_EQ(outside.node_id, "my-box");
  EXPECT_EQ(outside.file_host, "algo-1");
}

TEST(NodeId, ResourceConfig) {
  test::ScratchDir dir;
  auto absent = current_host_from_resource_config(dir / "none.json");
  ASSERT_VIGIL_OK(absent);
  EXPECT_FALSE(*absent);
  { std::ofstream(dir / "rc.json") << R"({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]})"; }
  auto host = current_host_from_resource_config(dir / "rc.json");
  ASSERT_VIGIL_OK(host);
  EXPECT_EQ(*host, std::optional<std::string>("algo-2"));
  { std::ofstream(dir / "bad.json") << R"({"hosts": []})"; }
  EXPECT_FALSE(current_host_from_resource_config(dir / "bad.json"));
}

TEST(SystemMonitor, OptionsFromTheConfig) {
  auto config = parse_profiler_config(R"({"ProfilingParameters": {"LocalPath": "/P", "ProfilingIntervalInMilliseconds": 100,
      "RotateMaxFileSizeInBytes": 99, "RotateFileCloseIntervalInSeconds": 7}})");
  ASSERT_VIGIL_OK(config);
  const auto options = system_monitor_options(*config);
  EXPECT_EQ(options.root, fs::path("/P"));
  EXPECT_EQ(options.interval, std::chrono::milliseconds(100));
  EXPECT_EQ(options.rotate_max_file_size_bytes, 99u);
  EXPECT_DOUBLE_EQ(options.rotate_file_close_interval_s, 7);
}

// A second of sampling this machine at 100 ms: at least one well-formed file with per-core CPU
// and memory rows.
TEST(SystemMonitor, SamplesThisMachine) {
  test::ScratchDir dir;
  std::vector<std::string> logs;
  std::mutex logs_mutex;
  SystemMonitorOptions options;
  options.root = dir.path();
  options.interval = std::chrono::milliseconds(100);
  options.resource_config = dir / "no-resourceconfig.json";
  options.on_log = [&](const std::string& m) {
    std::lock_guard lock(logs_mutex);
    logs.push_back(m);
  };
  SystemMonitor monitor(options);
  const size_t threads_before = test::threads_named("vigil-monitor");
  ASSERT_TRUE(monitor.start());
  EXPECT_FALSE(monitor.start());  // once only
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(test::threads_named("vigil-monitor"), threads_before + 1);
  monitor.stop();
  EXPECT_EQ(test::threads_named("vigil-monitor"), threads_before);  // joined
  monitor.stop();
  EXPECT_FALSE(monitor.stepped_aside());
  EXPECT_GE(monitor.samples_written(), 5u);
  const auto files = system_files(dir.path());
  ASSERT_FALSE(files.empty());
  std::set<std::string> dimensions;
  size_t rows = 0;
  const auto expected_node = system_node_names(std::nullopt, local_hostname()).node_id;
  for (const auto& f : files) {
    ASSERT_TRUE(std::regex_match(f, kSystemFile)) << f;
    for (const auto& row : read_lines(dir / f)) {
      expect_well_formed(row);
      dimensions.insert(row["Type"].get<std::string>() + "/" + row["Dimension"].get<std::string>());
      EXPECT_EQ(row["NodeId"], expected_node);
      EXPECT_GE(row["Value"].get<double>(), 0);
      ++rows;
    }
  }
  EXPECT_GT(rows, 0u);
  for (const char* d : {"cpu/CPUUtilization", "cpu/I/OWaitPercentage", "cpu/TotalCPUUtilization",
                        "memory/MemoryUsedPercent", "network/ReceiveBytesPerSecond"})
    EXPECT_TRUE(dimensions.count(d)) << d;
  // Without a GPU, NVML is absent and said so once; with one, there are GPU rows.
  const bool gpu_rows = dimensions.count("gpu/GPUUtilization") > 0;
  const auto nvml_logs = std::count_if(logs.begin(), logs.end(), [](const std::string& m) { return m.starts_with("no GPU metrics"); });
  EXPECT_EQ(nvml_logs, gpu_rows ? 0 : 1);
  for (const auto& m : logs) EXPECT_TRUE(m.starts_with("no GPU metrics")) << m;
}

// A fixed /proc tree whose files the test changes; a broken source is logged once and dropped
// while the others go on.
TEST(SystemMonitor, BrokenSourceIsDroppedOthersGoOn) {
  test::ScratchDir dir;
  const fs::path proc = dir / "proc";
  fs::create_directories(proc / "net");
  { std::ofstream(proc / "stat") << "cpu 1 0 1 8 0 0 0 0\ncpu0 1 0 1 8 0 0 0 0\n"; }
  { std::ofstream(proc / "meminfo") << "MemTotal: 100 kB\nMemAvailable: 40 kB\n"; }
  { std::ofstream(proc / "diskstats") << "this is not diskstats\n"; }
  // no net/dev at all
  std::vector<std::string> logs;
  std::mutex logs_mutex;
  SystemMonitorOptions options;
  options.root = dir / "out";
  options.interval = std::chrono::milliseconds(100);
  options.proc_root = proc;
  options.sys_block = dir / "no-sys-block";
  options.nvml_library = (dir / "libnvidia-ml-absent.so.1").string();
  options.node_id = "algo-7";
  options.file_host = "algo-7";
  options.on_log = [&](const std::string& m) {
    std::lock_guard lock(logs_mutex);
    logs.push_back(m);
  };
  {
    SystemMonitor monitor(options);
    ASSERT_TRUE(monitor.start());
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }  // the destructor stops and publishes
  std::lock_guard lock(logs_mutex);
  ASSERT_EQ(logs.size(), 3u) << ::testing::PrintToString(logs);
  EXPECT_TRUE(logs[0].starts_with("no GPU metrics: cannot load ")) << logs[0];
  EXPECT_NE(logs[1].find("diskstats"), std::string::npos) << logs[1];
  EXPECT_NE(logs[2].find("net/dev"), std::string::npos) << logs[2];
  const auto files = system_files(options.root);
  ASSERT_FALSE(files.empty());
  size_t memory_rows = 0;
  for (const auto& f : files) {
    EXPECT_TRUE(f.ends_with(".algo-7.json")) << f;
    for (const auto& row : read_lines(options.root / f)) {
      expect_well_formed(row);
      EXPECT_EQ(row["NodeId"], "algo-7");
      EXPECT_NE(row["Type"], "disk");
      EXPECT_NE(row["Type"], "network");
      if (row["Name"] == "MemoryUsedPercent") {
        EXPECT_DOUBLE_EQ(row["Value"].get<double>(), 60.0);
        ++memory_rows;
      }
    }
  }
  EXPECT_GE(memory_rows, 3u);
}

// An unwritable root: logged once, the monitor steps aside, nothing thrown.
TEST(SystemMonitor, StepsAsideWhenItCannotWrite) {
  test::ScratchDir dir;
  { std::ofstream(dir / "file") << "x"; }
  std::atomic<int> logs{0};
  SystemMonitorOptions options;
  options.root = dir / "file";
  options.interval = std::chrono::milliseconds(100);
  options.nvml_library.clear();
  options.on_log = [&](const std::string&) {
    ++logs;
    throw std::runtime_error("a logger that throws");
  };
  SystemMonitor monitor(options);
  ASSERT_TRUE(monitor.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(monitor.stepped_aside());
  monitor.stop();
  EXPECT_EQ(logs.load(), 1);
  EXPECT_EQ(monitor.samples_written(), 0u);
}

}  // namespace
}  // namespace vigil::profiler
