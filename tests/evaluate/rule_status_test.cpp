// The status board under a rule that fires at every step: what it keeps and how often it writes the
// status file are bounded by counts, not by the number of triggers (docs/reliability.md).
#include "evaluate/rule_status.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vigil::evaluate {
namespace {

// A clock that moves only when the test moves it: writes are counted against it, never timed.
struct ManualClock {
  double now = 1000.0;
};

// What the once-a-second write held back goes out when the evaluator is about to wait for a step
// (flush_if_unwritten), and only then: nothing is written twice.
TEST(StatusBoard, HeldBackChangesAreWrittenBeforeAWaitAndOnlyOnce) {
  test::ScratchDir dir;
  ManualClock clock;
  StatusBoard board({RuleStatus{.configuration_name = "r"}}, dir / "status.json", {}, [&] { return clock.now; });
  ASSERT_VIGIL_OK(board.flush());
  const uint64_t writes_before = board.writes();
  ASSERT_VIGIL_OK(board.flush_if_unwritten());  // nothing changed
  EXPECT_EQ(board.writes(), writes_before);
  board.add_trigger(0, Trigger{.step = 3});  // within the second: held back
  board.count_judgement(0, true);
  EXPECT_EQ(board.writes(), writes_before);
  EXPECT_EQ(test::read_file(dir / "status.json").find("\"step\": 3"), std::string::npos);
  ASSERT_VIGIL_OK(board.flush_if_unwritten());
  EXPECT_EQ(board.writes(), writes_before + 1);
  EXPECT_NE(test::read_file(dir / "status.json").find("\"step\": 3"), std::string::npos);
  ASSERT_VIGIL_OK(board.flush_if_unwritten());
  EXPECT_EQ(board.writes(), writes_before + 1);
}

TEST(StatusBoard, ARuleFiringAtEveryStepKeepsTheFirstTriggersAndACount) {
  test::ScratchDir dir;
  ManualClock clock;
  StatusBoard board({RuleStatus{.configuration_name = "r"}}, dir / "status.json", {}, [&] { return clock.now; });
  ASSERT_VIGIL_OK(board.flush());
  const uint64_t writes_before = board.writes();

  constexpr int64_t kSteps = 8000;
  board.set(0, RuleEvaluationStatus::IssuesFound, "met");  // a status change: written at once
  for (int64_t step = 0; step < kSteps; ++step) {
    board.add_trigger(0, Trigger{.step = step, .evidence = {nlohmann::json{{"step", step}}}});
    board.progress(0, step);
  }
  // One write for the status change; triggers and progress wait for the clock's next second.
  EXPECT_EQ(board.writes() - writes_before, 1u);
  clock.now += 1.0;
  board.add_trigger(0, Trigger{.step = kSteps});
  EXPECT_EQ(board.writes() - writes_before, 2u);

  const RuleStatus status = board.get(0);
  EXPECT_EQ(status.triggers.size(), kMaxStoredTriggers);
  EXPECT_EQ(status.triggers.front().step, 0);
  EXPECT_EQ(status.triggers.back().step, int64_t(kMaxStoredTriggers) - 1);
  EXPECT_EQ(status.trigger_count, kSteps + 1);
  EXPECT_EQ(status.last_trigger_step, kSteps);

  const auto file = nlohmann::json::parse(test::read_file(dir / "status.json"));
  const auto& entry = file["DebugRuleEvaluationStatuses"][0];
  EXPECT_EQ(entry["Triggers"].size(), kMaxStoredTriggers);
  EXPECT_EQ(entry["TriggerCount"], kSteps + 1);
  EXPECT_EQ(entry["CurrentStep"], kSteps - 1);
}

TEST(StatusBoard, PendingTriggersReachTheFileWithTheNextStatusChangeOrFlush) {
  test::ScratchDir dir;
  ManualClock clock;
  StatusBoard board({RuleStatus{.configuration_name = "r"}}, dir / "status.json", {}, [&] { return clock.now; });
  ASSERT_VIGIL_OK(board.flush());
  board.add_trigger(0, Trigger{.step = 0});
  board.add_trigger(0, Trigger{.step = 1});  // within the second of the last write: not written yet
  EXPECT_TRUE(nlohmann::json::parse(test::read_file(dir / "status.json"))["DebugRuleEvaluationStatuses"][0]["Triggers"].empty());
  board.set(0, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(nlohmann::json::parse(test::read_file(dir / "status.json"))["DebugRuleEvaluationStatuses"][0]["Triggers"].size(), 2u);
}

}  // namespace
}  // namespace vigil::evaluate
