// Readahead for the evaluator: while the rules run on step N, a second thread reads (and reduces)
// for step N+1 what the rules read at step N-1, into the shared step cache, so that reading and
// decoding overlap the rules' own work and both cores are busy when there is work for both.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>

#include "plugin_host/host_services.h"
#include "trial/trial.h"

namespace vigil::evaluate {

class StepReadahead {
 public:
  StepReadahead(std::shared_ptr<Trial> trial, std::shared_ptr<plugins::StepValueCache> cache);
  ~StepReadahead();  // waits for the readahead in flight
  StepReadahead(const StepReadahead&) = delete;
  StepReadahead& operator=(const StepReadahead&) = delete;

  // The rules are about to run at global `step`: waits for the readahead of `step`, drops what
  // earlier steps read, and starts reading `next` (a complete step, or nothing) in the background.
  void begin_step(int64_t step, std::optional<int64_t> next);

  size_t steps_read_ahead() const { return steps_read_ahead_; }

 private:
  void read(int64_t previous, int64_t next, std::vector<plugins::StepValueCache::Access> pattern);

  std::shared_ptr<Trial> trial_;
  std::shared_ptr<plugins::StepValueCache> cache_;
  std::future<void> in_flight_;
  std::optional<int64_t> last_step_;
  size_t steps_read_ahead_ = 0;
};

}  // namespace vigil::evaluate
