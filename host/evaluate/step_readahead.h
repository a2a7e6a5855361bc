// Readahead for the evaluator: while the rules run on step N, a second thread reads (and reduces)
// for step N+1 what the rules read at step N-1, into the shared step cache, so that reading and
// decoding overlap the rules' own work and both cores are busy when there is work for both. The
// thread is started once and lives as long as the readahead: a run of 100,000 small steps must not
// create a thread per step. When a step's readahead is cheaper than handing it to the thread (a few
// small tensors), it is done in place instead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "plugin_host/step_value_cache.h"
#include "trial/trial.h"

namespace vigil::evaluate {

class StepReadahead {
 public:
  // A readahead that took less than `in_place_below` last time is done in place: waking the thread
  // and waiting for it costs a few microseconds and two context switches.
  static constexpr std::chrono::microseconds kInPlaceBelow{50};
  // Reads of one step from an object store made at once (ranged GETs in flight).
  static constexpr size_t kRemoteReadThreads = 8;

  StepReadahead(std::shared_ptr<Trial> trial, std::shared_ptr<plugin_host::StepValueCache> cache,
                std::chrono::steady_clock::duration in_place_below = kInPlaceBelow);
  ~StepReadahead();  // waits for the readahead in flight, then ends the thread
  StepReadahead(const StepReadahead&) = delete;
  StepReadahead& operator=(const StepReadahead&) = delete;

  // The rules are about to run at global `step`: waits for the readahead of `step`, drops what
  // earlier steps read, and starts reading `next` (a complete step, or nothing) in the background.
  void begin_step(int64_t step, std::optional<int64_t> next);

  size_t steps_read_ahead() const { return steps_read_ahead_; }
  // Of those, how many were read in place rather than by the thread.
  size_t steps_read_in_place() const { return steps_read_in_place_; }

 private:
  struct Job {
    int64_t previous;
    int64_t next;
    std::vector<plugin_host::StepValueCache::Access> pattern;
  };
  void work();
  void read(const Job& job);

  std::shared_ptr<Trial> trial_;
  std::shared_ptr<plugin_host::StepValueCache> cache_;
  std::optional<int64_t> last_step_;
  size_t steps_read_ahead_ = 0;
  size_t steps_read_in_place_ = 0;
  const std::chrono::steady_clock::duration in_place_below_;
  std::chrono::steady_clock::duration last_job_took_{};  // written by whoever ran the last job

  std::mutex mu_;
  std::condition_variable posted_;    // a job was posted, or the thread is asked to stop
  std::condition_variable finished_;  // the job was finished
  std::optional<Job> job_;            // posted, not yet finished
  bool stopping_ = false;
  std::thread worker_;                // last: started once everything it uses exists
};

}  // namespace vigil::evaluate
