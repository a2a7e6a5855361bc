// examples/libtorch_training: the example binary writes a trial that Vigil reads, and its vanishing
// gradients are what the built-in VanishingGradient rule reports. No libtorch header here: the
// binary is run as a user would run it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "test_support.h"
#include "trial/trial.h"

namespace {

using vigil::test::ScratchDir;

// Runs a command line, returns (exit code, stdout + stderr).
std::pair<int, std::string> run(const std::string& command, const ScratchDir& dir) {
  const auto out = dir.path() / "out.txt";
  const int status = std::system((command + " > '" + out.string() + "' 2>&1").c_str());
  std::ifstream in(out);
  return {WEXITSTATUS(status), std::string(std::istreambuf_iterator<char>(in), {})};
}

TEST(LibtorchExample, WritesATrialWithVanishingGradients) {
  ScratchDir dir;
  const auto trial_dir = dir.path() / "trial";
  auto [code, out] = run(std::string("'") + VIGIL_TORCH_EXAMPLE + "' '" + trial_dir.string() + "'", dir);
  ASSERT_EQ(code, 0) << out;

  auto opened = vigil::Trial::open(trial_dir);
  ASSERT_VIGIL_OK(opened);
  auto& trial = **opened;
  EXPECT_TRUE(trial.training_ended());
  std::vector<int64_t> all_steps(20);
  std::iota(all_steps.begin(), all_steps.end(), 0);
  EXPECT_EQ(trial.steps(vigil::Mode::Train).value(), all_steps);
  for (const std::string name : {"Net_fc0.weight", "Net_fc7.bias", "Net_out.weight", "gradient/Net_fc0.weight",
                                 "gradient/Net_out.bias", "MSELoss_output_0"})
    EXPECT_EQ(trial.tensor_steps(name).value(), all_steps) << name;
  EXPECT_EQ(trial.tensor_names({.collection = "gradients"}).value().size(), 18u);  // 9 layers, weight and bias

  // The input layer's gradients are tiny next to the output layer's.
  auto first = trial.reduction_value("gradient/Net_fc0.weight", 0, "mean", /*abs=*/true);
  auto last = trial.reduction_value("gradient/Net_out.weight", 0, "mean", /*abs=*/true);
  ASSERT_TRUE(first && last);
  EXPECT_LT(first->value, 1e-7);
  EXPECT_GT(last->value, 1e-3);

  auto [rule_code, rule_out] =
      run(std::string("'") + VIGIL_BINARY + "' evaluate --trial '" + trial_dir.string() + "' --rule VanishingGradient", dir);
  EXPECT_EQ(rule_code, 0) << rule_out;
  EXPECT_NE(rule_out.find("[VanishingGradient] IssuesFound"), std::string::npos) << rule_out;
}

}  // namespace
