#include "evaluate/step_readahead.h"

#include <vigil/vigil.h>

#include <algorithm>
#include <utility>

#include "common/os.h"
#include "common/parallel.h"
#include "trial/reductions.h"

namespace vigil::evaluate {

StepReadahead::StepReadahead(std::shared_ptr<Trial> trial, std::shared_ptr<plugin_host::StepValueCache> cache,
                             std::chrono::steady_clock::duration in_place_below)
    : trial_(std::move(trial)), cache_(std::move(cache)), in_place_below_(in_place_below), worker_([this] { work(); }) {}

StepReadahead::~StepReadahead() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  posted_.notify_one();
  worker_.join();  // after the job in flight, if any
}

// Notifications are sent after unlocking, and the condition variables make no system call when
// nobody waits: a step whose readahead is done before the rules are costs no wake-up at all.
void StepReadahead::work() {
  os::block_sigpipe_on_this_thread();
  std::unique_lock lock(mu_);
  while (true) {
    posted_.wait(lock, [&] { return job_ || stopping_; });
    if (!job_) return;
    lock.unlock();
    read(*job_);  // job_ is left alone by begin_step until it is reset
    lock.lock();
    job_.reset();
    lock.unlock();
    finished_.notify_one();
    lock.lock();
  }
}

void StepReadahead::begin_step(int64_t step, std::optional<int64_t> next) {
  {
    std::unique_lock lock(mu_);
    finished_.wait(lock, [&] { return !job_; });
  }
  auto pattern = cache_->advance(step);  // what the rules read at the previous step
  const std::optional<int64_t> previous = last_step_;
  last_step_ = step;
  if (!next || !previous || pattern.empty()) return;
  ++steps_read_ahead_;
  Job job{.previous = *previous, .next = *next, .pattern = std::move(pattern)};
  if (last_job_took_ < in_place_below_) {  // the thread is idle here, so last_job_took_ is settled
    ++steps_read_in_place_;
    read(job);
    return;
  }
  {
    std::lock_guard lock(mu_);
    job_ = std::move(job);
  }
  posted_.notify_one();
}

// Repeats the pattern read at global step `job.previous` for global step `job.next`. Reads of
// other steps (a rule looking back) are not repeated; errors are left for the rule's own read to
// report.
void StepReadahead::read(const Job& job) {
  const auto started = std::chrono::steady_clock::now();
  const auto previous_mode = trial_->mode_modestep(job.previous);
  const auto next_mode = trial_->mode_modestep(job.next);
  std::vector<plugin_host::StepValueCache::Access> reads;  // the pattern, moved to job.next
  reads.reserve(job.pattern.size());
  for (auto access : job.pattern) {
    auto& [trial, name, worker, step, mode] = access.key;
    if (trial != trial_.get()) continue;
    if (mode == Mode::Global) {
      if (step != job.previous) continue;
      step = job.next;
    } else {
      if (!previous_mode || !next_mode || *previous_mode != std::pair{mode, step} || next_mode->first != mode) continue;
      step = next_mode->second;
    }
    reads.push_back(access);
  }
  auto read_one = [&](const plugin_host::StepValueCache::Access& access) {
    const auto& [trial, name_id, worker_id, step, mode] = access.key;
    const std::string_view name = cache_->text(name_id);
    const std::optional<std::string_view> w = worker_id == plugin_host::StepValueCache::kDefaultWorker
                                                  ? std::nullopt
                                                  : std::optional<std::string_view>(cache_->text(worker_id));
    if (access.reduction == plugin_host::StepValueCache::kValue) {
      if (cache_->find(access.key)) return;
      if (auto v = trial_->value(name, step, mode, w)) cache_->put(access.key, std::move(*v), job.next);
    } else {
      if (cache_->find_reduction(access.key, access.reduction, access.abs)) return;
      const auto op = kAllReductionOps[access.reduction - VIGIL_RED_MIN];
      if (auto r = trial_->reduction_value(name, step, reduction_name(op), access.abs, mode, w))
        cache_->put_reduction(access.key, access.reduction, access.abs, r->value, job.next);
    }
  };
  // A local read takes microseconds; a read from an object store is a round trip, so those of one
  // step are made side by side (parallel ranged GETs).
  for_each_in_parallel(reads.size(), trial_->is_local() ? 1 : kRemoteReadThreads,
                       [&](size_t k) { read_one(reads[k]); });
  last_job_took_ = std::chrono::steady_clock::now() - started;
}

}  // namespace vigil::evaluate
