#include "profiler_report_sample.h"

#include <cmath>

namespace vigil::test {

namespace {

using nlohmann::json;
using profiler_rules::ReportData;
using profiler_rules::RuleSummary;
using profiler_rules::TimeSeries;

constexpr double kJobStart = 1596668240.3562295;  // builtin-rules §3.7's test job
constexpr double kInterval = 0.5;                 // the default sampling interval, seconds
constexpr int kSamples = 1200;                    // ten minutes

// A deterministic utilisation curve in [0, 100]: a level, a slow wave and a faster ripple.
TimeSeries wave(const std::string& label, double level, double amplitude, double phase) {
  TimeSeries s{label, {}};
  for (int i = 0; i < kSamples; ++i) {
    const double t = i * kInterval;
    const double v = level + amplitude * std::sin(t / 40 + phase) + 3 * std::sin(t * 1.7 + phase);
    s.points.emplace_back(t, std::fmax(0, std::fmin(100, v)));
  }
  return s;
}

json box(double lower, double p25, double p50, double p75, double p95, double upper) {
  return {{"lower", lower}, {"p25", p25}, {"p50", p50}, {"p75", p75}, {"p95", p95}, {"upper", upper}};
}

json system_stats(double max, double p99, double p95, double p50, double min) {
  return {{"max", max}, {"p99", p99}, {"p95", p95}, {"p50", p50}, {"min", min}};
}

}  // namespace

ReportData sample_report_data() {
  const std::string node1 = "algo-1", node2 = kHostileText;
  ReportData d;
  d.title = "ProfilerReport";
  d.verdict = "IssuesFound";
  d.job_start_s = kJobStart;
  d.first_step_start_s = kJobStart + 35.2;
  d.last_step_end_s = kJobStart + 590.7;
  d.job_end_s = kJobStart + kSamples * kInterval;

  d.cpu = {wave(node1 + " cpu (all cores)", 60, 25, 0), wave(node2 + " cpu (all cores)", 45, 20, 1)};
  d.gpu = {wave(node1 + " gpu0", 70, 20, 0.3), wave(node1 + " gpu1", 40, 30, 0.6), wave(node2 + " gpu0", 55, 25, 0.9)};
  d.gpu_memory = {wave(node1 + " gpu0", 30, 5, 0), wave(node1 + " gpu1", 25, 5, 2), wave(node2 + " gpu0", 35, 4, 1)};
  d.memory = {wave(node1 + " memory", 20, 2, 0), wave(node2 + " memory", 22, 2, 1)};
  d.io_wait = {wave(node1 + " iowait", 5, 4, 0)};

  // Steps of about 0.1 s; on algo-1's TRAIN key every 60th step takes 0.9 s and is an outlier.
  const std::string train1 = node1 + " Step:ModeKeys.TRAIN", train2 = node2 + " Step:ModeKeys.TRAIN",
                    eval1 = node1 + " Step:ModeKeys.EVAL";
  for (int64_t step = 0; step < 300; ++step) {
    const double jitter = 0.01 * std::sin(static_cast<double>(step) * 0.37);
    const bool outlier = step % 60 == 59;
    d.step_durations[train1].emplace_back(step, outlier ? 0.9 + jitter : 0.1 + jitter);
    if (outlier) d.outlier_steps[train1].push_back(step);
    d.step_durations[train2].emplace_back(step, 0.12 + jitter);
  }
  for (int64_t step = 0; step < 20; ++step) d.step_durations[eval1].emplace_back(step, 0.05 + 0.002 * static_cast<double>(step));
  d.outlier_steps[train2] = {};

  for (int i = 0; i < 500; ++i) d.dataloader_durations_s.push_back(0.02 + 0.01 * std::fabs(std::sin(i * 0.11)));
  d.phase_time_us = {{"Step:ModeKeys.TRAIN", 5.1e7}, {"Forward-SubModuleInternal", 2.2e7},
                     {"Backward (post-forward)", 2.6e7}, {"DataLoaderIter", 4.0e6}};
  for (int i = 0; i < 30; ++i) d.operator_time_us["aten::op_" + std::to_string(i)] = 1e6 * (30 - i);

  const auto rule = [](std::string name, std::string description, int64_t triggered, int64_t violations,
                       int64_t datapoints, std::string parameters, json details) {
    RuleSummary r;
    r.name = std::move(name), r.description = std::move(description);
    r.triggered = triggered, r.violations = violations, r.datapoints = datapoints;
    r.parameters = std::move(parameters), r.details = std::move(details);
    return r;
  };
  d.rules.push_back(rule("CPUBottleneck", "Checks whether the CPU is busy while the GPUs wait.", 3, 105, 320,
                         "threshold:50\ngpu_threshold:10\ncpu_threshold:90\npatience:1000\nscan_interval_us:60000000",
                         {{"low_gpu_utilization", 12},
                          {"bottlenecks", {{"1596668300", {{"GPUs", "gpu0"}, {"CPUs", "cpu0, cpu1"}}}}},
                          {"CPU_total", 1.25e7},
                          {"GPU_total", 3.5e6}}));
  d.rules.push_back(rule("IOBottleneck", "Checks whether the GPUs wait for I/O.", 0, 0, 320,
                         "threshold:50\ngpu_threshold:10\nio_threshold:50\npatience:1000", {{"low_gpu_utilization", 0}}));
  d.rules.push_back(rule("LowGPUUtilization", "Checks for low or fluctuating GPU usage.", 2, 7, 3600,
                         "threshold_p95:70\nthreshold_p5:10\nwindow:500\npatience:1000",
                         {{node1,
                           {{"gpu0", box(30, 55, 70, 85, 92, 100)}, {"gpu1", box(0, 20, 40, 60, 75, 100)}}},
                          {node2, {{"gpu0", box(10, 40, 55, 70, 80, 100)}}},
                          {"last_timestamp", kJobStart + 540}}));
  d.rules.push_back(rule("StepOutlier", "Detects step durations far above the mean.", 1, 5, 620,
                         "stddev:3\nmode:None\nn_outliers:10",
                         {{"step_details",
                           {{node1,
                             {{"step_stats", {{"mean", 0.113}, {"max", 0.91}, {"p99", 0.9}, {"p95", 0.11}, {"p50", 0.1}, {"min", 0.09}}},
                              {"number_of_outliers", 5},
                              {"phase", "Step:ModeKeys.TRAIN"},
                              {"stddev", 0.12},
                              {"histogram", json::array({12, 80, 150, 40, 13})}}}}}}));
  d.rules.push_back(rule("GPUMemoryIncrease", "Detects a large increase in GPU memory usage.", 0, 0, 3600,
                         "increase:5\npatience:" + kHostileText + "\nwindow:10",
                         {{node1, {{"gpu0", box(20, 27, 30, 33, 35, 37)}}}}));
  d.rules.push_back(rule("BatchSize", "Checks whether the batch size could be larger.", 1, 48, 3600,
                         "cpu_threshold_p95:70\ngpu_threshold_p95:70\ngpu_memory_threshold_p95:70\npatience:1000\nwindow:500",
                         {{node1,
                           {{"cpu", box(20, 45, 60, 75, 85, 100)},
                            {"gpu0", box(30, 55, 70, 85, 92, 100)},
                            {"gpu0_memory", box(25, 28, 30, 32, 34, 38)}}}}));
  d.rules.push_back(rule("MaxInitializationTime", "Checks that the first step starts in time.", 0, 0, 620,
                         "threshold:20",
                         {{"job_start", kJobStart},
                          {"job_end", kJobStart + 600},
                          {"step_num", {{"first", (kJobStart + 35.2) * 1e6}, {"last", (kJobStart + 590.7) * 1e6}}}}));
  d.rules.push_back(rule("LoadBalancing", "Checks the workload balance between GPUs.", 0, 0, 3600,
                         "threshold:0.2\npatience:1000",
                         {{node1, {{"workloads", {{"gpu0", json::array({0, 4, 10, 30, 56})}, {"gpu1", json::array({20, 30, 30, 15, 5})}}}}}}));
  d.rules.push_back(rule("OverallSystemUsage", "Statistics of the system metrics.", 0, 0, 1200, "",
                         {{"CPU", {{node1, system_stats(98, 95, 90, 60, 5)}, {node2, system_stats(90, 85, 80, 45, 3)}}},
                          {"GPU", {{node1, system_stats(100, 99, 95, 60, 0)}}}}));
  RuleSummary loader = rule("Dataloader", "Checks the number of parallel data loaders.", 0, 0, 0,
                            "min_threshold:70\nmax_threshold:200", json::object());
  loader.no_data_reason = "no DataLoader events (the framework is not PyTorch)";
  d.rules.push_back(loader);
  d.rules.push_back(rule("OverallFrameworkMetrics", "Statistics of the framework events.", 0, 0, 620, "",
                         {{"general", {{"Step:ModeKeys.TRAIN", 51.2}, {"Forward-SubModuleInternal", 22.0}}},
                          {"ratio", {{"CPU", 78.5}, {"GPU", 21.5}}}}));
  return d;
}

ReportData empty_report_data() {
  ReportData d;
  d.title = "ProfilerReport";
  d.verdict = "NoIssuesFound";
  for (const char* name : {"CPUBottleneck", "LowGPUUtilization", "StepOutlier", "OverallSystemUsage", "OverallFrameworkMetrics"}) {
    RuleSummary r;
    r.name = name;
    r.no_data_reason = "no profiler data was recorded";
    d.rules.push_back(r);
  }
  return d;
}

}  // namespace vigil::test
