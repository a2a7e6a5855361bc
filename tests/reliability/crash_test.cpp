// Crash-safe writing: writer processes (crash_writer, fork + exec) are killed with SIGKILL at random
// points, over and over, and restarted with TrialWriter::resume() until their trial is complete.
// After every kill the trial is checked on disk (PublishedFiles) and through Trial: every step the
// reader calls complete has exactly the values written, no torn record is reachable, the step in
// progress is only "not yet available", and published files never change. At the end of each trial
// a fresh reader must find every step with exact values and no file the writers left behind.
//
// VIGIL_TORTURE_KILLS (default 200 per test) raises the number of kills for long runs;
// VIGIL_TORTURE_SEED replays a run (the seed is printed).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "torture_support.h"
#include "writer_process.h"

namespace vigil::torture {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kNoProgressTimeout = 30s;  // a writer that reports nothing for this long is stuck
// How long after a writer starts publishing a step a kill is aimed: its renames, index and (after
// the first step) collections file take a few hundred microseconds.
constexpr double kPublicationWindowUs = 600;

struct CrashRun {
  int workers = 1;
  int64_t steps = 10;  // per trial
  int64_t big_elements = 0;
  int64_t kills = 200;
  uint64_t seed = 0;
};

struct Tally {
  int64_t kills = 0;             // rounds in which at least one writer died of our SIGKILL
  int64_t processes_killed = 0;
  int64_t rounds = 0;
  int64_t trials = 0;            // trials written to the end through kills and resumes
  int64_t unopenable = 0;        // rounds after which the collections were not all published yet
  int64_t steps_verified = 0;    // (step, worker) pairs whose values were compared
  std::map<std::string, int64_t> phases;  // where killed writers were, from the files they left
};

fs::path with_tmp(const fs::path& p) {
  fs::path t = p;
  t += format::kTmpSuffix;
  return t;
}

// Where worker `w` was in its work when it was killed, from what it left on disk.
std::string kill_phase(const fs::path& root, int w, int64_t in_progress, int64_t steps) {
  const std::string worker = worker_name(w);
  if (fs::exists(with_tmp(root / format::kEndOfTrainingMarker))) return "writing the end marker";
  if (fs::exists(with_tmp(root / format::collections_file_relpath(worker)))) return "writing the collections file";
  if (in_progress > 0 && !fs::exists(root / format::collections_file_relpath(worker)))
    return "steps published, its collections file not yet";
  if (in_progress >= steps) return "closing, after its last step";
  if (fs::exists(with_tmp(root / format::index_file_relpath(in_progress, worker))))
    return "index .tmp written, not yet renamed";
  if (fs::exists(root / format::event_file_relpath(in_progress, worker))) return "event file renamed, index not yet";
  if (fs::exists(with_tmp(root / format::event_file_relpath(in_progress, worker))))
    return "event file .tmp being written";
  return "no file of its step yet";
}

// 0, 1, ..., count - 1.
std::vector<int64_t> first_steps(int64_t count) {
  std::vector<int64_t> out(size_t(std::max<int64_t>(count, 0)));
  std::iota(out.begin(), out.end(), 0);
  return out;
}

// Picks when to kill a writer process and waits until then.
class KillAim {
 public:
  explicit KillAim(std::mt19937_64& rng) : rng_(rng) {}

  // Returns at a random point of `leader`'s work, at most `max_ahead` steps after the one it
  // reports first (of a trial of `steps` steps); the caller then kills.
  void wait_for_kill_point(WriterProcess& leader, int64_t steps, int64_t max_ahead) {
    const uint64_t plan = rng_() % 10;
    if (plan < 2) {
      // Blind: anywhere from the exec itself to a few steps in, log-uniformly.
      const double us = std::exp(std::uniform_real_distribution<double>(std::log(20.0), std::log(20000.0))(rng_));
      std::this_thread::sleep_for(std::chrono::microseconds(int64_t(us)));
      return;
    }
    // Aimed: follow the leader to a step a little ahead, then return somewhere inside that step,
    // or just as the step is published (its renames and index, then the collections file after
    // the first step, the end marker after the last): short windows a blind kill rarely hits.
    auto first = leader.next_progress(kNoProgressTimeout);
    if (!first) return;  // it ended (done, or failed: the caller finds out)
    const bool at_publication = plan >= 6;
    const int64_t target = std::min(first->step + int64_t(rng_() % uint64_t(max_ahead + 1)), steps - 1);
    WriterProcess::Progress at = *first;
    auto began = Clock::now();
    while (at.step != target || at.publishing != at_publication) {
      auto next = leader.next_progress(kNoProgressTimeout);
      if (!next) return;
      if (!next->publishing) {
        const auto now = Clock::now();
        const double us = double(std::chrono::duration_cast<std::chrono::microseconds>(now - began).count());
        step_estimate_us_ = 0.7 * step_estimate_us_ + 0.3 * us;
        began = now;
      }
      at = *next;
    }
    const double window_us = at_publication ? kPublicationWindowUs : 1.5 * step_estimate_us_;
    std::this_thread::sleep_for(
        std::chrono::microseconds(int64_t(std::uniform_real_distribution<double>(0, window_us)(rng_))));
  }

 private:
  std::mt19937_64& rng_;
  double step_estimate_us_ = 5000;  // how long a step takes, measured as the leader reports them
};

class CrashTorture {
 public:
  explicit CrashTorture(CrashRun run) : run_(run), rng_(run.seed) {}

  void run() {
    const auto started = Clock::now();
    while (tally_.kills < run_.kills) {
      ASSERT_NO_FATAL_FAILURE(one_trial());
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    std::string phases;
    for (const auto& [phase, n] : tally_.phases) phases += fmt::format("\n    {:>5}  {}", n, phase);
    std::printf(
        "[ torture  ] %d worker(s), seed %llu: %lld kills (%lld processes) in %lld rounds over %lld trials of %lld "
        "steps (%lld-element float32 tensor), %lld rounds before the collections were published, %lld "
        "(step, worker) checks, %.1f s\n  killed while:%s\n",
        run_.workers, (unsigned long long)run_.seed, (long long)tally_.kills, (long long)tally_.processes_killed,
        (long long)tally_.rounds, (long long)tally_.trials, (long long)run_.steps, (long long)run_.big_elements,
        (long long)tally_.unopenable, (long long)tally_.steps_verified, seconds, phases.c_str());
  }

 private:
  std::vector<std::string> writer_args(const fs::path& dir, int w) const {
    std::vector<std::string> args{"--dir", dir.string(), "--steps", std::to_string(run_.steps), "--worker-index",
                                  std::to_string(w), "--num-workers", std::to_string(run_.workers),
                                  "--big-elements", std::to_string(run_.big_elements)};
    // Two workers: the end marker is the job's, written once both are done (a worker that wrote
    // it on its own close would end the trial for readers while the other is still writing).
    if (run_.workers > 1) args.push_back("--no-end-marker");
    return args;
  }

  void one_trial() {
    test::ScratchDir scratch("vigil-torture");
    const fs::path root = scratch / "trial";  // made by the first writer process
    std::vector<bool> finished(size_t(run_.workers), false);
    PublishedFiles files(root, run_.workers);
    Follower follower;
    int64_t verified_up_to = -1;  // complete steps a fresh reader has already compared
    while (std::find(finished.begin(), finished.end(), false) != finished.end()) {
      ASSERT_NO_FATAL_FAILURE(kill_round(root, finished, files));
      ASSERT_NO_FATAL_FAILURE(check_after_kill(root, files, follower, verified_up_to));
    }
    if (run_.workers > 1) {
      std::ofstream marker(root / format::kEndOfTrainingMarker);
    }
    ASSERT_NO_FATAL_FAILURE(check_finished(root, files, follower));
    ++tally_.trials;
  }

  // Starts the unfinished writers, kills them at a random point, reaps them.
  void kill_round(const fs::path& root, std::vector<bool>& finished, PublishedFiles& files) {
    ++tally_.rounds;
    std::vector<std::unique_ptr<WriterProcess>> procs(size_t(run_.workers));
    std::vector<int> live;
    for (int w = 0; w < run_.workers; ++w) {
      if (finished[size_t(w)]) continue;
      procs[size_t(w)] = std::make_unique<WriterProcess>(writer_args(root, w));
      ASSERT_TRUE(procs[size_t(w)]->started()) << "fork failed";
      live.push_back(w);
    }
    WriterProcess& leader = *procs[size_t(live[rng_() % live.size()])];
    aim_.wait_for_kill_point(leader, run_.steps, 2);
    for (int w : live) procs[size_t(w)]->kill();

    bool any_killed = false;
    std::vector<int> killed;
    for (int w : live) {
      WriterProcess& p = *procs[size_t(w)];
      if (p.killed_by_us()) {
        any_killed = true;
        killed.push_back(w);
        ++tally_.processes_killed;
      } else {
        ASSERT_TRUE(p.exited_cleanly()) << worker_name(w) << " ended with " << p.describe_end();
        finished[size_t(w)] = true;
      }
    }
    if (any_killed) ++tally_.kills;
    ASSERT_NO_FATAL_FAILURE(files.scan());
    for (int w : killed)
      ++tally_.phases[kill_phase(root, w, files.last_published(w) + 1, run_.steps)];
    // One worker alone writes the end marker last: once it is there, that worker is done.
    if (run_.workers == 1 && fs::exists(root / format::kEndOfTrainingMarker)) finished[0] = true;
  }

  struct Follower {
    std::shared_ptr<Trial> trial;  // opened once possible, then only refreshed
    int64_t verified_up_to = -1;
  };

  static TrialOptions no_wait_options() {
    TrialOptions options;
    options.collections_timeout = 0ms;
    options.poll_interval = 1ms;
    return options;
  }

  void verify_step(Trial& trial, int64_t step, int w) {
    auto problem = check_step(trial, step, w, run_.big_elements);
    ASSERT_FALSE(problem) << *problem;
    ++tally_.steps_verified;
  }

  void verify_complete_steps(Trial& trial, int64_t last_complete, int64_t& verified_up_to, const char* who) {
    auto steps = trial.steps();
    ASSERT_TRUE(steps) << who << ": " << steps.error().message;
    ASSERT_EQ(*steps, first_steps(last_complete + 1)) << who << ": complete steps";
    ASSERT_EQ(trial.last_complete_step(), last_complete) << who;
    for (int64_t s = verified_up_to + 1; s <= last_complete; ++s) {
      auto names = trial.tensor_names({.step = s});
      ASSERT_VIGIL_OK(names);
      ASSERT_EQ(std::set<std::string>(names->begin(), names->end()), tensor_names()) << who << " step " << s;
      for (int w = 0; w < run_.workers; ++w) ASSERT_NO_FATAL_FAILURE(verify_step(trial, s, w));
    }
    verified_up_to = std::max(verified_up_to, last_complete);
  }

  void check_after_kill(const fs::path& root, PublishedFiles& files, Follower& follower, int64_t& verified_up_to) {
    const bool ended = fs::exists(root / format::kEndOfTrainingMarker);
    int64_t last_complete = files.last_published(0);
    int64_t last_any = last_complete;
    for (int w = 1; w < run_.workers; ++w) {
      last_complete = std::min(last_complete, files.last_published(w));
      last_any = std::max(last_any, files.last_published(w));
    }
    bool all_collections = true;
    for (int w = 0; w < run_.workers; ++w)
      all_collections = all_collections && fs::exists(root / format::collections_file_relpath(worker_name(w)));

    auto opened = Trial::open(root, no_wait_options());
    if (!opened) {
      // The only ways a killed trial may not open: killed before it made the trial's folder, or
      // before a worker's collections file was published.
      if (!fs::exists(root)) {
        ASSERT_EQ(opened.error().code, ErrorCode::Io) << opened.error().message;
        ++tally_.unopenable;
        return;
      }
      ASSERT_EQ(opened.error().code, ErrorCode::Timeout) << opened.error().message;
      ASSERT_FALSE(all_collections) << opened.error().message;
      ++tally_.unopenable;
      return;
    }
    Trial& trial = **opened;
    ASSERT_TRUE(all_collections);
    ASSERT_NO_FATAL_FAILURE(verify_complete_steps(trial, last_complete, verified_up_to, "fresh reader"));
    // The newest complete step again, through this reader (the loop above may have skipped it).
    if (last_complete >= 0) {
      for (int w = 0; w < run_.workers; ++w) ASSERT_NO_FATAL_FAILURE(verify_step(trial, last_complete, w));
    }

    // Steps some workers published: each of those workers' data exact, the others' absent.
    auto known = trial.steps(Mode::Global, true);
    ASSERT_TRUE(known);
    ASSERT_EQ(*known, first_steps(last_any + 1));
    for (int64_t s = last_complete + 1; s <= last_any; ++s) {
      auto state = trial.has_passed_step(s);
      ASSERT_TRUE(state);
      ASSERT_EQ(*state, StepState::NotYetAvailable) << "incomplete step " << s;
      for (int w = 0; w < run_.workers; ++w) {
        if (files.last_published(w) >= s) {
          ASSERT_NO_FATAL_FAILURE(verify_step(trial, s, w));
        } else {
          auto missing = trial.value("scalar/loss", s, Mode::Global, worker_name(w));
          ASSERT_FALSE(missing);
          ASSERT_EQ(missing.error().code, ErrorCode::InvalidWorker) << missing.error().message;
        }
      }
    }
    // The step no worker has published yet.
    const int64_t next = last_any + 1;
    if (!ended) {
      auto state = trial.has_passed_step(next);
      ASSERT_VIGIL_OK(state);
      ASSERT_EQ(*state, StepState::NotYetAvailable);
      auto value = trial.value("scalar/loss", next);
      ASSERT_FALSE(value);
      ASSERT_EQ(value.error().code, ErrorCode::StepNotYetAvailable) << value.error().message;
      auto waited = trial.wait_for_steps({next}, Mode::Global, {}, 0ms);
      ASSERT_FALSE(waited);
      ASSERT_EQ(waited.error().code, ErrorCode::Timeout) << waited.error().message;
    }

    // A reader that has followed the trial since it first opened, through every kill and resume.
    if (!follower.trial) {
      follower.trial = std::move(*opened);
      follower.verified_up_to = verified_up_to;
      return;
    }
    auto refreshed = follower.trial->refresh();
    ASSERT_VIGIL_OK(refreshed);
    ASSERT_NO_FATAL_FAILURE(verify_complete_steps(*follower.trial, last_complete, follower.verified_up_to, "follower"));
  }

  void check_finished(const fs::path& root, PublishedFiles& files, Follower& follower) {
    ASSERT_NO_FATAL_FAILURE(files.scan());
    for (int w = 0; w < run_.workers; ++w) ASSERT_EQ(files.last_published(w), run_.steps - 1) << worker_name(w);
    // Nothing left behind: no .tmp file, and no event file that no index names.
    for (const auto& rel : test::list_files(root)) {
      ASSERT_FALSE(rel.ends_with(format::kTmpSuffix)) << rel << " was left behind";
      if (rel.starts_with("events/")) {
        ASSERT_TRUE(files.referenced_event_files().contains(rel)) << rel << " is an orphan";
      }
    }
    auto opened = Trial::open(root, no_wait_options());
    ASSERT_VIGIL_OK(opened);
    Trial& trial = **opened;
    int64_t none_verified = -1;
    ASSERT_NO_FATAL_FAILURE(verify_complete_steps(trial, run_.steps - 1, none_verified, "final reader"));
    ASSERT_TRUE(trial.loaded_all_steps());
    ASSERT_TRUE(trial.training_ended());
    auto after = trial.value("scalar/loss", run_.steps);
    ASSERT_FALSE(after);
    ASSERT_EQ(after.error().code, ErrorCode::StepUnavailable) << after.error().message;

    ASSERT_TRUE(follower.trial) << "the trial never opened while it was being written";
    auto refreshed = follower.trial->refresh();
    ASSERT_VIGIL_OK(refreshed);
    ASSERT_NO_FATAL_FAILURE(verify_complete_steps(*follower.trial, run_.steps - 1, follower.verified_up_to, "follower"));
    ASSERT_TRUE(follower.trial->loaded_all_steps());
  }

  CrashRun run_;
  std::mt19937_64 rng_;
  KillAim aim_{rng_};
  Tally tally_;
};

CrashRun crash_run(int workers) {
  CrashRun run;
  run.workers = workers;
  run.steps = workers == 1 ? 10 : 8;
  // 3 MiB (1 MiB under the sanitizers, which slow every byte down): big enough that a kill often
  // lands while the record is being written.
  run.big_elements = kSanitized ? (256 << 10) : (768 << 10);
  run.kills = count_from_env("VIGIL_TORTURE_KILLS", 200);
  run.seed = seed_from_env();
  return run;
}

TEST(CrashSafeWriter, OneWorkerKilledAtRandomPointsAndResumed) {
  CrashTorture torture(crash_run(1));
  torture.run();
}

TEST(CrashSafeWriter, TwoWorkersKilledAtRandomPointsAndResumed) {
  CrashTorture torture(crash_run(2));
  torture.run();
}

// A reader follows the trial as the evaluator does while its writer is killed and resumed under it,
// again and again: it sees every step once, in order, with exact values, and then the end.
TEST(CrashSafeWriter, LiveReaderFollowsAcrossKillsAndResumes) {
  const uint64_t seed = seed_from_env();
  const int64_t steps = count_from_env("VIGIL_TORTURE_FOLLOW_STEPS", 300);
  const int64_t big_elements = kSanitized ? (16 << 10) : (64 << 10);
  test::ScratchDir scratch("vigil-torture");
  const fs::path trial_dir = scratch / "trial";
  fs::create_directories(trial_dir);
  const auto started = Clock::now();

  std::vector<int64_t> seen;
  std::string reader_failure;
  std::thread reader([&] {
    TrialOptions options;
    options.collections_timeout = 60s;
    auto opened = Trial::open(trial_dir, options);
    if (!opened) {
      reader_failure = "open: " + opened.error().message;
      return;
    }
    Trial& trial = **opened;
    for (int64_t step = 0;; ++step) {
      auto waited = trial.wait_for_steps({step}, Mode::Global, {}, 60s);
      if (!waited) {
        if (waited.error().code != ErrorCode::NoMoreData || waited.error().last_step != steps - 1)
          reader_failure = fmt::format("step {}: {}", step, waited.error().message);
        return;
      }
      trial.hold_refresh();
      auto problem = check_step(trial, step, 0, big_elements);
      trial.release_refresh();
      if (problem) {
        reader_failure = *problem;
        return;
      }
      seen.push_back(step);
    }
  });
  // However the loop below ends, the reader is released (by the end marker) and joined.
  struct JoinReader {
    std::thread& thread;
    fs::path marker;
    ~JoinReader() {
      if (!thread.joinable()) return;
      if (!fs::exists(marker)) std::ofstream{marker};
      thread.join();
    }
  } join_reader{reader, trial_dir / format::kEndOfTrainingMarker};

  std::mt19937_64 rng(seed);
  KillAim aim(rng);
  int64_t kills = 0;
  while (!fs::exists(trial_dir / format::kEndOfTrainingMarker)) {
    WriterProcess writer({"--dir", trial_dir.string(), "--steps", std::to_string(steps), "--big-elements",
                          std::to_string(big_elements)});
    ASSERT_TRUE(writer.started());
    aim.wait_for_kill_point(writer, steps, 4);
    writer.kill();
    if (writer.killed_by_us()) {
      ++kills;
      continue;
    }
    ASSERT_TRUE(writer.exited_cleanly()) << writer.describe_end();
  }
  reader.join();
  ASSERT_TRUE(reader_failure.empty()) << reader_failure;
  ASSERT_EQ(seen, first_steps(steps));
  std::printf("[ torture  ] live reader across kills, seed %llu: %lld steps followed through %lld kills and resumes "
              "in %.1f s\n",
              (unsigned long long)seed, (long long)steps, (long long)kills,
              std::chrono::duration<double>(Clock::now() - started).count());
}

}  // namespace
}  // namespace vigil::torture
