// A reader follows a trial while a writer thread is still writing it: it sees every complete step
// exactly once, StepNotYetAvailable before a step lands, and NoMoreData after the end marker.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "test_support.h"
#include "trial/trial.h"

namespace vigil {
namespace {

using test::ScratchDir;

// The writer pauses before every `kProbeEvery`-th step until the reader has probed that step.
constexpr int64_t kSteps = 120;
constexpr int64_t kProbeEvery = 10;

struct Handshake {
  std::mutex mu;
  std::condition_variable cv;
  int64_t probed_up_to = 0;  // the reader has probed steps < this
  void wait_probed(int64_t step) {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return probed_up_to > step; });
  }
  void mark_probed(int64_t step) {
    std::lock_guard lk(mu);
    probed_up_to = step + 1;
    cv.notify_all();
  }
};

// The inotify instances this process holds (the TrialWatcher's).
int inotify_instances() {
  int n = 0;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    auto target = std::filesystem::read_symlink(fd.path(), ec);
    if (!ec && target.string() == "anon_inode:inotify") ++n;
  }
  return n;
}

// A trial is watched (inotify) from its first wait only: one whose steps are all there never is, and
// its process does not pay the ~15 ms that closing an inotify instance costs at exit.
TEST(LiveRead, ATrialIsWatchedFromItsFirstWaitOnly) {
  ScratchDir dir;
  writer::WriterOptions options;
  for (auto& m : options.save_config) m.save_interval = 1;
  auto w = writer::TrialWriter::create(dir.path(), options);
  ASSERT_VIGIL_OK(w);
  for (int64_t s = 0; s < 3; ++s) {
    std::vector<float> v{float(s)};
    ASSERT_VIGIL_OK((*w)->begin_step(Mode::Train));
    ASSERT_VIGIL_OK((*w)->write_tensor("w", test::float_data(v, {1})));
    ASSERT_VIGIL_OK((*w)->end_step());
  }
  const int before = inotify_instances();
  TrialOptions trial_options;
  trial_options.poll_interval = std::chrono::milliseconds(2);
  {
    auto trial = Trial::open(dir.path(), trial_options);
    ASSERT_VIGIL_OK(trial);
    for (int64_t s = 0; s < 3; ++s) ASSERT_VIGIL_OK((*trial)->wait_for_steps({s}, Mode::Global, {}, std::chrono::seconds(5)));
    EXPECT_EQ(inotify_instances(), before);  // every step was there: no wait, no watch
    // Step 3 is not written yet (the writer is open): the first wait watches the trial.
    auto waited = (*trial)->wait_for_steps({3}, Mode::Global, {}, std::chrono::milliseconds(20));
    ASSERT_FALSE(waited);
    EXPECT_EQ(waited.error().code, ErrorCode::Timeout) << waited.error().message;
    EXPECT_EQ(inotify_instances(), before + 1);
  }
  EXPECT_EQ(inotify_instances(), before);
  ASSERT_VIGIL_OK((*w)->close());
  auto ended = Trial::open(dir.path(), trial_options);
  ASSERT_VIGIL_OK(ended);
  auto past_the_end = (*ended)->wait_for_steps({3}, Mode::Global, {}, std::chrono::seconds(5));
  ASSERT_FALSE(past_the_end);
  EXPECT_EQ(past_the_end.error().code, ErrorCode::NoMoreData) << past_the_end.error().message;
  EXPECT_EQ(inotify_instances(), before);  // the ended trial's last look needed no wait either
}

TEST(LiveRead, FollowsAWriterStepByStep) {
  ScratchDir dir;
  Handshake hs;
  std::atomic<bool> writer_ok{true};
  std::thread writer([&] {
    writer::WriterOptions options;
    for (auto& m : options.save_config) m.save_interval = 1;
    auto w = writer::TrialWriter::create(dir.path(), options);
    if (!w) { writer_ok = false; return; }
    for (int64_t s = 0; s < kSteps; ++s) {
      if (s > 0 && s % kProbeEvery == 0) hs.wait_probed(s);
      std::vector<float> v{float(s), float(s) * 2};
      if (!(*w)->begin_step(Mode::Train) || !(*w)->write_tensor("w", test::float_data(v, {2})) ||
          !(*w)->end_step()) {
        writer_ok = false;
        return;
      }
      if (s % 7 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    writer_ok = (*w)->close().has_value();
  });

  TrialOptions options;
  options.poll_interval = std::chrono::milliseconds(2);
  options.collections_timeout = std::chrono::seconds(30);
  auto trial = Trial::open(dir.path(), options);
  ASSERT_VIGIL_OK(trial);
  Trial& t = **trial;

  std::vector<int64_t> seen;
  for (int64_t s = 0;; ++s) {
    if (s > 0 && s % kProbeEvery == 0 && s < kSteps) {
      // The writer is parked before this step: it must not be visible yet.
      auto early = t.value("w", s);
      ASSERT_FALSE(early.has_value());
      EXPECT_EQ(early.error().code, ErrorCode::StepNotYetAvailable) << early.error().message;
      auto st = t.has_passed_step(s);
      ASSERT_TRUE(st.has_value());
      EXPECT_EQ(*st, StepState::NotYetAvailable);
      hs.mark_probed(s);
    }
    auto waited = t.wait_for_steps({s}, Mode::Global, {}, std::chrono::seconds(30));
    if (!waited) {
      ASSERT_EQ(waited.error().code, ErrorCode::NoMoreData) << waited.error().message;
      EXPECT_EQ(waited.error().last_step, kSteps - 1);
      break;
    }
    auto v = t.value("w", s);
    ASSERT_VIGIL_OK(v);
    ASSERT_EQ(v->as<float>()[0], float(s));
    ASSERT_EQ(v->as<float>()[1], float(s) * 2);
    seen.push_back(s);
  }
  writer.join();
  ASSERT_TRUE(writer_ok);
  ASSERT_EQ(int64_t(seen.size()), kSteps);
  for (int64_t i = 0; i < kSteps; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_TRUE(t.training_ended());
  EXPECT_TRUE(t.loaded_all_steps());
  auto after = t.value("w", kSteps);
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(after.error().code, ErrorCode::StepUnavailable);
  EXPECT_EQ(t.steps().value().size(), size_t(kSteps));
}

TEST(LiveRead, ManyThreadsReadOneTrial) {
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 49), true);
  auto trial = Trial::open(dir.path());
  ASSERT_TRUE(trial.has_value());
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&, r] {
      for (int64_t s = 0; s < 50; ++s) {
        int64_t step = (s * 7 + r) % 50;
        auto v = (*trial)->value("w", step);
        if (!v || v->as<float>()[0] != float(step)) ++errors;
        auto red = (*trial)->reduction_value("w", step, "max");
        if (!red || red->value != double(step) + 0.5) ++errors;
      }
    });
  for (auto& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
}

// Regression: a directory listing is no snapshot. With more index files in a folder than one
// getdents() call returns (ext4 lists them in hash order), or across two index/<step9>/ folders, a
// listing made while the writer publishes could hold a step but miss the one before it; the reader
// then took the later step as complete and declared the missed one Unavailable for good (the
// evaluator skipped it). Every refresh must leave the known steps a gap-free prefix.
TEST(LiveRead, ARefreshNeverSeesAStepWithoutTheOnesBeforeIt) {
  ScratchDir dir;
  constexpr int64_t kRaceSteps = 1300;  // over 700 files in index/000000000/, and a second folder
  std::atomic<bool> writer_ok{true};
  std::thread writer([&] {
    writer::WriterOptions options;
    for (auto& m : options.save_config) m.save_interval = 1;
    auto w = writer::TrialWriter::create(dir.path(), options);
    if (!w) {
      writer_ok = false;
      return;
    }
    const std::vector<float> value{1.0f};
    for (int64_t s = 0; s < kRaceSteps; ++s) {
      if (!(*w)->begin_step(Mode::Train) || !(*w)->write_tensor("w", test::float_data(value, {1})) ||
          !(*w)->end_step()) {
        writer_ok = false;
        return;
      }
    }
    writer_ok = (*w)->close().has_value();
  });
  struct JoinOnExit {  // also when an assertion returns early
    std::thread& t;
    ~JoinOnExit() {
      if (t.joinable()) t.join();
    }
  } join{writer};

  TrialOptions options;
  options.collections_timeout = std::chrono::seconds(30);
  auto trial = Trial::open(dir.path(), options);
  ASSERT_VIGIL_OK(trial);
  Trial& t = **trial;
  // Refresh as fast as possible while the writer publishes as fast as possible.
  for (int64_t refreshes = 1; !t.loaded_all_steps(); ++refreshes) {
    ASSERT_TRUE(t.refresh());
    auto known = t.steps(Mode::Global, true);
    ASSERT_TRUE(known);
    ASSERT_FALSE(known->empty());
    ASSERT_EQ(known->back(), int64_t(known->size()) - 1)
        << "refresh " << refreshes << " found step " << known->back() << " among only " << known->size() << " steps";
    ASSERT_EQ(t.last_complete_step(), known->back());
  }
  EXPECT_EQ(t.steps().value().size(), size_t(kRaceSteps));
  writer.join();
  EXPECT_TRUE(writer_ok);
}

}  // namespace
}  // namespace vigil
