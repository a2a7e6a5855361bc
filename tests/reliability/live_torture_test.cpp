// Live reading: a reader follows a trial that writer processes (crash_writer) are extending, one
// worker or two, with random pauses of 0-2 ms between steps (none for a third of them, and 10-40 ms
// after one step in 32, where a reader that fell behind catches up). The reader works as the evaluator's
// run loop does (wait_for_steps for the next step, then the step's queries under hold_refresh) and
// probes around it (has_passed_step, steps(), values of the step still being written). It must see
// every step exactly once and in order, only once every worker has written it, with exact values,
// and no error but "not yet available" for steps in progress.
//
// VIGIL_TORTURE_LIVE_STEPS (default 2000) sets the single-worker steps, half of it the two-worker
// steps; VIGIL_TORTURE_SEED replays the writers' pauses.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "torture_support.h"
#include "writer_process.h"

namespace vigil::torture {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int64_t kLiveBigElements = 256;
constexpr int64_t kMaxStepDelayUs = 2000;
constexpr auto kStepTimeout = 30s;  // a step that takes this long means the reader missed it

// The job around the writer processes: reaps them and, once all are done, writes the end marker
// (with two workers the marker is the job's, see crash_test.cpp). Failures are kept for the test.
class WriterJob {
 public:
  WriterJob(const fs::path& dir, int workers, int64_t steps, uint64_t seed) {
    for (int w = 0; w < workers; ++w) {
      std::vector<std::string> args{"--dir", dir.string(), "--steps", std::to_string(steps), "--worker-index",
                                    std::to_string(w), "--num-workers", std::to_string(workers), "--big-elements",
                                    std::to_string(kLiveBigElements), "--max-step-delay-us",
                                    std::to_string(kMaxStepDelayUs), "--seed", std::to_string(seed)};
      if (workers > 1) args.push_back("--no-end-marker");
      procs_.push_back(std::make_unique<WriterProcess>(args));
    }
    reaper_ = std::thread([this, dir, workers] {
      for (int w = 0; w < workers; ++w) {
        auto& p = *procs_[size_t(w)];
        if (!p.started() || !p.exited_cleanly())
          failures_ += worker_name(w) + (p.started() ? " ended with " + p.describe_end() : " did not start") + "; ";
      }
      // Written even after a failure, so that the reader ends instead of waiting for more steps.
      if (workers > 1 || !failures_.empty()) std::ofstream(dir / format::kEndOfTrainingMarker);
    });
  }
  ~WriterJob() {
    if (reaper_.joinable()) reaper_.join();
  }
  // Waits for the writers; what went wrong with them, empty when nothing.
  std::string finish() {
    if (reaper_.joinable()) reaper_.join();
    return failures_;
  }

 private:
  std::vector<std::unique_ptr<WriterProcess>> procs_;
  std::thread reaper_;
  std::string failures_;
};

void follow_live_trial(int workers, int64_t steps) {
  test::ScratchDir scratch("vigil-torture");
  const fs::path trial_dir = scratch / "trial";
  const uint64_t seed = seed_from_env();
  const auto started = Clock::now();
  fs::create_directories(trial_dir);  // the job's output folder exists before the training starts
  WriterJob job(trial_dir, workers, steps, seed);

  TrialOptions options;
  options.collections_timeout = kStepTimeout;
  // Keeps smdebug's incomplete-step window (§5.3 b) from declaring steps complete while one
  // worker runs more than 1000 steps ahead of the other (possible in long runs).
  options.incomplete_step_wait_window = std::max<int64_t>(1000, steps + 1);
  auto opened = Trial::open(trial_dir, options);
  ASSERT_VIGIL_OK(opened);
  Trial& trial = **opened;
  ASSERT_EQ(trial.num_workers(), workers);

  std::vector<std::string> all_workers;
  for (int w = 0; w < workers; ++w) all_workers.push_back(worker_name(w));
  std::vector<int64_t> seen;
  int64_t last_complete = -1;
  int64_t in_progress_values = 0;  // values of a not yet complete step that were already readable
  Clock::duration longest_wait{};
  int64_t at_frontier = 0;  // steps the reader asked for before it knew them complete
  for (int64_t step = 0;; ++step) {
    if (trial.last_complete_step() < step) ++at_frontier;
    const auto wait_started = Clock::now();
    auto waited = trial.wait_for_steps({step}, Mode::Global, {}, kStepTimeout);
    longest_wait = std::max(longest_wait, Clock::now() - wait_started);
    if (!waited) {
      ASSERT_EQ(waited.error().code, ErrorCode::NoMoreData) << "step " << step << ": " << waited.error().message;
      ASSERT_EQ(waited.error().last_step, steps - 1);
      break;
    }
    ASSERT_LT(step, steps) << "a step past the end was reported available";

    // The rule's view of the step: frozen, complete, exact for every worker.
    trial.hold_refresh();
    auto state = trial.has_passed_step(step);
    ASSERT_VIGIL_OK(state);
    ASSERT_EQ(*state, StepState::Available);
    auto holders = trial.tensor_workers("big/weight", step);
    ASSERT_VIGIL_OK(holders);
    std::sort(holders->begin(), holders->end());
    ASSERT_EQ(*holders, all_workers) << "step " << step << " was reported complete before every worker wrote it";
    for (int w = 0; w < workers; ++w) {
      auto problem = check_step(trial, step, w, kLiveBigElements);
      ASSERT_FALSE(problem) << *problem;
    }
    trial.release_refresh();
    seen.push_back(step);

    // Refreshing probes around the step, as rules make them; not at every step, so that the reader
    // keeps up with the writers and mostly waits at the step being written.
    if (step % 4 != 0) continue;
    auto next_state = trial.has_passed_step(step + 1);
    ASSERT_VIGIL_OK(next_state);
    // Unavailable only past the last step, once the end marker is seen.
    if (step + 1 < steps) {
      ASSERT_NE(*next_state, StepState::Unavailable) << "step " << step + 1;
    }
    for (int w = 0; w < workers; ++w) {
      // The step being written: one worker's data may already be indexed, and then it is whole.
      auto early = trial.value("big/weight", step + 1, Mode::Global, worker_name(w));
      if (early) {
        ++in_progress_values;
        auto problem = check_step(trial, step + 1, w, kLiveBigElements);
        ASSERT_FALSE(problem) << *problem;
      } else {
        const ErrorCode code = early.error().code;
        ASSERT_TRUE(code == ErrorCode::StepNotYetAvailable || code == ErrorCode::InvalidWorker ||
                    (code == ErrorCode::StepUnavailable && step + 1 == steps) ||
                    (code == ErrorCode::NoMoreData && step + 1 == steps))
            << "step " << step + 1 << ": " << early.error().message;
      }
    }
    if (step % 16 == 0) {
      auto complete = trial.steps();
      ASSERT_VIGIL_OK(complete);
      ASSERT_FALSE(complete->empty());
      ASSERT_EQ(complete->front(), 0);
      ASSERT_EQ(complete->back(), int64_t(complete->size()) - 1) << "complete steps have a gap";
      ASSERT_GE(complete->back(), step);
      const int64_t now_complete = trial.last_complete_step();
      ASSERT_GE(now_complete, last_complete) << "last_complete_step went back";
      last_complete = now_complete;
    }
  }
  const std::string failures = job.finish();
  ASSERT_TRUE(failures.empty()) << failures;
  ASSERT_EQ(int64_t(seen.size()), steps);
  for (int64_t i = 0; i < steps; ++i) ASSERT_EQ(seen[size_t(i)], i);
  ASSERT_TRUE(trial.training_ended());
  ASSERT_TRUE(trial.loaded_all_steps());
  std::printf("[ torture  ] live, %d worker(s), seed %llu: %lld steps followed in %.1f s, %lld asked for before "
              "they were known complete, %lld values of steps still being written read whole, longest wait for "
              "one step %.1f ms\n",
              workers, (unsigned long long)seed, (long long)steps,
              std::chrono::duration<double>(Clock::now() - started).count(), (long long)at_frontier,
              (long long)in_progress_values, std::chrono::duration<double, std::milli>(longest_wait).count());
}

TEST(LiveReadTorture, OneWriterProcess) {
  follow_live_trial(1, count_from_env("VIGIL_TORTURE_LIVE_STEPS", 2000));
}

TEST(LiveReadTorture, TwoWorkerProcesses) {
  follow_live_trial(2, count_from_env("VIGIL_TORTURE_LIVE_STEPS", 2000) / 2);
}

}  // namespace
}  // namespace vigil::torture
