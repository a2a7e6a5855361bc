#include "profiler/profiling_window.h"

namespace vigil::profiler {

bool ProfilingWindow::is_active(int64_t step, double now_s) {
  if (!config_.enabled) return false;
  if (config_.is_time_range()) {
    if (now_s < *config_.start_time) return false;
    if (config_.duration) return now_s < *config_.start_time + *config_.duration;
    if (!start_time_step_) start_time_step_ = step;
    return step == *start_time_step_;
  }
  if (!first_step_) first_step_ = step;
  const int64_t start = config_.start_step.value_or(*first_step_);
  return start <= step && step - start < config_.num_steps;
}

bool ProfilingWindow::has_ended(int64_t step, double now_s) const {
  if (!config_.enabled) return true;
  if (config_.is_time_range()) {
    if (config_.duration) return now_s >= *config_.start_time + *config_.duration;
    return start_time_step_ && step > *start_time_step_;
  }
  if (!config_.start_step && !first_step_) return false;
  const int64_t start = config_.start_step.value_or(first_step_.value_or(0));
  return step - start >= config_.num_steps;
}

}  // namespace vigil::profiler
