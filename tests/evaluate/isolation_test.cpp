// `vigil evaluate --isolate`: each plugin's rules in a process of their own. A rule that segfaults,
// aborts, calls exit(), never returns or allocates without end gets Error with the reason; the
// rules of other plugins in the same job end exactly as they would without --isolate.
// These run the built `vigil` executable, as the rule evaluator container does.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "plugin_test_support.h"
#include "test_support.h"


namespace vigil {
namespace {

using test::ScratchDir;
using test::variant_dir;

struct Run {
  int exit_code = -1;
  std::string output;
  nlohmann::json statuses;  // DebugRuleEvaluationStatuses, by RuleConfigurationName
};

// Runs `vigil evaluate ARGS --status-file ...` with `environment` ("NAME=value ...") added.
Run evaluate(std::vector<std::string> args, const ScratchDir& dir, const std::string& environment = "") {
  const auto status_file = dir.path() / "status.json";
  const auto output_file = dir.path() / "output.txt";
  std::filesystem::remove(status_file);
  std::string command = environment + " '" + std::string(VIGIL_BINARY) + "' evaluate";
  for (const auto& a : args) command += " '" + a + "'";
  command += " --status-file '" + status_file.string() + "' > '" + output_file.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream out(output_file);
  run.output.assign(std::istreambuf_iterator<char>(out), {});
  std::ifstream in(status_file);
  if (in) {
    const auto file = nlohmann::json::parse(in);
    run.statuses = nlohmann::json::object();
    for (const auto& s : file.at("DebugRuleEvaluationStatuses"))
      run.statuses[s["RuleConfigurationName"].get<std::string>()] = s;
  }
  return run;
}

std::vector<int64_t> trigger_steps(const nlohmann::json& status) {
  std::vector<int64_t> steps;
  for (const auto& t : status["Triggers"]) steps.push_back(t["step"]);
  return steps;
}

// A job over vanishing_gradient (steps 0, 2, ..., 38) with one misbehaving rule at step 12, two
// healthy rules from another plugin, and two rules that share the misbehaving rule's process: one
// that finished at step 6, before the trouble, and one that had not.
std::vector<std::string> job_with(const std::string& how, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--plugins", variant_dir("good").string(), "--plugins",
                                   variant_dir("misbehaves").string(), "--trial",
                                   (test::real_fixtures() / "vanishing_gradient").string(), "--quiet",
                                   "--rule", "StepsRule", "--name", "healthy-fires", "--param", "fire_at=2,5,38",
                                   "--rule", "StepsRule", "--name", "healthy-quiet",
                                   "--rule", "Misbehave", "--name", "bad", "--param", "how=" + how, "--param",
                                   "at_step=12",
                                   "--rule", "SiblingStepsRule", "--name", "finished-before", "--param", "fire_at=4",
                                   "--param", "end_step=6",
                                   "--rule", "SiblingStepsRule", "--name", "same-process"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// What every failure kind has in common: the run ends normally, the bad rule and its unfinished
// neighbour get Error with the reason, everything else has its usual verdict.
void expect_contained(const Run& run, const std::string& bad_reason, const std::string& neighbour_reason) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.statuses.size(), 5u) << run.output;
  const auto& s = run.statuses;
  EXPECT_EQ(s["healthy-fires"]["RuleEvaluationStatus"], "IssuesFound");
  EXPECT_EQ(trigger_steps(s["healthy-fires"]), (std::vector<int64_t>{2, 38}));
  EXPECT_EQ(s["healthy-fires"]["StatusDetails"],
            "RuleEvaluationConditionMet: Evaluation of the rule StepsRule at step 2 resulted in the condition being met\n");
  EXPECT_EQ(s["healthy-quiet"]["RuleEvaluationStatus"], "NoIssuesFound");
  EXPECT_EQ(s["healthy-quiet"]["CurrentStep"], 38);
  EXPECT_EQ(s["bad"]["RuleEvaluationStatus"], "Error");
  EXPECT_EQ(s["bad"]["StatusDetails"], "RuleError: " + bad_reason);
  EXPECT_EQ(s["finished-before"]["RuleEvaluationStatus"], "IssuesFound");
  EXPECT_EQ(trigger_steps(s["finished-before"]), (std::vector<int64_t>{4}));
  EXPECT_EQ(s["same-process"]["RuleEvaluationStatus"], "Error");
  EXPECT_EQ(s["same-process"]["StatusDetails"], "RuleError: " + neighbour_reason);
}

TEST(Isolation, SegfaultingRule) {
  ScratchDir dir;
  // Under AddressSanitizer the child would turn the SIGSEGV into its own report and exit; the
  // signal itself is what this test is about.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string env = "ASAN_OPTIONS='" + std::string(asan ? asan : "") + ":handle_segv=0'";
  auto run = evaluate(job_with("segfault", {"--isolate"}), dir, env);
  expect_contained(run, "the rule's process was killed by signal 11 (Segmentation fault) at step 12",
                   "the rule's process was killed by signal 11 (Segmentation fault) while rule 'bad' ran step 12");
}

TEST(Isolation, AbortingRule) {
  ScratchDir dir;
  auto run = evaluate(job_with("abort", {"--isolate"}), dir);
  expect_contained(run, "the rule's process was killed by signal 6 (Aborted) at step 12",
                   "the rule's process was killed by signal 6 (Aborted) while rule 'bad' ran step 12");
}

TEST(Isolation, RuleCallingExit) {
  ScratchDir dir;
  auto run = evaluate(job_with("exit", {"--isolate"}), dir);
  expect_contained(run, "the rule's process exited with status 7 at step 12",
                   "the rule's process exited with status 7 while rule 'bad' ran step 12");
}

TEST(Isolation, RuleThatNeverReturnsIsStoppedAtTheRuleTimeout) {
  ScratchDir dir;
  const auto started = std::chrono::steady_clock::now();
  auto run = evaluate(job_with("hang", {"--isolate", "--rule-timeout", "1"}), dir);
  expect_contained(run, "the rule ran for longer than --rule-timeout 1 s at step 12 and was stopped",
                   "the rule's process was stopped because rule 'bad' ran for longer than --rule-timeout 1 s at step 12");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(Isolation, RuleThatAllocatesWithoutEndIsStoppedAtTheMemoryLimit) {
  ScratchDir dir;
  // The limit is on the child's resident memory, watched by the parent: the same with and without
  // AddressSanitizer (whose reserved address space rules out RLIMIT_AS).
  auto run = evaluate(job_with("hog", {"--isolate", "--rule-memory-limit", "384"}), dir);
  expect_contained(run, "the rule's process ran out of memory (limit 384 MiB) at step 12",
                   "the rule's process ran out of memory (limit 384 MiB) while rule 'bad' ran step 12");
}

// A job that misbehaves only in-process (contained without --isolate too) from two plugins.
TEST(Isolation, GoodJobHasTheSameStatusesWithAndWithoutIsolate) {
  ScratchDir dir;
  const std::vector<std::string> job = {
      "--plugins", variant_dir("good").string(), "--plugins", VIGIL_EXAMPLE_C_PLUGIN_DIR,
      "--trial", (test::real_fixtures() / "mlp_healthy").string(), "--quiet",
      "--rule", "StepsRule", "--name", "fires", "--param", "fire_at=3,7,29",
      "--rule", "StepsRule", "--name", "ends", "--param", "fire_at=3,7", "--param", "end_at=4",
      "--rule", "StepsRule", "--name", "window", "--param", "fire_at=0,10,20", "--param", "start_step=5",
      "--param", "end_step=20",
      "--rule", "StepsRule", "--name", "fails", "--param", "fail_at=6",
      "--rule", "Thrower", "--rule", "UnknownStatus",
      "--rule", "LossAboveThreshold", "--param", "threshold=1.3"};
  auto plain = evaluate(job, dir);
  auto with_isolate = job;
  with_isolate.push_back("--isolate");
  auto isolated = evaluate(with_isolate, dir);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(isolated.exit_code, 0) << isolated.output;
  ASSERT_EQ(plain.statuses.size(), 7u);
  for (auto* run : {&plain, &isolated})
    for (auto& [name, s] : run->statuses.items()) s.erase("LastModifiedTime");
  EXPECT_EQ(plain.statuses, isolated.statuses);
  // Every child ended cleanly too (under LeakSanitizer: without leaks).
  EXPECT_EQ(isolated.output.find("ended after its rules had finished"), std::string::npos) << isolated.output;
  EXPECT_EQ(isolated.statuses["LossAboveThreshold"]["RuleEvaluationStatus"], "IssuesFound");
  EXPECT_EQ(isolated.statuses["Thrower"]["RuleEvaluationStatus"], "Error");
}

TEST(Isolation, SigtermStopsEveryProcess) {
  ScratchDir dir;
  test::write_worker(dir.path() / "trial", "worker_0", 1, test::range_steps(0, 2), /*end_marker=*/false);
  const auto status_file = dir.path() / "status.json";
  std::vector<std::string> args = {VIGIL_BINARY, "evaluate", "--isolate", "--quiet",
                                   "--plugins", variant_dir("good").string(), "--plugins",
                                   variant_dir("misbehaves").string(), "--trial", (dir.path() / "trial").string(),
                                   "--rule", "StepsRule", "--rule", "SiblingStepsRule",
                                   "--status-file", status_file.string()};
  auto file = test::evaluate_then_sigterm(std::move(args), status_file);
  ASSERT_FALSE(file["DebugRuleEvaluationStatuses"].empty());
  for (const auto& s : file["DebugRuleEvaluationStatuses"]) EXPECT_EQ(s["RuleEvaluationStatus"], "Stopped") << s;
}

TEST(Isolation, OptionsAreChecked) {
  ScratchDir dir;
  const std::vector<std::string> job = {"--plugins", variant_dir("good").string(), "--trial",
                                        (test::real_fixtures() / "mlp_healthy").string(), "--rule", "StepsRule"};
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--rule-timeout", "1"},
                                                                 {"--rule-memory-limit", "100"}}) {
    auto args = job;
    args.insert(args.end(), extra.begin(), extra.end());
    auto run = evaluate(args, dir);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find(extra[0] + " needs --isolate"), std::string::npos) << run.output;
  }
  for (const auto& bad : std::vector<std::vector<std::string>>{{"--rule-timeout", "0"},
                                                               {"--rule-timeout", "soon"},
                                                               {"--rule-memory-limit", "-1"},
                                                               {"--param", "nope=1"}}) {
    auto args = job;
    args.push_back("--isolate");
    args.insert(args.end(), bad.begin(), bad.end());
    auto run = evaluate(args, dir);
    EXPECT_EQ(run.exit_code, 2) << bad[0] << " " << bad[1] << ": " << run.output;
  }
  // The children's flag is internal.
  auto child = evaluate({"--isolated-child", "--plugin-file", "/nonexistent.so"}, dir);
  EXPECT_EQ(child.exit_code, 2) << child.output;
}

// A plugin in a folder every user may write is refused, and --allow-insecure-plugins reaches the
// children of --isolate, which load the plugin again.
TEST(Isolation, AllowInsecurePluginsReachesTheChildren) {
  ScratchDir dir;
  const auto open = dir.path() / "open";
  std::filesystem::create_directories(open);
  std::filesystem::copy_file(variant_dir("good") / "libvigil_test_plugin_good.so", open / "libgood.so");
  std::filesystem::permissions(open, std::filesystem::perms::all);
  const std::vector<std::string> job = {"--plugins", open.string(), "--trial", (test::real_fixtures() / "vanishing_gradient").string(),
                                        "--quiet", "--isolate", "--rule", "StepsRule", "--name", "steps",
                                        "--param", "fire_at=2"};
  auto refused = evaluate(job, dir);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("vigil: refused plugin " + (open / "libgood.so").string() + ": not trusted"),
            std::string::npos)
      << refused.output;
  auto args = job;
  args.push_back("--allow-insecure-plugins");
  auto allowed = evaluate(args, dir);
  ASSERT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_EQ(allowed.statuses["steps"]["RuleEvaluationStatus"], "IssuesFound") << allowed.output;
  EXPECT_EQ(trigger_steps(allowed.statuses["steps"]), std::vector<int64_t>{2});
}

// VIGIL_PLUGINF_NOT_FORK_SAFE: the not_fork_safe plugin ends any child forked from a process that
// has initialised it (a pthread_atfork handler), so its rules run under --isolate only because no
// process that loaded it is ever forked: each child is `vigil` started again.
TEST(Isolation, TheNotForkSafePluginEndsAChildForkedAfterItsInit) {
  auto registry = test::registry_with({"not_fork_safe"});
  ASSERT_EQ(registry.rules().size(), 5u);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);  // the plugin's handler exits with 86 first
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 86);
}

TEST(Isolation, ANotForkSafePluginRunsIsolatedWithoutBeingForked) {
  ScratchDir dir;
  auto run = evaluate({"--plugins", variant_dir("not_fork_safe").string(), "--trial",
                       (test::real_fixtures() / "vanishing_gradient").string(), "--quiet", "--isolate", "--rule", "StepsRule",
                       "--name", "steps", "--param", "fire_at=4"},
                      dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.statuses["steps"]["RuleEvaluationStatus"], "IssuesFound") << run.output;
  EXPECT_EQ(trigger_steps(run.statuses["steps"]), std::vector<int64_t>{4});
}

}  // namespace
}  // namespace vigil
