// Framework-metric aggregation (builtin-rules §3.11, §3.12): trace-event time by category (CPU and
// GPU operators per phase, step phases, forward/backward, general phases, Horovod), shared by
// OverallFrameworkMetrics and the Details of CPUBottleneck, IOBottleneck and StepOutlier.
#pragma once

#include <vigil/sdk/profiler.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

namespace vigil::profiler_rules {

class FrameworkMetrics {
 public:
  // `with_others`: OverallFrameworkMetrics' step_phases["others"] bookkeeping (§3.11).
  explicit FrameworkMetrics(bool with_others = false) : with_others_(with_others) {}

  void add(const sdk::FrameworkEvent& e);
  // The report part: ratio, CPU, CPU_total, GPU, GPU_total, phase, general, forward_backward, horovod
  // (percentages; operator and Horovod shares of 2 % or less dropped, the rest renormalised).
  nlohmann::json to_json() const;

  double cpu_total_us() const;
  double gpu_total_us() const;
  const std::map<std::string, double>& step_phases() const { return step_phases_; }

 private:
  bool with_others_;
  std::map<std::string, std::map<std::string, double>> cpu_, gpu_;  // phase -> operator -> µs
  std::map<std::string, double> step_phases_, general_, horovod_;
  double forward_ = 0, backward_ = 0;
  std::optional<int64_t> first_step_start_, last_step_end_;
};

// The events that contain time `b` (start < b < end; §3.12 with a begin time only).
void add_events_containing(FrameworkMetrics& m, std::span<const sdk::FrameworkEvent> events, int64_t b_us);
// The events overlapping [b, e] (end >= b and start <= e).
void add_events_overlapping(FrameworkMetrics& m, std::span<const sdk::FrameworkEvent> events, int64_t b_us,
                            int64_t e_us);

// A field of an event's args_json: nullopt when absent or when the text is not a JSON object.
std::optional<nlohmann::json> event_arg(const sdk::FrameworkEvent& e, const char* key);
// args.step_num as an integer, when present.
std::optional<int64_t> event_step_num(const sdk::FrameworkEvent& e);

}  // namespace vigil::profiler_rules
