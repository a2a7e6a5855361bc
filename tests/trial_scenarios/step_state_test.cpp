// The step-availability scenarios of smdebug's test_has_passed_step_scenarios (format spec §5.7):
// single and multi-worker trials with missing steps and workers, with and without the end marker.
#include <gtest/gtest.h>

#include <fstream>

#include "test_support.h"
#include "trial/trial.h"

namespace vigil {
namespace {

using test::range_steps;
using test::ScratchDir;
using test::write_worker;

std::shared_ptr<Trial> open_trial(const std::filesystem::path& dir) {
  TrialOptions o;
  o.collections_timeout = std::chrono::milliseconds(0);
  auto t = Trial::open(dir, o);
  EXPECT_VIGIL_OK(t);
  return t ? *t : nullptr;
}

std::vector<int64_t> iota_steps(int64_t a, int64_t b) {
  std::vector<int64_t> v;
  for (int64_t s = a; s <= b; ++s) v.push_back(s);
  return v;
}

StepState state(Trial& t, int64_t step, Mode mode = Mode::Global) {
  auto s = t.has_passed_step(step, mode);
  EXPECT_TRUE(s.has_value());
  return s.value_or(StepState::Unavailable);
}

TEST(StepState, SingleWorkerEnded) {
  ScratchDir dir;
  write_worker(dir.path(), "worker_0", 1, range_steps(0, 6), true);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps(Mode::Global, true).value(), iota_steps(0, 6));
  EXPECT_EQ(t->steps().value(), iota_steps(0, 6));
  EXPECT_EQ(state(*t, 3), StepState::Available);
  EXPECT_EQ(state(*t, 8), StepState::Unavailable);
  EXPECT_EQ(t->last_complete_step(), 6);
}

TEST(StepState, SingleWorkerRunning) {
  ScratchDir dir;
  write_worker(dir.path(), "worker_0", 1, range_steps(0, 6), false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(state(*t, 8), StepState::NotYetAvailable);
  EXPECT_EQ(t->last_complete_step(), 6);
}

TEST(StepState, MissingStepEnded) {
  ScratchDir dir;
  write_worker(dir.path(), "worker_0", 1, range_steps(0, 6, {4}), true);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps().value(), (std::vector<int64_t>{0, 1, 2, 3, 5, 6}));
  EXPECT_EQ(state(*t, 4), StepState::Unavailable);
  EXPECT_EQ(state(*t, 8), StepState::Unavailable);
  auto w4 = t->wait_for_steps({0, 1, 2, 3, 4});
  ASSERT_FALSE(w4.has_value());
  EXPECT_EQ(w4.error().code, ErrorCode::StepUnavailable);
  auto w7 = t->wait_for_steps({0, 7});
  ASSERT_FALSE(w7.has_value());
  EXPECT_EQ(w7.error().code, ErrorCode::NoMoreData);
  EXPECT_EQ(w7.error().last_step, 6);
  EXPECT_EQ(w7.error().message, "Looking for step 7 of mode GLOBAL and reached end of training. Max step available is 6");
  EXPECT_EQ(t->last_complete_step(), 6);
}

TEST(StepState, MissingStepRunning) {
  ScratchDir dir;
  write_worker(dir.path(), "worker_0", 1, range_steps(0, 6, {4}), false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(state(*t, 4), StepState::Unavailable);
  EXPECT_EQ(state(*t, 8), StepState::NotYetAvailable);
  auto v = t->value("w", 8);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, ErrorCode::StepNotYetAvailable);
  EXPECT_EQ(v.error().message, "Step 8 of mode GLOBAL not yet available");
  auto timeout = t->wait_for_steps({8}, Mode::Global, {}, std::chrono::milliseconds(50));
  ASSERT_FALSE(timeout.has_value());
  EXPECT_EQ(timeout.error().code, ErrorCode::Timeout);
}

TEST(StepState, WorkerMissingFromLaterStepsRunning) {
  ScratchDir dir;
  write_worker(dir.path(), "a", 3, range_steps(0, 6), false);
  write_worker(dir.path(), "b", 3, range_steps(0, 2), false);
  write_worker(dir.path(), "c", 3, range_steps(0, 6), false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->workers().value(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(t->num_workers(), 3);
  EXPECT_EQ(t->steps(Mode::Global, true).value(), iota_steps(0, 6));
  EXPECT_EQ(t->steps().value(), iota_steps(0, 2));
  EXPECT_EQ(state(*t, 2), StepState::Available);
  EXPECT_EQ(state(*t, 4), StepState::NotYetAvailable);
  EXPECT_EQ(state(*t, 6), StepState::NotYetAvailable);
  EXPECT_EQ(state(*t, 8), StepState::NotYetAvailable);
  EXPECT_EQ(t->last_complete_step(), 2);
  EXPECT_EQ(t->tensor_workers("w", 4).value(), (std::vector<std::string>{"a", "c"}));
}

TEST(StepState, WorkerMissingFromLaterStepsEnded) {
  ScratchDir dir;
  write_worker(dir.path(), "a", 3, range_steps(0, 6), false);
  write_worker(dir.path(), "b", 3, range_steps(0, 2), false);
  write_worker(dir.path(), "c", 3, range_steps(0, 6), true);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps().value(), iota_steps(0, 6));
  EXPECT_EQ(state(*t, 4), StepState::Available);
  EXPECT_EQ(state(*t, 6), StepState::Available);
  EXPECT_EQ(state(*t, 8), StepState::Unavailable);
  EXPECT_EQ(t->last_complete_step(), 6);
  auto bad = t->value("w", 4, Mode::Global, "b");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidWorker);
  EXPECT_EQ(bad.error().message, "Invalid Worker: b");
}

TEST(StepState, LaterCompleteStepFinalisesEarlierOnes) {
  ScratchDir dir;
  write_worker(dir.path(), "a", 3, range_steps(0, 6), false);
  write_worker(dir.path(), "b", 3, range_steps(0, 6, {3, 4, 5}), false);
  write_worker(dir.path(), "c", 3, range_steps(0, 6), false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps().value(), iota_steps(0, 6));
  EXPECT_EQ(state(*t, 4), StepState::Available);
  EXPECT_EQ(state(*t, 8), StepState::NotYetAvailable);
  EXPECT_EQ(t->last_complete_step(), 6);
}

TEST(StepState, AbsentStepBeforeCompleteStep) {
  ScratchDir dir;
  write_worker(dir.path(), "a", 3, range_steps(0, 6, {3}), false);
  write_worker(dir.path(), "b", 3, range_steps(0, 6, {3, 4, 5}), false);
  write_worker(dir.path(), "c", 3, range_steps(0, 6, {3}), false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps(Mode::Global, true).value(), (std::vector<int64_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(t->steps().value(), (std::vector<int64_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(state(*t, 3), StepState::Unavailable);
  EXPECT_EQ(t->last_complete_step(), 6);
}

TEST(StepState, AbsentStepWhileLaterStepsIncomplete) {
  ScratchDir dir;
  write_worker(dir.path(), "a", 3, range_steps(0, 6, {3}), false);
  write_worker(dir.path(), "b", 3, range_steps(0, 2), false);
  write_worker(dir.path(), "c", 3, range_steps(0, 6, {3}), false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps().value(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(state(*t, 3), StepState::NotYetAvailable);
  EXPECT_EQ(state(*t, 4), StepState::NotYetAvailable);
  EXPECT_EQ(t->last_complete_step(), 2);
}

TEST(StepState, TwoModes) {
  ScratchDir dir;
  std::vector<test::TrialStep> steps;
  for (int64_t i = 0; i < 4; ++i) steps.push_back({i * 10, Mode::Train, i * 10});
  for (int64_t i = 0; i < 4; ++i) steps.push_back({40 + i * 10, Mode::Eval, i * 10});
  write_worker(dir.path(), "worker_0", 1, steps, false);
  auto t = open_trial(dir.path());
  EXPECT_EQ(t->steps().value(), (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60, 70}));
  EXPECT_EQ(t->steps(Mode::Eval).value(), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(state(*t, 23, Mode::Train), StepState::Unavailable);
  EXPECT_EQ(state(*t, 40, Mode::Train), StepState::NotYetAvailable);
  EXPECT_EQ(state(*t, 30, Mode::Eval), StepState::Available);
  EXPECT_EQ(state(*t, 80), StepState::NotYetAvailable);
  EXPECT_EQ(t->last_complete_step(), 70);
  EXPECT_EQ(t->global_step(Mode::Eval, 20), 60);
  auto mm = t->mode_modestep(50);
  ASSERT_TRUE(mm.has_value());
  EXPECT_EQ(mm->first, Mode::Eval);
  EXPECT_EQ(mm->second, 10);
  // A mode step reads the value saved at its global step.
  auto v = t->value("w", 10, Mode::Eval);
  ASSERT_VIGIL_OK(v);
  EXPECT_EQ(v->as<float>()[0], 50.0f);
  // Tensor steps per mode are mode steps; incomplete-step filtering goes through the global step.
  EXPECT_EQ(t->tensor_steps("w", Mode::Eval).value(), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(t->tensor_steps("w", Mode::Train).value(), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_TRUE(t->tensor_names({.mode = Mode::Predict}).value().empty());
  EXPECT_TRUE(t->tensor_names({.step = 5, .mode = Mode::Eval}).value().empty());
  EXPECT_EQ(t->tensor_names({.step = 10, .mode = Mode::Eval}).value(), (std::vector<std::string>{"w"}));
}

TEST(StepState, TrialPathWithDoubleUnderscore) {
  // smdebug deserialises worker names when the *trial path* contains "__"; Vigil looks only at
  // the file names inside the trial.
  ScratchDir dir;
  auto trial_dir = dir.path() / "job__run";
  write_worker(trial_dir, "worker_0", 1, range_steps(0, 2), true);
  auto t = open_trial(trial_dir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tensor_workers("w", 1).value(), (std::vector<std::string>{"worker_0"}));
  EXPECT_TRUE(t->value("w", 1, Mode::Global, "worker_0").has_value());
}

TEST(StepState, RangeStepsLoadsOnlyTheRange) {
  ScratchDir dir;
  write_worker(dir.path(), "worker_0", 1, range_steps(0, 9), true);
  TrialOptions o;
  o.range_begin = 3;
  o.range_end = 6;
  auto t = Trial::open(dir.path(), o);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)->steps().value(), (std::vector<int64_t>{3, 4, 5}));
}

TEST(StepState, NotATrial) {
  ScratchDir dir;
  TrialOptions o;
  o.collections_timeout = std::chrono::milliseconds(0);
  auto t = Trial::open(dir.path() / "nope", o);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ErrorCode::Io);
  auto empty = Trial::open(dir.path(), o);
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code, ErrorCode::Timeout);
  // An ended job without collection files is smdebug's MissingCollectionFiles.
  std::ofstream(dir.path() / "training_job_end.ts").close();
  auto ended = Trial::open(dir.path(), o);
  ASSERT_FALSE(ended.has_value());
  EXPECT_EQ(ended.error().code, ErrorCode::MissingCollectionFiles);
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

TEST(StepWallTime, IsTheLatestRecordTimeOfTheStep) {
  test::ScratchDir dir;
  double now = 1000;
  writer::WriterOptions options;
  options.clock = [&now] { return now; };
  for (auto& m : options.save_config) m.save_interval = 1;
  {
    auto w = writer::TrialWriter::create(dir.path(), options);
    ASSERT_TRUE(w.has_value());
    for (int s = 0; s < 3; ++s) {
      ASSERT_TRUE((*w)->begin_step(Mode::Train));
      std::vector<float> v{1.0f};
      now = 1000 + 10 * s;
      ASSERT_TRUE((*w)->write_tensor("a", test::float_data(v, {1})));
      now += 2.5;  // a later record in the same step
      ASSERT_TRUE((*w)->write_tensor("b", test::float_data(v, {1})));
      ASSERT_TRUE((*w)->end_step());
    }
    ASSERT_TRUE((*w)->close());
  }
  auto t = Trial::open(dir.path());
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ((*t)->step_wall_time(0).value(), 1002.5);
  EXPECT_DOUBLE_EQ((*t)->step_wall_time(2).value(), 1022.5);
  EXPECT_DOUBLE_EQ((*t)->step_wall_time(1, Mode::Train).value(), 1012.5);
  auto missing = (*t)->step_wall_time(7);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::StepUnavailable);
}

}  // namespace
}  // namespace vigil
