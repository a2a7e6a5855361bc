// The trial's step and tensor tables (flat, sorted vectors appended in step order, names interned):
// what they answer when index files come out of order, from several workers and modes, and when a
// refresh adds steps after open(). Index files are written directly, so the order and content of
// every file is the test's.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "format/collections_json.h"
#include "format/index_json.h"
#include "trial/trial.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;

class StepTables : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           fmt::format("step_tables_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "collections" / "000000000");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  void collections(const std::vector<std::string>& workers) {
    format::CollectionsFile c{.collections = {}, .num_workers = int64_t(workers.size())};
    for (const auto& w : workers)
      write(fmt::format("collections/000000000/{}_collections.json", w), format::serialize_collections_json(c));
  }
  // One index file: tensors named in `names`, each a record at a distinct offset.
  void index(int64_t global, const std::string& worker, Mode mode, int64_t mode_step,
             const std::vector<std::string>& names, std::optional<std::vector<int64_t>> shape = {}) {
    format::StepIndex ix;
    ix.mode = mode;
    ix.mode_step = mode_step;
    ix.event_file_name = fmt::format("events/{:012d}/{:012d}_{}.tfevents", global, global, worker);
    uint64_t at = 0;
    for (const auto& n : names) {
      ix.tensor_payload.push_back({.tensorname = n, .start_idx = at, .length = 100});
      at += 100;
    }
    // The same names again in the same file, as their shapes (a second mention of each tensor).
    if (shape)
      for (const auto& n : names) ix.shape_payload.push_back({.tensorname = n, .shape = *shape});
    write(fmt::format("index/{:09d}/{:012d}_{}.json", global / 1000, global, worker), format::serialize_index_json(ix));
  }
  void end() { write("training_job_end.ts", ""); }

  std::shared_ptr<Trial> open() {
    auto t = Trial::open(dir_.string(), TrialOptions{.collections_timeout = std::chrono::milliseconds(0)});
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? *t : nullptr;
  }

  fs::path dir_;
};

using Steps = std::vector<int64_t>;
using Names = std::vector<std::string>;

TEST_F(StepTables, StepsAndNamesAreSortedWhateverTheOrderOfRegistration) {
  collections({"worker_0"});
  // Names in no order within a file, and a tensor that first appears late.
  for (int64_t s : {0, 1, 2, 3, 10, 11}) index(s, "worker_0", Mode::Train, s, {"zeta", "alpha", "mid"});
  index(12, "worker_0", Mode::Train, 12, {"zeta", "beta", "alpha", "mid"});
  end();
  auto t = open();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->steps().value(), (Steps{0, 1, 2, 3, 10, 11, 12}));
  EXPECT_EQ(t->tensor_names().value(), (Names{"alpha", "beta", "mid", "zeta"}));
  EXPECT_EQ(t->tensor_names({.step = 12}).value(), (Names{"alpha", "beta", "mid", "zeta"}));
  EXPECT_EQ(t->tensor_names({.step = 11}).value(), (Names{"alpha", "mid", "zeta"}));
  EXPECT_EQ(t->tensor_steps("beta").value(), (Steps{12}));
  EXPECT_EQ(t->tensor_steps("alpha").value(), (Steps{0, 1, 2, 3, 10, 11, 12}));
  EXPECT_EQ(t->next_step(3).value(), std::optional<int64_t>(10));
  EXPECT_EQ(t->next_step(12).value(), std::nullopt);
  EXPECT_FALSE(t->tensor_steps("nope"));
}

TEST_F(StepTables, ModesInterleavedKeepEachModesStepsAndTheGlobalMapping) {
  collections({"worker_0"});
  // TRAIN 0..3 at global 0..3, EVAL 0..1 at 4..5, TRAIN 4..5 at 6..7, PREDICT 0 at 8.
  int64_t g = 0;
  for (int64_t s = 0; s < 4; ++s) index(g++, "worker_0", Mode::Train, s, {"w", "loss"});
  for (int64_t s = 0; s < 2; ++s) index(g++, "worker_0", Mode::Eval, s, {"loss"});
  for (int64_t s = 4; s < 6; ++s) index(g++, "worker_0", Mode::Train, s, {"w", "loss"});
  index(g++, "worker_0", Mode::Predict, 0, {"out"});
  end();
  auto t = open();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->modes(), (std::vector<Mode>{Mode::Train, Mode::Eval, Mode::Predict}));
  EXPECT_EQ(t->steps(Mode::Train).value(), (Steps{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(t->steps(Mode::Eval).value(), (Steps{0, 1}));
  EXPECT_EQ(t->steps(Mode::Global).value(), (Steps{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(t->tensor_steps("loss").value(), (Steps{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t->tensor_steps("loss", Mode::Eval).value(), (Steps{0, 1}));
  EXPECT_EQ(t->tensor_steps("w", Mode::Train).value(), (Steps{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(t->tensor_steps("w", Mode::Eval).value(), Steps{});
  EXPECT_EQ(t->global_step(Mode::Train, 4), std::optional<int64_t>(6));
  EXPECT_EQ(t->global_step(Mode::Eval, 1), std::optional<int64_t>(5));
  EXPECT_EQ(t->mode_modestep(7), (std::optional<std::pair<Mode, int64_t>>{{Mode::Train, 5}}));
  EXPECT_EQ(t->mode_modestep(8), (std::optional<std::pair<Mode, int64_t>>{{Mode::Predict, 0}}));
  EXPECT_EQ(t->tensor_names({.mode = Mode::Eval}).value(), (Names{"loss"}));
  EXPECT_EQ(t->tensor_names({.mode = Mode::Predict}).value(), (Names{"out"}));
  EXPECT_EQ(t->tensor_names({.step = 1, .mode = Mode::Eval}).value(), (Names{"loss"}));
  // A tensor at a global step through its mode step, and by mode step.
  EXPECT_EQ(t->tensor_workers("loss", 5).value(), (Names{"worker_0"}));
  EXPECT_EQ(t->tensor_workers("loss", 1, Mode::Eval).value(), (Names{"worker_0"}));
  EXPECT_FALSE(t->tensor_workers("w", 4));  // global 4 is EVAL 0, which has no w
}

TEST_F(StepTables, WorkersOfAStepInIndexingOrderAndALateWorkerInsertedInPlace) {
  collections({"worker_0", "worker_1"});
  // worker_1's steps come in after worker_0 had gone further: the listing takes them in name
  // order (step, then worker), and a refresh adds worker_1's older steps behind worker_0's newer.
  for (int64_t s = 0; s < 3; ++s) {
    index(s, "worker_1", Mode::Train, s, {"w"});
    index(s, "worker_0", Mode::Train, s, {"w"});
  }
  index(3, "worker_0", Mode::Train, 3, {"w"});
  index(4, "worker_0", Mode::Train, 4, {"w", "late"});
  auto t = open();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->steps(Mode::Global).value(), (Steps{0, 1, 2}));  // 3 and 4 wait for worker_1
  EXPECT_EQ(t->steps(Mode::Global, true).value(), (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(t->tensor_workers("w", 1).value(), (Names{"worker_0", "worker_1"}));
  EXPECT_EQ(t->tensor_workers("w", 4).value(), (Names{"worker_0"}));
  EXPECT_EQ(t->has_passed_step(3).value(), StepState::NotYetAvailable);

  index(3, "worker_1", Mode::Train, 3, {"w"});
  index(4, "worker_1", Mode::Train, 4, {"late", "w"});
  ASSERT_TRUE(t->refresh());
  EXPECT_EQ(t->steps(Mode::Global).value(), (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(t->tensor_workers("w", 4).value(), (Names{"worker_0", "worker_1"}));
  EXPECT_EQ(t->tensor_workers("late", 4).value(), (Names{"worker_0", "worker_1"}));
  EXPECT_EQ(t->tensor_names({.step = 4}).value(), (Names{"late", "w"}));
  EXPECT_EQ(t->has_passed_step(3).value(), StepState::Available);
  // A value without a worker comes from the first worker by name; with one, from that worker.
  EXPECT_TRUE(t->tensor_workers("w", 0));
  EXPECT_EQ(t->tensor_steps("late").value(), (Steps{4}));
}

TEST_F(StepTables, ARefreshAddsStepsAndTensorsAfterOpen) {
  collections({"worker_0"});
  for (int64_t s = 0; s < 5; ++s) index(s, "worker_0", Mode::Train, s, {"b", "a"});
  auto t = open();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->steps(Mode::Train).value(), (Steps{0, 1, 2, 3, 4}));
  EXPECT_TRUE(t->has_tensor("a"));
  EXPECT_FALSE(t->has_tensor("c"));
  // New steps with a new tensor, one of them in a new index folder (step 1000), and a new mode.
  for (int64_t s = 5; s < 8; ++s) index(s, "worker_0", Mode::Train, s, {"b", "a", "c"});
  index(1000, "worker_0", Mode::Eval, 0, {"c"});
  end();
  EXPECT_EQ(t->tensor_names().value(), (Names{"a", "b", "c"}));  // refreshes first
  EXPECT_TRUE(t->has_tensor("c"));
  EXPECT_EQ(t->steps(Mode::Global).value(), (Steps{0, 1, 2, 3, 4, 5, 6, 7, 1000}));
  EXPECT_EQ(t->tensor_steps("c").value(), (Steps{5, 6, 7, 1000}));
  EXPECT_EQ(t->tensor_steps("a", Mode::Train).value(), (Steps{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t->modes(), (std::vector<Mode>{Mode::Train, Mode::Eval}));
  EXPECT_EQ(t->global_step(Mode::Eval, 0), std::optional<int64_t>(1000));
  EXPECT_TRUE(t->loaded_all_steps());
  EXPECT_EQ(t->last_complete_step(), 1000);
  // The tensor added by the refresh is found by a reader after it (the records moved).
  EXPECT_EQ(t->tensor_workers("c", 0, Mode::Eval).value(), (Names{"worker_0"}));
}

TEST_F(StepTables, ManyStepsInOrderStayInOrder) {
  collections({"worker_0"});
  Steps want;
  for (int64_t s = 0; s < 2100; s += 7) {
    index(s, "worker_0", Mode::Train, s / 7, {"x"});
    want.push_back(s);
  }
  end();
  auto t = open();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->steps().value(), want);
  EXPECT_EQ(t->tensor_steps("x").value(), want);
  EXPECT_EQ(t->steps(Mode::Train).value().size(), want.size());
  EXPECT_EQ(t->next_step(700).value(), std::optional<int64_t>(707));
  EXPECT_EQ(t->has_passed_step(701).value(), StepState::Unavailable);
  EXPECT_EQ(t->global_step(Mode::Train, 150), std::optional<int64_t>(1050));
}

TEST_F(StepTables, ManyWorkersKeepTheirOwnEntriesWhateverTheOrderTheyComeIn) {
  // Each worker's index names its tensors twice (values, then shapes): the shape it gives is its
  // number, so an entry registered under the wrong worker shows. Workers 4..7 come first, then a
  // refresh brings workers 0..3 for the same steps, each inserted among the step's entries.
  const int kWorkers = 8;
  std::vector<std::string> workers;
  for (int w = 0; w < kWorkers; ++w) workers.push_back(fmt::format("worker_{}", w));
  collections(workers);
  for (int64_t s = 0; s < 4; ++s)
    for (int w = kWorkers / 2; w < kWorkers; ++w) index(s, workers[w], Mode::Train, s, {"a", "b"}, std::vector<int64_t>{w});
  auto t = open();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tensor_workers("a", 2).value(), (Names(workers.begin() + kWorkers / 2, workers.end())));
  for (int64_t s = 0; s < 4; ++s)
    for (int w = 0; w < kWorkers / 2; ++w) index(s, workers[w], Mode::Train, s, {"b", "a"}, std::vector<int64_t>{w});
  end();
  ASSERT_TRUE(t->refresh());
  EXPECT_EQ(t->steps().value(), (Steps{0, 1, 2, 3}));
  for (int64_t s = 0; s < 4; ++s) {
    for (const char* name : {"a", "b"}) {
      auto listed = t->tensor_workers(name, s).value();
      std::sort(listed.begin(), listed.end());
      EXPECT_EQ(listed, workers) << name << " at " << s;
      for (int w = 0; w < kWorkers; ++w)
        EXPECT_EQ(t->shape(name, s, Mode::Global, workers[w]).value(), (Steps{w})) << name << " at " << s << " of " << workers[w];
    }
  }
}

// Lookups guess an entry's place from the first and last steps (steps evenly spread) before a
// binary search: steps spread unevenly, workers missing at some steps and a tensor saved at some
// steps only must still find each (step, worker)'s own entry, and none between steps. Each entry's
// shape is its step and worker, so a neighbour's entry shows.
TEST_F(StepTables, UnevenlySpreadStepsAndWorkersFindTheirOwnEntries) {
  const std::vector<std::string> workers{"worker_0", "worker_1", "worker_2"};
  collections(workers);
  Steps steps;
  for (int64_t s = 0; s < 40; ++s) steps.push_back(s);           // dense
  for (int64_t s = 100; s < 3000; s += 97) steps.push_back(s);   // sparse
  for (int64_t s = 5000; s < 5020; ++s) steps.push_back(s);      // dense again
  // Worker w saves at a step unless (step + w) % 5 == 0 (but worker_0 always does); "odd" is saved
  // at odd steps only.
  auto saves = [](int64_t s, int w) { return w == 0 || (s + w) % 5 != 0; };
  for (int64_t s : steps)
    for (int w = 0; w < 3; ++w) {
      if (!saves(s, w)) continue;
      Names names{"x"};
      if (s % 2) names.push_back("odd");
      index(s, workers[w], Mode::Train, s, names, std::vector<int64_t>{s, w});
    }
  end();
  auto t = open();
  ASSERT_TRUE(t);
  for (int64_t s = 0; s <= steps.back() + 2; ++s) {
    const bool saved = std::binary_search(steps.begin(), steps.end(), s);
    for (const char* name : {"x", "odd"}) {
      const bool has = saved && (std::string_view(name) == "x" || s % 2);
      auto listed = t->tensor_workers(name, s);
      ASSERT_EQ(bool(listed), has) << name << " at " << s;
      if (!has) continue;
      Names want;
      for (int w = 0; w < 3; ++w)
        if (saves(s, w)) want.push_back(workers[w]);
      std::sort(listed->begin(), listed->end());
      ASSERT_EQ(*listed, want) << name << " at " << s;
      for (int w = 0; w < 3; ++w) {
        if (!saves(s, w)) continue;
        ASSERT_EQ(t->shape(name, s, Mode::Global, workers[w]).value(), (Steps{s, w})) << name << " at " << s;
      }
    }
  }
  EXPECT_EQ(t->steps().value(), steps);
}

}  // namespace
}  // namespace vigil
