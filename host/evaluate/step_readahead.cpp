#include "evaluate/step_readahead.h"

#include <utility>

#include "trial/reductions.h"

namespace vigil::evaluate {

StepReadahead::StepReadahead(std::shared_ptr<Trial> trial, std::shared_ptr<plugins::StepValueCache> cache)
    : trial_(std::move(trial)), cache_(std::move(cache)) {}

StepReadahead::~StepReadahead() {
  if (in_flight_.valid()) in_flight_.wait();
}

void StepReadahead::begin_step(int64_t step, std::optional<int64_t> next) {
  if (in_flight_.valid()) in_flight_.wait();
  auto pattern = cache_->advance(step);  // what the rules read at the previous step
  const std::optional<int64_t> previous = last_step_;
  last_step_ = step;
  if (!next || !previous || pattern.empty()) return;
  ++steps_read_ahead_;
  in_flight_ = std::async(std::launch::async, [this, previous = *previous, next = *next, p = std::move(pattern)]() mutable {
    read(previous, next, std::move(p));
  });
}

// Repeats `pattern` (read at global step `previous`) for global step `next`. Reads of other steps
// (a rule looking back) are not repeated; errors are left for the rule's own read to report.
void StepReadahead::read(int64_t previous, int64_t next, std::vector<plugins::StepValueCache::Access> pattern) {
  const auto previous_mode = trial_->mode_modestep(previous);
  const auto next_mode = trial_->mode_modestep(next);
  for (auto& access : pattern) {
    auto& [trial, name, step, mode, worker] = access.key;
    if (trial != trial_.get()) continue;
    if (mode == Mode::Global) {
      if (step != previous) continue;
      step = next;
    } else {
      if (!previous_mode || !next_mode || *previous_mode != std::pair{mode, step} || next_mode->first != mode) continue;
      step = next_mode->second;
    }
    const std::optional<std::string_view> w = worker.empty() ? std::nullopt : std::optional<std::string_view>(worker);
    if (access.reduction == plugins::StepValueCache::kValue) {
      if (cache_->find(access.key)) continue;
      if (auto v = trial_->value(name, step, mode, w)) cache_->put(access.key, std::move(*v), next);
    } else {
      if (cache_->find_reduction(access.key, access.reduction, access.abs)) continue;
      const auto op = kAllReductionOps[access.reduction - VIGIL_RED_MIN];
      if (auto r = trial_->reduction_value(name, step, reduction_name(op), access.abs, mode, w))
        cache_->put_reduction(access.key, access.reduction, access.abs, r->value, next);
    }
  }
}

}  // namespace vigil::evaluate
