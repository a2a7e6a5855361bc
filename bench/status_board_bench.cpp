// The status board's cost per step when a rule fires at every step against one that never fires
// (issue 28, item 9): before the bound, every trigger rewrote the whole status file, so the cost of a
// step grew with the triggers before it (8,000 steps took 534 s). Prints, for each window of steps,
// the mean time per step and the status-file writes of both runs side by side.
//   vigil_status_bench [STEPS] [WINDOW]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "evaluate/rule_status.h"

namespace {

using namespace vigil::evaluate;
namespace fs = std::filesystem;

struct Window {
  double micros_per_step = 0;
  uint64_t writes = 0;
};

// What the evaluator does for one rule at each step: progress, a judgement, and a trigger when it fires.
std::vector<Window> run(const fs::path& file, int64_t steps, int64_t window, bool fires) {
  StatusBoard board({RuleStatus{.configuration_name = "r", .rule_name = "LossNotDecreasing"}}, file, {});
  (void)board.flush();
  std::vector<Window> out;
  auto start = std::chrono::steady_clock::now();
  uint64_t writes = board.writes();
  for (int64_t step = 0; step < steps; ++step) {
    board.count_judgement(0, true);
    if (fires) {
      board.add_trigger(0, Trigger{.step = step, .evidence = {nlohmann::json{{"tensor", "loss"}, {"value", 2.5}, {"step", step}}}});
      if (step == 0) board.set(0, RuleEvaluationStatus::IssuesFound, "RuleEvaluationConditionMet");
    }
    board.progress(0, step);
    if ((step + 1) % window == 0) {
      const auto now = std::chrono::steady_clock::now();
      out.push_back({std::chrono::duration<double, std::micro>(now - start).count() / double(window), board.writes() - writes});
      start = now;
      writes = board.writes();
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 8000;
  const int64_t window = argc > 2 ? std::atoll(argv[2]) : 1000;
  const fs::path dir = fs::temp_directory_path() / ("vigil-status-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto firing = run(dir / "firing.json", steps, window, true);
  const auto quiet = run(dir / "quiet.json", steps, window, false);
  std::printf("%-14s %18s %14s %18s %14s\n", "steps", "firing us/step", "firing writes", "never us/step", "never writes");
  for (size_t i = 0; i < firing.size() && i < quiet.size(); ++i)
    std::printf("%6lld-%-7lld %18.2f %14llu %18.2f %14llu\n", (long long)(i * window), (long long)((i + 1) * window),
                firing[i].micros_per_step, (unsigned long long)firing[i].writes, quiet[i].micros_per_step,
                (unsigned long long)quiet[i].writes);
  fs::remove_all(dir);
}
