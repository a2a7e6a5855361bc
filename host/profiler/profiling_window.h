// Whether a framework-profiling config (DetailedProfilingConfig, PythonProfilingConfig, ...) is
// active at a step, with smdebug's rules (format spec §8.4): a step range is active while
// start <= step < start + num, an omitted start meaning the step of the first check; a time range
// while start <= now < start + duration, and with no duration only for the step at which the start
// time is first reached.
#pragma once

#include <cstdint>
#include <optional>

#include "profiler/profiler_config.h"

namespace vigil::profiler {

class ProfilingWindow {
 public:
  explicit ProfilingWindow(MetricsConfig config) : config_(std::move(config)) {}
  // `now_s`: seconds since the epoch. Not thread-safe (the first check fixes omitted starts).
  bool is_active(int64_t step, double now_s);
  // True once the window can never be active again (a step range passed, a time range over).
  bool has_ended(int64_t step, double now_s) const;
  const MetricsConfig& config() const { return config_; }

 private:
  MetricsConfig config_;
  std::optional<int64_t> first_step_;       // the step of the first check (omitted StartStep)
  std::optional<int64_t> start_time_step_;  // the step at which start_time was first reached
};

}  // namespace vigil::profiler
