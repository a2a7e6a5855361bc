// The "profiler" family (builtin-rules §1.4, §3): each rule's engine driven with synthetic system
// samples and trace events cut into windows as the host cuts them (samples inclusive at both ends,
// events by overlap), ProfilerReport's engine and files, parameter checks, and the plugin's
// descriptors through the real loader.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engines.h"
#include "report.h"
#include "statistics.h"
#include "test_support.h"

namespace vigil {
namespace {

using namespace profiler_rules;
using test::ScratchDir;
namespace fs = std::filesystem;

constexpr int64_t kT0 = 1'600'000'000'000'000;  // µs
constexpr int64_t kMinute = 60'000'000;

sdk::TimeWindow window(int64_t k, int64_t s = kMinute) { return {k, kT0 + k * s, kT0 + (k + 1) * s, kT0}; }
double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

// N snapshots, `dt` seconds apart from `start` (seconds since T0): per snapshot i, one sample per
// core, per GPU (utilisation and memory), memory and I/O wait, each where its function is given.
struct Snapshots {
  int n = 0;
  double start = 0, dt = 0.5;
  std::string node = "algo-1";
  int cores = 4, gpus = 1;
  std::function<double(int i, int core)> cpu;
  std::function<double(int i, int gpu)> gpu, gpu_memory;
  std::function<double(int i)> io, memory;
};

std::vector<sdk::SystemMetric> make(const Snapshots& s) {
  std::vector<sdk::SystemMetric> out;
  for (int i = 0; i < s.n; ++i) {
    const double ts = seconds(kT0) + s.start + i * s.dt;
    if (s.cpu)
      for (int c = 0; c < s.cores; ++c)
        out.push_back({"cpu", "cpu" + std::to_string(c), "CPUUtilization", s.node, s.cpu(i, c), ts});
    if (s.gpu)
      for (int g = 0; g < s.gpus; ++g)
        out.push_back({"gpu", "gpu" + std::to_string(g), "GPUUtilization", s.node, s.gpu(i, g), ts});
    if (s.gpu_memory)
      for (int g = 0; g < s.gpus; ++g)
        out.push_back({"gpu", "gpu" + std::to_string(g), "GPUMemoryUtilization", s.node, s.gpu_memory(i, g), ts});
    if (s.io) out.push_back({"cpu", "", "I/OWaitPercentage", s.node, s.io(i), ts});
    if (s.memory) out.push_back({"memory", "MemoryUsedPercent", "Memory", s.node, s.memory(i), ts});
  }
  return out;
}

auto constant(double v) { return [v](int, int) { return v; }; }
auto constant1(double v) { return [v](int) { return v; }; }

sdk::FrameworkEvent step_event(int64_t step, int64_t start_us, int64_t dur_us, std::string node = "algo-1",
                               std::string name = "Step:ModeKeys.TRAIN") {
  return {name, "Step:ModeKeys.TRAIN", node, "{\"step_num\": " + std::to_string(step) + "}", start_us,
          start_us + dur_us, 1, 0};
}

sdk::FrameworkEvent loader_event(int64_t pid, int64_t start_us, int64_t dur_us = 1000) {
  return {"DataLoaderIter.__next__", "DataLoaderIter", "algo-1", "{\"pid\": " + std::to_string(pid) + "}", start_us,
          start_us + dur_us, pid, 0};
}

// The data of window `w` as the host gives it (builtin-rules §1.4).
sdk::ProfilerEvents cut(const std::vector<sdk::SystemMetric>& system, const std::vector<sdk::FrameworkEvent>& fw,
                        const sdk::TimeWindow& w) {
  sdk::ProfilerEvents out;
  for (const auto& m : system) {
    const auto ts = std::llround(m.timestamp_s * 1e6);
    if (w.start_us <= ts && ts <= w.end_us) out.system.push_back(m);
  }
  for (const auto& e : fw)
    if (e.end_us >= w.start_us && e.start_us <= w.end_us) out.framework.push_back(e);
  return out;
}

// Runs `windows` windows over the data; the verdict of each.
std::vector<bool> run(Engine& e, const std::vector<sdk::SystemMetric>& system,
                      const std::vector<sdk::FrameworkEvent>& fw, int windows, int64_t s = kMinute) {
  std::vector<bool> out;
  for (int k = 0; k < windows; ++k) out.push_back(e.invoke(window(k, s), cut(system, fw, window(k, s))));
  return out;
}
bool run1(Engine& e, const std::vector<sdk::SystemMetric>& system, const std::vector<sdk::FrameworkEvent>& fw = {}) {
  return e.invoke(window(0, 3600 * int64_t{1'000'000}), cut(system, fw, window(0, 3600 * int64_t{1'000'000})));
}

template <class V>
std::vector<V> concat(std::vector<V> a, const std::vector<V>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- shared statistics ----------------------------------------------------------------------------

TEST(ProfilerStatistics, NumpyQuantilesHistogramBinsAndJensenShannon) {
  EXPECT_DOUBLE_EQ(builtin::quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(builtin::quantile({1, 2, 3, 4, 5}, 0.95), 4.8);
  const std::vector<double> edges = {0, 2, 4};
  EXPECT_EQ(builtin::histogram_bin(edges, 0), 0);
  EXPECT_EQ(builtin::histogram_bin(edges, 2), 1);  // half-open bins
  EXPECT_EQ(builtin::histogram_bin(edges, 4), 1);  // the last bin is closed
  EXPECT_EQ(builtin::histogram_bin(edges, 4.5), -1);
  EXPECT_EQ(builtin::histogram_bin(edges, -0.1), -1);
  const std::vector<double> p = {1, 0}, q = {0, 1}, r = {2, 0};
  EXPECT_NEAR(builtin::jensen_shannon_distance(p, q), std::sqrt(std::log(2.0)), 1e-12);
  EXPECT_NEAR(builtin::jensen_shannon_distance(p, r), 0.0, 1e-12);  // normalised first
  EXPECT_TRUE(std::isinf(builtin::relative_entropy(p, q)));
  const auto b = builtin::box_statistics({1, 2, 3, 4, 100});
  EXPECT_DOUBLE_EQ(b.p25, 2);
  EXPECT_DOUBLE_EQ(b.p75, 4);
  EXPECT_DOUBLE_EQ(b.upper, 7);  // min(p75 + 1.5 IQR, max)
  EXPECT_DOUBLE_EQ(b.lower, 1);  // max(p25 - 1.5 IQR, min)
}

// ---- parameters (builtin-rules §4) ----------------------------------------------------------------

TEST(ProfilerParams, PercentilesPositiveValuesAndIntegersAreChecked) {
  const auto parse = [](std::span<const sdk::ParamSpec> specs, TextParams given) {
    return ParamValues::parse("R", specs, given);
  };
  EXPECT_VIGIL_OK(parse(CpuBottleneck::kParams, {{"threshold", "100"}, {"gpu_threshold", "0"}}));
  auto bad = parse(CpuBottleneck::kParams, {{"threshold", "100.5"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_NE(bad.error().message.find("R threshold must be a valid percentile!"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse(LowGpuUtilization::kParams, {{"threshold_p5", "-1"}}));
  // validate_positive_integer: > 0, for doubles too.
  auto zero = parse(GpuMemoryIncrease::kParams, {{"increase", "0"}});
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message.find("R increase must be a positive integer!"), std::string::npos);
  EXPECT_VIGIL_OK(parse(GpuMemoryIncrease::kParams, {{"increase", "0.5"}}));
  EXPECT_FALSE(parse(CpuBottleneck::kParams, {{"patience", "0"}}));
  EXPECT_FALSE(parse(CpuBottleneck::kParams, {{"patience", "1.5"}}));
  EXPECT_FALSE(parse(CpuBottleneck::kParams, {{"patience", "abc"}}));
  EXPECT_FALSE(parse(StepOutlier::kParams, {{"stddev", "-3"}}));
  EXPECT_FALSE(parse(Dataloader::kParams, {{"min_threshold", "0"}}));
  EXPECT_FALSE(parse(MaxInitializationTime::kParams, {{"threshold", "0"}}));
  auto unknown = parse(CpuBottleneck::kParams, {{"io_threshold", "5"}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("io_threshold is an invalid parameter name!"), std::string::npos);
  // scan_interval_us is a double: both spellings parse.
  auto a = parse(CpuBottleneck::kParams, {{"scan_interval_us", "6e7"}});
  auto b = parse(CpuBottleneck::kParams, {{"scan_interval_us", "60000000"}});
  ASSERT_VIGIL_OK(a);
  ASSERT_VIGIL_OK(b);
  EXPECT_EQ(a->number("scan_interval_us"), b->number("scan_interval_us"));
  // Defaults fill in, in declaration order, as RuleParameters text.
  auto d = parse(StepOutlier::kParams, {{"stddev", "4"}});
  ASSERT_VIGIL_OK(d);
  EXPECT_EQ(d->parameters_text(), "stddev:4\nmode:None\nn_outliers:10\nscan_interval_us:60000000");
  EXPECT_EQ(StepOutlier::config(*d).stddev, 4);
  EXPECT_FALSE(StepOutlier::config(*d).mode.has_value());
}

// ---- CPUBottleneck / IOBottleneck (§3.1, §3.2) -----------------------------------------------------

TEST(CPUBottleneck, FiresWhenMostSnapshotsHaveIdleGpusAndBusyCores) {
  CpuBottleneck e;
  const auto data = make({.n = 1100, .cpu = constant(95), .gpu = constant(5)});
  EXPECT_TRUE(run1(e, data));
  EXPECT_EQ(e.datapoints(), 1100);
  EXPECT_EQ(e.violations(), 1100);
  EXPECT_EQ(e.triggered(), 1);
  EXPECT_EQ(e.details()["low_gpu_utilization"], 1100);
  EXPECT_EQ(e.evidence()["threshold"], 50.0);
  EXPECT_DOUBLE_EQ(e.evidence()["observed"].get<double>(), 100.0);
}

TEST(CPUBottleneck, BusyGpusOrIdleCoresAreNoBottleneck) {
  CpuBottleneck busy_gpu, idle_cpu;
  EXPECT_FALSE(run1(busy_gpu, make({.n = 1100, .cpu = constant(95), .gpu = constant(50)})));
  EXPECT_EQ(busy_gpu.violations(), 0);
  EXPECT_FALSE(busy_gpu.not_judged_reason().has_value());
  EXPECT_FALSE(run1(idle_cpu, make({.n = 1100, .cpu = constant(90), .gpu = constant(5)})));  // 90 is not > 90
  EXPECT_EQ(idle_cpu.violations(), 0);
}

TEST(CPUBottleneck, PatienceAndThresholdAreStrict) {
  CpuBottleneck e;
  EXPECT_FALSE(run1(e, make({.n = 1000, .cpu = constant(95), .gpu = constant(5)})));  // 1000 is not > 1000
  ASSERT_TRUE(e.not_judged_reason().has_value());
  EXPECT_FALSE(e.ever_judged());
  // Half of 20 snapshots are bottlenecks: 50 % is not > 50 %, but is > 49 %.
  const auto half = make({.n = 20, .cpu = constant(95), .gpu = [](int i, int) { return i % 2 ? 50.0 : 5.0; }});
  CpuBottleneck at({.threshold = 50, .patience = 1});
  EXPECT_FALSE(run1(at, half));
  EXPECT_EQ(at.violations(), 10);
  CpuBottleneck below({.threshold = 49, .patience = 1});
  EXPECT_TRUE(run1(below, half));
}

TEST(CPUBottleneck, IsNotStickyAndCountsCumulatively) {
  CpuBottleneck e({.patience = 10});
  // Window 0: 30 bottleneck snapshots; window 1: 70 healthy ones -> 30 % of 100.
  const auto data = concat(make({.n = 30, .start = 1, .dt = 1, .cpu = constant(95), .gpu = constant(5)}),
                           make({.n = 70, .start = 61, .dt = 0.5, .cpu = constant(95), .gpu = constant(80)}));
  const auto verdicts = run(e, data, {}, 2);
  EXPECT_EQ(verdicts, (std::vector<bool>{true, false}));
  EXPECT_EQ(e.datapoints(), 100);
  EXPECT_EQ(e.violations(), 30);
  EXPECT_EQ(e.triggered(), 1);
}

TEST(CPUBottleneck, WithoutGpuSamplesItCannotJudge) {
  CpuBottleneck e;
  EXPECT_FALSE(run1(e, make({.n = 2000, .cpu = constant(95)})));
  ASSERT_TRUE(e.not_judged_reason().has_value());
  EXPECT_NE(e.not_judged_reason()->find("GPU"), std::string::npos);
  EXPECT_TRUE(e.summary().no_data_reason.has_value());
}

TEST(CPUBottleneck, AggregatesTheFrameworkEventsAroundBottlenecks) {
  CpuBottleneck e({.patience = 1});
  const auto data = make({.n = 10, .dt = 1, .cpu = constant(95), .gpu = constant(5)});
  // An operator on a GPU phase spanning the snapshots, and one that contains none of them.
  std::vector<sdk::FrameworkEvent> fw = {
      {"conv", "gpu_functions", "algo-1", "{}", kT0 - 500'000, kT0 + 20'000'000, 1, 0},
      {"late", "cpu_functions", "algo-1", "{}", kT0 + 30'000'000, kT0 + 31'000'000, 1, 0}};
  EXPECT_TRUE(run1(e, data, fw));
  EXPECT_DOUBLE_EQ(e.details()["GPU_total"].get<double>(), 10 * 20'500'000.0);  // once per bottleneck snapshot
  EXPECT_DOUBLE_EQ(e.details()["CPU_total"].get<double>(), 0.0);
}

TEST(IOBottleneck, FiresOnIdleGpusWithHighIoWaitOnly) {
  IoBottleneck fires, quiet;
  EXPECT_TRUE(run1(fires, make({.n = 1100, .gpu = constant(5), .io = constant1(80)})));
  EXPECT_EQ(fires.violations(), 1100);
  EXPECT_FALSE(run1(quiet, make({.n = 1100, .gpu = constant(5), .io = constant1(50)})));  // 50 is not > 50
  EXPECT_EQ(quiet.violations(), 0);
}

// ---- LowGPUUtilization (§3.3) ----------------------------------------------------------------------

TEST(LowGPUUtilization, FiresOnAnUnderUsedGpuAndStaysTriggered) {
  LowGpuUtilization e;
  const auto data = make({.n = 1001, .dt = 0.05, .gpu = constant(20)});
  const auto verdicts = run(e, data, {}, 2);
  EXPECT_EQ(verdicts, (std::vector<bool>{true, true}));  // sticky; and judged again in window 1
  EXPECT_EQ(e.violations(), 2);
  EXPECT_EQ(e.details()["algo-1"]["gpu0"]["gpu_95"], 20.0);
  EXPECT_EQ(e.evidence()["violations"][0]["kind"], "under-utilised");
}

TEST(LowGPUUtilization, FluctuatingUseFiresAndP95AtTheThresholdIsNeither) {
  LowGpuUtilization fluct({.window = 100, .patience = 10});
  EXPECT_TRUE(run1(fluct, make({.n = 200, .gpu = [](int i, int) { return i % 2 ? 100.0 : 0.0; }})));
  EXPECT_EQ(fluct.evidence()["violations"][0]["kind"], "fluctuating");
  LowGpuUtilization at({.patience = 10});
  EXPECT_FALSE(run1(at, make({.n = 200, .gpu = [](int i, int) { return i % 2 ? 70.0 : 0.0; }})));
  EXPECT_EQ(at.violations(), 0);
  LowGpuUtilization healthy({.patience = 10});
  EXPECT_FALSE(run1(healthy, make({.n = 200, .gpu = constant(90)})));
  EXPECT_TRUE(healthy.ever_judged());
}

TEST(LowGPUUtilization, JudgesOnlyTheLatestWindowAfterPatience) {
  LowGpuUtilization e({.patience = 1000});
  EXPECT_FALSE(run1(e, make({.n = 1000, .gpu = constant(5)})));
  EXPECT_TRUE(e.not_judged_reason().has_value());
  // 600 idle samples then 500 busy ones: the latest 500 are busy.
  LowGpuUtilization w({.window = 500, .patience = 1000});
  EXPECT_FALSE(run1(w, make({.n = 1100, .gpu = [](int i, int) { return i < 600 ? 0.0 : 90.0; }})));
  EXPECT_EQ(w.datapoints(), 1100);
}

// ---- GPUMemoryIncrease (§3.4) ----------------------------------------------------------------------

TEST(GPUMemoryIncrease, ComparesTheLastWindowWithTheWindowMinusOneSliceBeforeIt) {
  // window 2, values 0, 0, 10, 16: mean(10, 16) - mean(v[-3:-2] = [0]) = 13. (The window before the
  // last, [0, 10], would give 8.)
  GpuMemoryIncrease e({.increase = 10, .patience = 1, .window = 2});
  const std::vector<double> v = {0, 0, 10, 16};
  EXPECT_TRUE(run1(e, make({.n = 4, .gpu_memory = [&](int i, int) { return v[static_cast<size_t>(i)]; }})));
  EXPECT_EQ(e.violations(), 1);
  EXPECT_DOUBLE_EQ(e.details()["algo-1"]["gpu0"]["increase"].get<double>(), 13.0);
  EXPECT_DOUBLE_EQ(e.details()["algo-1"]["gpu0"]["gpu_max"].get<double>(), 16.0);
  GpuMemoryIncrease higher({.increase = 13, .patience = 1, .window = 2});
  EXPECT_FALSE(run1(higher, make({.n = 4, .gpu_memory = [&](int i, int) { return v[static_cast<size_t>(i)]; }})));
}

TEST(GPUMemoryIncrease, FiresOnASteadyRiseAfterPatienceAndIsSticky) {
  GpuMemoryIncrease e({.increase = 5, .patience = 50, .window = 10});
  // +5 points per sample: mean(last 10) - mean(the 9 ending two before the last) = 7.5 points.
  const auto rise = make({.n = 20, .start = 1, .gpu_memory = [](int i, int) { return 5.0 * i; }});
  const auto flat = make({.n = 40, .start = 61, .gpu_memory = constant(30)});
  // 20 samples: fewer than patience, not judged.
  EXPECT_FALSE(e.invoke(window(0), cut(rise, {}, window(0))));
  EXPECT_TRUE(e.not_judged_reason().has_value());
  GpuMemoryIncrease f({.increase = 5, .patience = 10, .window = 10});
  EXPECT_EQ(run(f, concat(rise, flat), {}, 2), (std::vector<bool>{true, true}));
  GpuMemoryIncrease steady({.increase = 5, .patience = 10, .window = 10});
  EXPECT_FALSE(run1(steady, make({.n = 100, .gpu_memory = constant(30)})));
  EXPECT_TRUE(steady.ever_judged());
}

// ---- BatchSize (§3.5) --------------------------------------------------------------------------------

TEST(BatchSize, FiresWhenCpuGpuAndMemoryAreAllLow) {
  BatchSize e({.patience = 10, .window = 5});
  const auto data = make({.n = 20, .cpu = constant(10), .gpu = constant(10), .gpu_memory = constant(10)});
  EXPECT_TRUE(run1(e, data));
  EXPECT_EQ(e.violations(), 1);
  EXPECT_EQ(e.datapoints(), 20);
  EXPECT_TRUE(e.details()["algo-1"].contains("cpu"));
  EXPECT_TRUE(e.details()["algo-1"].contains("gpu0"));
  EXPECT_TRUE(e.details()["algo-1"].contains("gpu0_memory"));
  EXPECT_EQ(e.details()["last_timestamp"], window(0, 3600 * int64_t{1'000'000}).start_us);
  BatchSize busy({.patience = 10, .window = 5});
  EXPECT_FALSE(run1(busy, make({.n = 20, .cpu = constant(10), .gpu = constant(90), .gpu_memory = constant(10)})));
  BatchSize cpu_busy({.patience = 10, .window = 5});
  EXPECT_FALSE(run1(cpu_busy, make({.n = 20, .cpu = constant(90), .gpu = constant(10), .gpu_memory = constant(10)})));
  BatchSize no_gpu({.patience = 10, .window = 5});
  EXPECT_FALSE(run1(no_gpu, make({.n = 20, .cpu = constant(10)})));
  EXPECT_TRUE(no_gpu.not_judged_reason().has_value());
}

TEST(BatchSize, AveragesCpuOverEveryCoreSeenOnAnyNode) {
  // algo-1's four cores at 100 % and algo-2's four at 100 %: 8 cores in all, so each node's average
  // is 400 / 8 = 50 %, below 70 (a per-node average would be 100 %).
  auto data = make({.n = 20, .cpu = constant(100), .gpu = constant(10), .gpu_memory = constant(10)});
  auto other = make({.n = 20, .node = "algo-2", .cpu = constant(100)});
  for (auto& m : other) m.name = "cpu" + std::to_string(std::stoi(m.name.substr(3)) + 4);
  BatchSize e({.patience = 10, .window = 5});
  EXPECT_TRUE(run1(e, concat(data, other))) << e.details().dump();
  EXPECT_DOUBLE_EQ(e.details()["algo-1"]["cpu"]["p50"].get<double>(), 50.0);
  EXPECT_FALSE(e.details().contains("algo-2"));  // no GPU data there: skipped (the original crashes)
  // Inside ProfilerReport, last_timestamp is T0.
  BatchSize inside({.patience = 10, .window = 5, .inside_report = true});
  EXPECT_TRUE(run1(inside, concat(data, other)));
  EXPECT_EQ(inside.details()["last_timestamp"], kT0);
}

// ---- LoadBalancing (§3.6, the intended algorithm) -----------------------------------------------------

TEST(LoadBalancing, FiresWhenTwoGpusOfANodeCarryDifferentLoads) {
  LoadBalancing e({.threshold = 0.2, .patience = 10});
  EXPECT_TRUE(run1(e, make({.n = 50, .gpus = 2, .gpu = [](int, int g) { return g == 0 ? 10.0 : 90.0; }})));
  EXPECT_EQ(e.violations(), 1);
  // Disjoint histograms: JS divergence ln 2.
  EXPECT_NEAR(e.evidence()["observed"].get<double>(), std::sqrt(std::log(2.0)), 1e-12);
  EXPECT_EQ(e.details()["algo-1"]["workloads"]["gpu0"][5], 50);  // 10 % falls in [10, 12)
  EXPECT_EQ(e.details()["algo-1"]["workloads"]["gpu0"].size(), 49u);
  LoadBalancing same({.threshold = 0.2, .patience = 10});
  EXPECT_FALSE(run1(same, make({.n = 50, .gpus = 2, .gpu = [](int i, int) { return 10.0 + i % 40; }})));
  EXPECT_TRUE(same.ever_judged());
}

TEST(LoadBalancing, NeedsTwoGpusPastPatienceAndDropsValuesAbove98) {
  LoadBalancing one({.patience = 10});
  EXPECT_FALSE(run1(one, make({.n = 50, .gpus = 1, .gpu = constant(50)})));
  EXPECT_TRUE(one.not_judged_reason().has_value());
  LoadBalancing short_({.patience = 100});
  EXPECT_FALSE(run1(short_, make({.n = 100, .gpus = 2, .gpu = [](int, int g) { return g ? 10.0 : 90.0; }})));
  EXPECT_TRUE(short_.not_judged_reason().has_value());
  // 100 % is outside the last edge (98): gpu1's histogram is empty, so the pair is not compared.
  LoadBalancing full({.threshold = 0.0001, .patience = 10});
  EXPECT_FALSE(run1(full, make({.n = 50, .gpus = 2, .gpu = [](int, int g) { return g ? 100.0 : 10.0; }})));
  EXPECT_EQ(full.violations(), 0);
}

// ---- MaxInitializationTime (§3.7) ------------------------------------------------------------------------

TEST(MaxInitializationTime, FiresAfterTheThresholdWithoutStepsAndStopsOnceOneStarts) {
  MaxInitializationTime e({.threshold_min = 1});
  const auto system = make({.n = 300, .dt = 1, .cpu = constant(10)});
  // Window 0: 0 min elapsed; window 1: 1 min, not > 1; window 2: fires; window 3 has a step.
  const std::vector<sdk::FrameworkEvent> fw = {step_event(0, kT0 + 3 * kMinute + 1000, 1000)};
  EXPECT_EQ(run(e, system, fw, 4), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(e.triggered(), 1);
  EXPECT_EQ(e.datapoints(), 1);
  EXPECT_DOUBLE_EQ(e.details()["job_start"].get<double>(), seconds(kT0));
  EXPECT_EQ(e.details()["step_num"]["first"], kT0 + 3 * kMinute + 1000);
}

TEST(MaxInitializationTime, NeverFiresInsideProfilerReport) {
  MaxInitializationTime inside({.threshold_min = 1, .inside_report = true});
  const auto system = make({.n = 600, .dt = 1, .cpu = constant(10)});
  for (bool v : run(inside, system, {}, 10)) EXPECT_FALSE(v);
  auto report = ProfilerReportEngine::create({{"MaxInitializationTime", {{"threshold", "0.01"}}}}, "r");
  ASSERT_VIGIL_OK(report);
  for (int k = 0; k < 10; ++k) report->invoke(window(k), cut(system, {}, window(k)));
  EXPECT_EQ(report->engine("MaxInitializationTime")->triggered(), 0);
  EXPECT_FALSE(report->any_fired());
}

// ---- StepOutlier (§3.8) --------------------------------------------------------------------------------

std::vector<sdk::FrameworkEvent> steps(int normal, int slow, int64_t from_us = kT0) {
  std::vector<sdk::FrameworkEvent> out;
  int64_t t = from_us;
  for (int i = 0; i < normal + slow; ++i) {
    const int64_t dur = i < normal ? 100'000 : 1'000'000;
    out.push_back(step_event(i, t, dur));
    t += dur + 1000;
  }
  return out;
}

TEST(StepOutlier, FiresOnMoreThanNOutliersAmongMoreThan100Steps) {
  StepOutlier fires;
  EXPECT_TRUE(run1(fires, {}, steps(200, 11)));
  EXPECT_EQ(fires.violations(), 11);
  EXPECT_EQ(fires.details()["step_details"]["algo-1"]["number_of_outliers"], 11);
  EXPECT_EQ(fires.details()["step_details"]["algo-1"]["outliers"][0], 200);
  StepOutlier ten;  // 10 is not > n_outliers = 10
  EXPECT_FALSE(run1(ten, {}, steps(200, 10)));
  EXPECT_EQ(ten.violations(), 0);
  EXPECT_TRUE(ten.ever_judged());
}

TEST(StepOutlier, NeedsMoreThan100DurationsAndCountsBoundaryStepsTwice) {
  StepOutlier few({.n_outliers = 1});
  EXPECT_FALSE(run1(few, {}, steps(97, 3)));  // 100 durations: not judged
  EXPECT_TRUE(few.not_judged_reason().has_value());
  StepOutlier more({.n_outliers = 1});
  EXPECT_TRUE(run1(more, {}, steps(98, 3)));  // 101
  // A step spanning the boundary between windows 0 and 1 is delivered, and counted, in both.
  StepOutlier e;
  run(e, {}, {step_event(1, kT0 + kMinute - 1000, 5000)}, 2);
  EXPECT_EQ(e.datapoints(), 2);
}

TEST(StepOutlier, ModeAddsEventsToTheSteps) {
  auto fw = steps(200, 11);
  for (int i = 0; i < 5; ++i) fw.push_back(step_event(i, kT0 + i * 10, 5, "algo-1", "custom_step"));
  StepOutlier with_mode({.mode = "custom_step"});
  run1(with_mode, {}, fw);
  EXPECT_EQ(with_mode.datapoints(), 216);
  StepOutlier without;
  run1(without, {}, fw);
  EXPECT_EQ(without.datapoints(), 211);
}

// ---- Dataloader (§3.9) -----------------------------------------------------------------------------------

// `seconds` seconds with `pids(s)` distinct data-loader pids each.
std::vector<sdk::FrameworkEvent> loaders(int secs, const std::function<int(int)>& pids) {
  std::vector<sdk::FrameworkEvent> out;
  for (int s = 0; s < secs; ++s)
    for (int p = 0; p < pids(s); ++p) out.push_back(loader_event(100 + p, kT0 + s * 1'000'000 + p * 1000));
  return out;
}

TEST(Dataloader, FiresWhenTooFewLoadersForTheCores) {
  const auto cores = make({.n = 1, .cores = 8, .cpu = constant(10)});
  Dataloader low({.min_threshold = 70, .patience = 10});  // 2 < 8 * 70 % = 5.6
  EXPECT_TRUE(run1(low, cores, loaders(12, [](int) { return 2; })));
  EXPECT_EQ(low.violations(), 1);
  EXPECT_EQ(low.triggered(), 1);
  EXPECT_EQ(low.details()["dataloaders"], 2);
  EXPECT_EQ(low.details()["cores"], 8);
  Dataloader ok({.min_threshold = 5, .patience = 10});  // 2 >= 0.4, and <= 16
  EXPECT_FALSE(run1(ok, cores, loaders(12, [](int) { return 2; })));
  EXPECT_TRUE(ok.ever_judged());
  Dataloader high({.min_threshold = 5, .max_threshold = 10, .patience = 10});  // 2 > 0.8
  EXPECT_TRUE(run1(high, cores, loaders(12, [](int) { return 2; })));
}

TEST(Dataloader, TruncatesTheMedianAndWaitsForPatience) {
  const auto one_core = make({.n = 1, .cores = 1, .cpu = constant(10)});
  // Six seconds with 2 pids, six with 3: median 2.5, truncated to 2, which is not > 1 * 200 % = 2.
  Dataloader e({.min_threshold = 1, .max_threshold = 200, .patience = 10});
  EXPECT_FALSE(run1(e, one_core, loaders(12, [](int s) { return s < 6 ? 2 : 3; })));
  EXPECT_EQ(e.details()["dataloaders"], 2);
  Dataloader waiting({.patience = 10});
  EXPECT_FALSE(run1(waiting, one_core, loaders(10, [](int) { return 1; })));  // |P| = 10, not > 10
  EXPECT_TRUE(waiting.not_judged_reason().has_value());
  // Sticky: once violated, later windows fire.
  Dataloader sticky({.patience = 2});
  const auto fw = loaders(5, [](int) { return 1; });
  const auto verdicts = run(sticky, make({.n = 1, .cores = 8, .cpu = constant(1)}), fw, 2);
  EXPECT_EQ(verdicts, (std::vector<bool>{true, true}));
}

// ---- OverallSystemUsage and OverallFrameworkMetrics (§3.10, §3.11) ------------------------------------------

TEST(OverallSystemUsage, NeverFiresAndReportsPerCoreAveragesOfEachTimestamp) {
  OverallSystemUsage e;
  // 4 cores, core c at 10·c % -> sum 60, / 4 cores = 15 at every timestamp.
  const auto data = make({.n = 10, .cpu = [](int, int c) { return 10.0 * c; }, .gpu = constant(33.333),
                          .memory = constant1(40)});
  EXPECT_FALSE(run1(e, data));
  EXPECT_EQ(e.details()["CPU"]["algo-1"]["max"], 15.0);
  EXPECT_EQ(e.details()["CPU"]["algo-1"]["p50"], 15.0);
  EXPECT_EQ(e.details()["GPU"]["algo-1"]["p95"], 33.33);  // rounded to 2 decimals
  EXPECT_EQ(e.details()["CPU memory"]["algo-1"]["min"], 40.0);
  EXPECT_EQ(e.datapoints(), 10);
  EXPECT_EQ(e.triggered(), 0);
}

TEST(OverallFrameworkMetrics, SharesTimeByCategory) {
  OverallFrameworkMetrics e;
  const std::vector<sdk::FrameworkEvent> fw = {
      {"f", "Forward-SubModuleInternal", "algo-1", "{}", kT0, kT0 + 300, 1, 0},
      {"b", "Backward-SubModuleInternal", "algo-1", "{}", kT0, kT0 + 100, 1, 0},
      {"matmul", "cpu_functions", "algo-1", "{}", kT0, kT0 + 990, 1, 0},
      {"tiny", "cpu_functions", "algo-1", "{}", kT0, kT0 + 10, 1, 0}};
  EXPECT_FALSE(run1(e, {}, fw));
  EXPECT_DOUBLE_EQ(e.details()["forward_backward"]["forward"].get<double>(), 75.0);
  EXPECT_DOUBLE_EQ(e.details()["CPU"]["matmul"].get<double>(), 100.0);  // "tiny" is 1 %: dropped
  EXPECT_FALSE(e.details()["CPU"].contains("tiny"));
  EXPECT_DOUBLE_EQ(e.details()["CPU_total"].get<double>(), 1000.0);
}

// ---- ProfilerReport (§3.13) --------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> keys(std::map<std::string, std::string> m) {
  return {m.begin(), m.end()};
}

TEST(ProfilerReport, ParsesRuleParamKeysCaseInsensitively) {
  auto ok = parse_report_overrides(keys({{"cpubottleneck_cpu_threshold", "80"}, {"StepOutlier_mode", "x"}}));
  ASSERT_VIGIL_OK(ok);
  EXPECT_EQ(ok->at("CPUBottleneck").at("cpu_threshold"), "80");
  EXPECT_EQ(ok->at("StepOutlier").at("mode"), "x");
  const auto refusal = [](std::map<std::string, std::string> m) {
    auto r = parse_report_overrides(keys(std::move(m)));
    EXPECT_FALSE(r);
    if (r) return std::string();
    EXPECT_EQ(r.error().code, VIGIL_E_INVALID_ARGUMENT);
    return r.error().message;
  };
  EXPECT_NE(refusal({{"threshold", "1"}}).find("Key threshold does not follow naming scheme: "
                                              "<rule_name>_<parameter_name>"),
            std::string::npos);
  EXPECT_NE(refusal({{"Foo_threshold", "1"}}).find("Foo is an invalid rule name!"), std::string::npos);
  EXPECT_NE(refusal({{"OverallFrameworkMetrics_scan_interval_us", "1"}}).find("invalid rule name"), std::string::npos);
  const std::string p = refusal({{"CPUBottleneck_bogus", "1"}});
  EXPECT_NE(p.find("bogus is an invalid parameter name!"), std::string::npos) << p;
  EXPECT_NE(p.find("CPUBottleneck_bogus"), std::string::npos) << p;
  const std::string v = refusal({{"lowgpuutilization_threshold_p95", "150"}});
  EXPECT_NE(v.find("LowGPUUtilization threshold_p95 must be a valid percentile!"), std::string::npos) << v;
  EXPECT_NE(v.find("LowGPUUtilization_threshold_p95"), std::string::npos) << v;
  EXPECT_NE(refusal({{"GPUMemoryIncrease_patience", "0"}}).find("must be a positive integer!"), std::string::npos);
}

TEST(ProfilerReport, RunsEverySubRuleAndWritesTheirReportsAtomically) {
  auto report = ProfilerReportEngine::create({{"LowGPUUtilization", {{"patience", "10"}}},
                                              {"CPUBottleneck", {{"cpu_threshold", "80"}}}},
                                             "ProfilerReport-1");
  ASSERT_VIGIL_OK(report);
  const auto system = make({.n = 240, .dt = 0.5, .cpu = constant(20), .gpu = constant(5), .gpu_memory = constant(8),
                            .io = constant1(1), .memory = constant1(30)});
  bool flag = false;
  for (int k = 0; k < 3; ++k) flag = report->invoke(window(k), cut(system, {}, window(k)));
  EXPECT_TRUE(flag);
  EXPECT_TRUE(report->any_fired());
  ScratchDir dir;
  const auto out = dir.path() / "ProfilerReport-1" / "profiler-output";
  ASSERT_VIGIL_OK(report->write(out, "InProgress"));
  const std::vector<std::string> names = {"CPUBottleneck",   "IOBottleneck",  "LowGPUUtilization",
                                          "StepOutlier",     "GPUMemoryIncrease", "BatchSize",
                                          "MaxInitializationTime", "LoadBalancing", "OverallSystemUsage",
                                          "Dataloader",      "OverallFrameworkMetrics"};
  for (const auto& n : names) EXPECT_TRUE(fs::exists(out / "profiler-reports" / (n + ".json"))) << n;
  EXPECT_TRUE(fs::exists(out / "profiler-report.html"));
  for (const auto& entry : fs::recursive_directory_iterator(out))
    EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary file left: " << entry.path();
  const auto low = nlohmann::json::parse(test::read_file(out / "profiler-reports" / "LowGPUUtilization.json"));
  EXPECT_EQ(low["RuleTriggered"], 3);  // the idle GPU is judged again, and violates, in every window
  EXPECT_GE(low["Violations"].get<int>(), 1);
  EXPECT_EQ(low["Datapoints"], 240 + 1);  // the sample on the 60 s boundary is seen by two windows
  EXPECT_NE(low["RuleParameters"].get<std::string>().find("patience:10"), std::string::npos);
  EXPECT_NE(low["RuleParameters"].get<std::string>().find("threshold_p95:70"), std::string::npos);
  EXPECT_TRUE(low["Details"]["algo-1"].contains("gpu0"));
  const auto cpu = nlohmann::json::parse(test::read_file(out / "profiler-reports" / "CPUBottleneck.json"));
  EXPECT_NE(cpu["RuleParameters"].get<std::string>().find("cpu_threshold:80"), std::string::npos);
  EXPECT_EQ(cpu["RuleTriggered"], 0);
  const auto usage = nlohmann::json::parse(test::read_file(out / "profiler-reports" / "OverallSystemUsage.json"));
  // The boundary timestamp's values arrive in two windows but are summed once (the original adds them
  // twice, which would report a 40 % maximum).
  EXPECT_EQ(usage["Details"]["CPU"]["algo-1"]["p50"], 20.0);
  EXPECT_EQ(usage["Details"]["CPU"]["algo-1"]["max"], 20.0);
  // Rewritten in place after a later window.
  ASSERT_VIGIL_OK(report->write(out, "IssuesFound"));
  EXPECT_NE(test::read_file(out / "profiler-report.html").find("Issues found"), std::string::npos);
}

TEST(ProfilerReport, FillsTheReportDataOnceDespiteSharedBoundaries) {
  auto report = ProfilerReportEngine::create({}, "R");
  ASSERT_VIGIL_OK(report);
  const auto system = make({.n = 241, .dt = 0.5, .gpus = 2, .cpu = constant(20), .gpu = constant(50),
                            .gpu_memory = constant(8), .io = constant1(3), .memory = constant1(30)});
  std::vector<sdk::FrameworkEvent> fw = {step_event(7, kT0 + kMinute - 500, 1000)};  // spans the boundary
  for (int i = 0; i < 4; ++i) fw.push_back(loader_event(10 + i, kT0 + 1'000'000 * i));
  for (int k = 0; k < 2; ++k) report->invoke(window(k), cut(system, fw, window(k)));
  const ReportData d = report->report_data("InProgress");
  EXPECT_EQ(d.title, "R");
  EXPECT_EQ(d.rules.size(), 11u);
  ASSERT_EQ(d.cpu.size(), 1u);
  EXPECT_EQ(d.cpu[0].points.size(), 241u);  // the sample on the boundary once
  EXPECT_DOUBLE_EQ(d.cpu[0].points[0].second, 20.0);
  EXPECT_EQ(d.gpu.size(), 2u);
  EXPECT_EQ(d.gpu_memory.size(), 2u);
  EXPECT_EQ(d.memory.size(), 1u);
  EXPECT_EQ(d.io_wait.size(), 1u);
  ASSERT_EQ(d.step_durations.count("algo-1 Step:ModeKeys.TRAIN"), 1u);
  EXPECT_EQ(d.step_durations.at("algo-1 Step:ModeKeys.TRAIN").size(), 1u);  // once, though in two windows
  EXPECT_EQ(d.step_durations.at("algo-1 Step:ModeKeys.TRAIN")[0].first, 7);
  EXPECT_EQ(d.dataloader_durations_s.size(), 4u);
  EXPECT_DOUBLE_EQ(d.phase_time_us.at("DataLoaderIter"), 4000.0);
  EXPECT_DOUBLE_EQ(d.operator_time_us.at("Step:ModeKeys.TRAIN"), 1000.0);
  ASSERT_TRUE(d.job_start_s.has_value());
  EXPECT_DOUBLE_EQ(*d.job_start_s, seconds(kT0));
}

TEST(ProfilerReport, SeriesStayBoundedAndKeepSpikes) {
  BoundedSeries<double> mean(100);
  BoundedSeries<int64_t> peaks(100, /*keep_max=*/true);
  for (int i = 0; i < 10'000; ++i) {
    mean.add(i, 5.0);
    peaks.add(i, i == 7777 ? 99.0 : 1.0);
  }
  EXPECT_LE(mean.points().size(), 100u);
  EXPECT_GE(mean.points().size(), 40u);
  for (const auto& [x, y] : mean.points()) EXPECT_DOUBLE_EQ(y, 5.0);
  double top = 0;
  int64_t at = -1;
  for (const auto& [x, y] : peaks.points())
    if (y > top) top = y, at = x;
  EXPECT_EQ(top, 99.0);
  EXPECT_EQ(at, 7777);
}

// ---- the plugin ----------------------------------------------------------------------------------------

TEST(ProfilerRulesPlugin, LoadsEveryRuleWithSageMakersNamesAndDefaults) {
  const auto& registry = test::builtin_registry();
  const std::string scan = "60000000";
  const std::map<std::string, std::map<std::string, std::string>> expected = {
      {"BatchSize",
       {{"cpu_threshold_p95", "70"}, {"gpu_threshold_p95", "70"}, {"gpu_memory_threshold_p95", "70"},
        {"patience", "1000"}, {"window", "500"}, {"scan_interval_us", scan}}},
      {"CPUBottleneck",
       {{"threshold", "50"}, {"gpu_threshold", "10"}, {"cpu_threshold", "90"}, {"patience", "1000"},
        {"scan_interval_us", scan}}},
      {"Dataloader", {{"min_threshold", "70"}, {"max_threshold", "200"}, {"patience", "10"}, {"scan_interval_us", scan}}},
      {"GPUMemoryIncrease", {{"increase", "5"}, {"patience", "1000"}, {"window", "10"}, {"scan_interval_us", scan}}},
      {"IOBottleneck",
       {{"threshold", "50"}, {"gpu_threshold", "10"}, {"io_threshold", "50"}, {"patience", "1000"},
        {"scan_interval_us", scan}}},
      {"LoadBalancing", {{"threshold", "0.2"}, {"patience", "1000"}, {"scan_interval_us", scan}}},
      {"LowGPUUtilization",
       {{"threshold_p95", "70"}, {"threshold_p5", "10"}, {"window", "500"}, {"patience", "1000"},
        {"scan_interval_us", scan}}},
      {"MaxInitializationTime", {{"threshold", "20"}, {"scan_interval_us", scan}}},
      {"OverallSystemUsage", {{"scan_interval_us", scan}}},
      {"OverallFrameworkMetrics", {{"scan_interval_us", scan}}},
      {"StepOutlier", {{"stddev", "3"}, {"mode", ""}, {"n_outliers", "10"}, {"scan_interval_us", scan}}},
      {"ProfilerReport", {{"scan_interval_us", scan}, {"opt_out_telemetry", "False"}}},
  };
  for (const auto& [name, params] : expected) {
    const auto* rule = registry.find(name);
    ASSERT_NE(rule, nullptr) << name;
    const vigil_rule_descriptor* d = rule->descriptor;
    EXPECT_EQ(std::string(d->id), "vigil.builtin." + name);
    EXPECT_EQ(std::string(d->name), name);
    EXPECT_GT(std::string(d->description).size(), 400u) << name;
    std::map<std::string, std::string> got;
    for (uint32_t i = 0; i < d->param_count; ++i)
      got[d->params[i].name] = d->params[i].default_text ? d->params[i].default_text : "";
    EXPECT_EQ(got, params) << name;
    EXPECT_EQ((d->flags & VIGIL_RULEF_EXTRA_PARAMS) != 0, name == "ProfilerReport") << name;
  }
  EXPECT_NE(std::string(registry.find("LoadBalancing")->descriptor->description).find("Deliberate divergence"),
            std::string::npos);
  // The engines' table and the plugin agree.
  for (const EngineType& t : engine_types()) EXPECT_NE(registry.find(t.name), nullptr) << t.name;
}

}  // namespace
}  // namespace vigil
