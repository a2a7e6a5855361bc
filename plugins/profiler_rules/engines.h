// The profiler rules' logic (builtin-rules §1.4, §3.1-§3.11), apart from the host: each engine
// takes a config, is invoked once per time window with that window's data (cumulative state inside)
// and keeps the report object of §1.4 (RuleSummary). The sdk::ProfilerRule classes (rules.h) and
// ProfilerReport (report.h) drive them.
#pragma once

#include <vigil/sdk/profiler.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework_metrics.h"
#include "params.h"
#include "report_data.h"

namespace vigil::profiler_rules {

// node -> GPU (or core) name -> values, in arrival order.
using PerDevice = std::map<std::string, std::map<std::string, std::vector<double>>>;

// What every engine keeps: the report object's counters and Details, and what the last window said.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // One window's verdict (true = the rule's condition holds in this window, smdebug's return value).
  virtual bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) = 0;

  // The report object so far (profiler-reports/<RuleName>.json).
  RuleSummary summary() const;
  // What made the last window fire: an object with metric, observed and threshold (empty when it
  // did not fire).
  const nlohmann::json& evidence() const { return evidence_; }
  // Why the last window could not be judged (too little data); nullopt when it was judged.
  const std::optional<std::string>& not_judged_reason() const { return not_judged_; }
  bool ever_judged() const { return ever_judged_; }

  int64_t triggered() const { return triggered_; }
  int64_t violations() const { return violations_; }
  int64_t datapoints() const { return datapoints_; }
  const nlohmann::json& details() const { return details_; }

 protected:
  Engine(std::string summary_sentence, std::string parameters)
      : summary_(std::move(summary_sentence)), parameters_(std::move(parameters)) {}
  void begin_window() {
    evidence_ = nlohmann::json();
    not_judged_.reset();
  }
  void judged() { ever_judged_ = true; }
  void cannot_judge(std::string why) { not_judged_ = std::move(why); }
  // Marks the window as fired: `e` holds metric, observed and threshold. A sticky window without a
  // new violation repeats the last one, flagged "sticky".
  void fire(nlohmann::json e) {
    last_fired_ = e;
    evidence_ = std::move(e);
  }
  bool fire_sticky() {
    if (triggered_ <= 0) return false;
    if (evidence_.is_null()) {
      evidence_ = last_fired_;
      evidence_["sticky"] = true;
    }
    return true;
  }

  int64_t triggered_ = 0, violations_ = 0, datapoints_ = 0;
  nlohmann::json details_ = nlohmann::json::object();

 private:
  std::string summary_, parameters_;
  nlohmann::json evidence_, last_fired_ = nlohmann::json::object();
  std::optional<std::string> not_judged_;
  bool ever_judged_ = false;
};

// Box statistics as a Details object: p25, p50, p75, p95, upper, lower (and more when asked).
nlohmann::json box_json(const std::vector<double>& values, bool with_p05 = false, bool with_max = false);

// ---- §3.1, §3.2 ---------------------------------------------------------------------------------
struct BottleneckConfig {
  double threshold = 50;      // % of snapshots that are bottlenecks
  double gpu_threshold = 10;  // a GPU below this is idle
  double other_threshold = 90;  // cpu_threshold (CPUBottleneck) or io_threshold (IOBottleneck)
  int64_t patience = 1000;    // snapshots before judging
};

class Bottleneck : public Engine {
 public:
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;
  int64_t bottleneck_count() const { return static_cast<int64_t>(bottlenecks_.size()); }
  int64_t low_gpu() const { return low_gpu_; }

 protected:
  Bottleneck(BottleneckConfig c, const char* dimension, const char* other_key, std::string summary,
             std::string parameters)
      : Engine(std::move(summary), std::move(parameters)), c_(c), dimension_(dimension), other_key_(other_key) {}

 private:
  BottleneckConfig c_;
  const char* dimension_;  // "CPUUtilization" or "I/OWaitPercentage"
  const char* other_key_;  // "CPUs" or "IOs" in Details.bottlenecks
  double cur_snap_ = 0;
  int64_t low_gpu_ = 0;
  bool seen_gpu_ = false;
  std::map<double, std::pair<int64_t, int64_t>> bottlenecks_;  // snapshot -> (#low GPUs, #high others)
};

class CpuBottleneck final : public Bottleneck {
 public:
  static constexpr const char* kName = "CPUBottleneck";
  static constexpr sdk::ParamSpec kParams[] = {
      param_percentile("threshold", "50", "Percentage of snapshots that must be bottlenecks for the rule to fire."),
      param_percentile("gpu_threshold", "10", "GPU utilisation (%) below which a GPU counts as idle."),
      param_percentile("cpu_threshold", "90", "Utilisation (%) of a core above which it counts as busy."),
      param_positive_int("patience", "1000", "Snapshots to collect before judging (SageMaker's docs say 100)."),
      kScanInterval,
  };
  static BottleneckConfig config(const ParamValues& p);
  explicit CpuBottleneck(BottleneckConfig c = {}, std::string parameters = {})
      : Bottleneck(c, "CPUUtilization", "CPUs", "GPUs are idle while CPU cores are saturated.", std::move(parameters)) {}
  std::string_view name() const override { return kName; }
};

class IoBottleneck final : public Bottleneck {
 public:
  static constexpr const char* kName = "IOBottleneck";
  static constexpr sdk::ParamSpec kParams[] = {
      param_percentile("threshold", "50", "Percentage of snapshots that must be bottlenecks for the rule to fire."),
      param_percentile("gpu_threshold", "10",
                       "GPU utilisation (%) below which a GPU counts as idle (SageMaker's docs wrongly say 70)."),
      param_percentile("io_threshold", "50", "I/O wait (%) above which the CPU counts as waiting on I/O."),
      param_positive_int("patience", "1000", "Snapshots to collect before judging."),
      kScanInterval,
  };
  static BottleneckConfig config(const ParamValues& p);
  explicit IoBottleneck(BottleneckConfig c = {.other_threshold = 50}, std::string parameters = {})
      : Bottleneck(c, "I/OWaitPercentage", "IOs", "GPUs are idle while the CPU waits on I/O.", std::move(parameters)) {}
  std::string_view name() const override { return kName; }
};

// ---- §3.3 ---------------------------------------------------------------------------------------
struct LowGpuUtilizationConfig {
  double threshold_p95 = 70;
  double threshold_p5 = 10;
  int64_t window = 500;
  int64_t patience = 1000;
};

class LowGpuUtilization final : public Engine {
 public:
  static constexpr const char* kName = "LowGPUUtilization";
  static constexpr sdk::ParamSpec kParams[] = {
      param_percentile("threshold_p95", "70", "A GPU whose p95 utilisation is below this is under-used."),
      param_percentile("threshold_p5", "10", "With p95 above threshold_p95, a p5 below this means fluctuating use."),
      param_positive_int("window", "500", "The latest samples per GPU whose quantiles are judged."),
      param_positive_int("patience", "1000", "Samples per GPU to collect before judging."),
      kScanInterval,
  };
  static LowGpuUtilizationConfig config(const ParamValues& p);
  explicit LowGpuUtilization(LowGpuUtilizationConfig c = {}, std::string parameters = {})
      : Engine("A GPU is under-used or its use fluctuates.", std::move(parameters)), c_(c) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

 private:
  LowGpuUtilizationConfig c_;
  PerDevice vals_;
};

// ---- §3.4 ---------------------------------------------------------------------------------------
struct GpuMemoryIncreaseConfig {
  double increase = 5;  // absolute percentage points
  int64_t patience = 1000;
  int64_t window = 10;
};

class GpuMemoryIncrease final : public Engine {
 public:
  static constexpr const char* kName = "GPUMemoryIncrease";
  static constexpr sdk::ParamSpec kParams[] = {
      param_positive("increase", "5",
                     "Rise of the moving average, in absolute percentage points, that fires (SageMaker's docs say 10)."),
      param_positive_int("patience", "1000", "Samples per GPU to collect before judging (the docs say 100)."),
      param_positive_int("window", "10", "Samples in the moving average (the docs say 500)."),
      kScanInterval,
  };
  static GpuMemoryIncreaseConfig config(const ParamValues& p);
  explicit GpuMemoryIncrease(GpuMemoryIncreaseConfig c = {}, std::string parameters = {})
      : Engine("GPU memory use rises steadily.", std::move(parameters)), c_(c) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

 private:
  GpuMemoryIncreaseConfig c_;
  PerDevice vals_;
};

// ---- §3.5 ---------------------------------------------------------------------------------------
struct BatchSizeConfig {
  double cpu_threshold_p95 = 70;
  double gpu_threshold_p95 = 70;
  double gpu_memory_threshold_p95 = 70;
  int64_t patience = 1000;
  int64_t window = 500;
  bool inside_report = false;  // Details.last_timestamp is T0 inside ProfilerReport
};

class BatchSize final : public Engine {
 public:
  static constexpr const char* kName = "BatchSize";
  static constexpr sdk::ParamSpec kParams[] = {
      param_percentile("cpu_threshold_p95", "70", "p95 of the node's average CPU utilisation below which the CPU is under-used."),
      param_percentile("gpu_threshold_p95", "70", "p95 GPU utilisation below which a GPU is under-used."),
      param_percentile("gpu_memory_threshold_p95", "70", "p95 GPU memory utilisation below which its memory is under-used."),
      param_positive_int("patience", "1000", "CPU samples per node to collect before judging (SageMaker's docs say 100)."),
      param_positive_int("window", "500", "The latest samples whose p95 is judged."),
      kScanInterval,
  };
  static BatchSizeConfig config(const ParamValues& p);
  explicit BatchSize(BatchSizeConfig c = {}, std::string parameters = {})
      : Engine("CPU, GPU and GPU memory are all under-used: the batch could be larger.", std::move(parameters)), c_(c) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

 private:
  BatchSizeConfig c_;
  PerDevice gpu_util_, gpu_mem_;
  std::set<std::string> cores_;
  std::map<std::string, std::vector<double>> cpu_;  // node -> average utilisation per timestamp
  std::optional<int64_t> first_timestamp_us_;
};

// ---- §3.6 ---------------------------------------------------------------------------------------
struct LoadBalancingConfig {
  double threshold = 0.2;  // Jensen-Shannon distance
  int64_t patience = 1000;
};

class LoadBalancing final : public Engine {
 public:
  static constexpr const char* kName = "LoadBalancing";
  static constexpr sdk::ParamSpec kParams[] = {
      param_percentile("threshold", "0.2",
                       "Jensen-Shannon distance between two GPUs' utilisation histograms above which the load is "
                       "unbalanced (the implementation's 0.2; SageMaker's rules config and docs say 0.5)."),
      param_positive_int("patience", "1000", "Samples per GPU to collect before comparing (SageMaker's docs say 10)."),
      kScanInterval,
  };
  static constexpr int kBins = 49;  // edges 0, 2, ..., 98
  static LoadBalancingConfig config(const ParamValues& p);
  explicit LoadBalancing(LoadBalancingConfig c = {}, std::string parameters = {})
      : Engine("GPUs of a node carry different workloads.", std::move(parameters)), c_(c) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

 private:
  struct Gpu {
    std::vector<double> counts = std::vector<double>(kBins, 0.0);  // cumulative histogram (additive)
    int64_t samples = 0;
  };
  LoadBalancingConfig c_;
  std::map<std::string, std::map<std::string, Gpu>> gpus_;
};

// ---- §3.7 ---------------------------------------------------------------------------------------
struct MaxInitializationTimeConfig {
  double threshold_min = 20;   // minutes
  bool inside_report = false;  // the original never advances last_timestamp there: never fires
};

class MaxInitializationTime final : public Engine {
 public:
  static constexpr const char* kName = "MaxInitializationTime";
  static constexpr sdk::ParamSpec kParams[] = {
      param_positive("threshold", "20", "Minutes after the job's first timestamp by which a step must have started."),
      kScanInterval,
  };
  static MaxInitializationTimeConfig config(const ParamValues& p);
  explicit MaxInitializationTime(MaxInitializationTimeConfig c = {}, std::string parameters = {})
      : Engine("The training loop has not started after too long.", std::move(parameters)), c_(c) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

  std::optional<double> job_start_s() const { return job_start_s_; }
  std::optional<double> job_end_s() const { return job_end_s_; }
  std::optional<int64_t> first_step_start_us() const { return first_step_us_; }
  std::optional<int64_t> last_step_end_us() const { return last_step_end_us_; }

 private:
  MaxInitializationTimeConfig c_;
  std::optional<double> job_start_s_, job_end_s_;
  std::optional<int64_t> first_step_us_, last_step_us_, last_step_end_us_;
};

// ---- §3.8 ---------------------------------------------------------------------------------------
struct StepOutlierConfig {
  double stddev = 3;
  std::optional<std::string> mode;  // an event name that counts as a step too
  int64_t n_outliers = 10;
};

class StepOutlier final : public Engine {
 public:
  static constexpr const char* kName = "StepOutlier";
  static constexpr sdk::ParamSpec kParams[] = {
      param_positive("stddev", "3",
                     "Standard deviations above the mean step duration that make a step an outlier (SageMaker's "
                     "docs say 5)."),
      sdk::param_string("mode", nullptr,
                        "An event name whose events count as steps too (the Step:ModeKeys events always do)."),
      param_positive_int("n_outliers", "10", "Outlier steps per node and phase that fire."),
      kScanInterval,
  };
  static constexpr size_t kMinDurations = 100;  // judged with more than this many durations
  static StepOutlierConfig config(const ParamValues& p);
  explicit StepOutlier(StepOutlierConfig c = {}, std::string parameters = {})
      : Engine("Some steps take unusually long.", std::move(parameters)), c_(std::move(c)) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

  // "<node> <key>" -> the outlier steps at the latest judgement.
  const std::map<std::string, std::vector<int64_t>>& outlier_steps() const { return outlier_steps_; }

 private:
  StepOutlierConfig c_;
  std::map<std::string, std::map<std::string, std::vector<double>>> dur_;     // node -> key -> seconds
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> steps_;  // node -> key -> step_num
  std::map<std::string, std::vector<int64_t>> outlier_steps_;
};

// ---- §3.9 ---------------------------------------------------------------------------------------
struct DataloaderConfig {
  double min_threshold = 70;   // % of the cores
  double max_threshold = 200;  // % of the cores
  int64_t patience = 10;       // seconds with data-loader events before judging
};

class Dataloader final : public Engine {
 public:
  static constexpr const char* kName = "Dataloader";
  static constexpr sdk::ParamSpec kParams[] = {
      param_positive("min_threshold", "70", "Fewer parallel data-loader processes than this % of the cores fires."),
      param_positive("max_threshold", "200", "More parallel data-loader processes than this % of the cores fires."),
      param_positive_int("patience", "10",
                         "Seconds with data-loader events to collect before judging (the implementation's parameter; "
                         "SageMaker's rules config does not expose it)."),
      kScanInterval,
  };
  static DataloaderConfig config(const ParamValues& p);
  explicit Dataloader(DataloaderConfig c = {}, std::string parameters = {})
      : Engine("The number of parallel data-loader processes does not suit the CPU cores.", std::move(parameters)),
        c_(c) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

  const std::vector<double>& durations_s() const { return durations_s_; }

 private:
  DataloaderConfig c_;
  std::set<std::string> cores_;
  std::vector<int64_t> parallel_;  // P: distinct pids per second
  std::vector<double> durations_s_;
  nlohmann::json pin_memory_, num_workers_, prefetch_;
};

// ---- §3.10 --------------------------------------------------------------------------------------
class OverallSystemUsage final : public Engine {
 public:
  static constexpr const char* kName = "OverallSystemUsage";
  static constexpr sdk::ParamSpec kParams[] = {kScanInterval};
  explicit OverallSystemUsage(std::string parameters = {})
      : Engine("Statistics of the system metrics (never fires).", std::move(parameters)) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

 private:
  // metric -> node -> timestamp -> sum of the values
  std::map<std::string, std::map<std::string, std::map<double, double>>> sums_;
  std::set<std::string> gpus_, cores_;
  std::optional<std::string> first_cpu_node_;
  std::optional<int64_t> summed_until_ns_;  // the last window's end: its samples are summed
};

// ---- §3.11 --------------------------------------------------------------------------------------
class OverallFrameworkMetrics final : public Engine {
 public:
  static constexpr const char* kName = "OverallFrameworkMetrics";
  static constexpr sdk::ParamSpec kParams[] = {kScanInterval};
  explicit OverallFrameworkMetrics(std::string parameters = {})
      : Engine("Where the framework's time goes (never fires).", std::move(parameters)), metrics_(true) {}
  std::string_view name() const override { return kName; }
  bool invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;

 private:
  FrameworkMetrics metrics_;
};

// An engine from validated parameters; `inside_report` gives ProfilerReport's behaviour.
template <class E>
E build_engine(const ParamValues& p, bool inside_report) {
  if constexpr (requires { E::config(p); }) {
    auto c = E::config(p);
    if constexpr (requires { c.inside_report; }) c.inside_report = inside_report;
    return E(c, p.parameters_text());
  } else {
    (void)inside_report;
    return E(p.parameters_text());
  }
}

// ---- the table ProfilerReport uses --------------------------------------------------------------
struct EngineType {
  const char* name;
  std::span<const sdk::ParamSpec> params;
  // Builds the engine from validated parameters; `inside_report` gives ProfilerReport's behaviour.
  std::unique_ptr<Engine> (*make)(const ParamValues& p, bool inside_report);
  bool configurable;  // may be named in ProfilerReport's <RuleName>_<param> keys
};

// Every engine, in ProfilerReport's sub-rule order (§3.13).
std::span<const EngineType> engine_types();
// By name, case-insensitively; nullptr when none.
const EngineType* find_engine_type(std::string_view name);

}  // namespace vigil::profiler_rules
