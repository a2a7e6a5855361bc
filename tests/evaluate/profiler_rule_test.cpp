// Profiler rules on the host side: the extension vigil.profiler/1 (windows, waiting, NoMoreProfilerData,
// the data it hands over), ProfilerRuleConfigurations in the job and ProfilerRuleEvaluationStatuses in
// the status file, and plugins with and without the extension side by side.
#include <gtest/gtest.h>

#include <vigil/profiler.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluate/evaluator.h"
#include "evaluate/isolation_protocol.h"
#include "evaluate/rule_groups.h"
#include "format/trial_layout.h"
#include "plugin_host/extensions.h"
#include "plugin_test_support.h"
#include "profiler/system_metrics_writer.h"
#include "profiler/trace_event_writer.h"
#include "s3_server_process.h"
#include "storage/object_store.h"
#include "storage/s3_object_store.h"
#include "storage/s3_uri.h"
#include "test_support.h"

namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using evaluate::RuleKind;
using test::registry_with;
using test::ScratchDir;

constexpr double kT0 = 1700000000.0;  // a whole second: the first system file's name

const plugin_host::PluginRegistry& registry() {
  static const auto r = registry_with({"sdk_profiler", "sdk_profiles"});
  return r;
}

// Samples every 0.5 s from kT0 + from_s to kT0 + to_s (inclusive) of one core at `value`, except at
// the times in `hot` (100 %), written as one system metrics file.
void write_cpu_file(const std::filesystem::path& root, double from_s, double to_s, double value,
                    std::vector<double> hot = {}) {
  profiler::SystemMetricsWriter w({.root = root, .node_id = "algo-1", .file_host = "algo-1"});
  for (double t = from_s; t <= to_s + 1e-9; t += 0.5) {
    const bool is_hot = std::find(hot.begin(), hot.end(), t) != hot.end();
    const profiler::SystemMetric m{.type = "cpu", .name = "cpu0", .dimension = "CPUUtilization",
                                   .value = is_hot ? 100.0 : value};
    ASSERT_VIGIL_OK(w.write(kT0 + t, std::span(&m, 1)));
  }
  ASSERT_VIGIL_OK(w.close());
}

void write_end_marker(const std::filesystem::path& root) {
  std::filesystem::create_directories(root / "system");
  std::ofstream(root / "system" / std::string(format::kEndOfTrainingMarker)).flush();
}

evaluate::JobConfig profiler_job(const std::filesystem::path& root, std::map<std::string, std::string> params = {}) {
  params["rule_to_invoke"] = "HotCpu";
  auto r = evaluate::rule_from_parameters("HotCpu", params, root.string(), "test", RuleKind::Profiler);
  EXPECT_VIGIL_OK(r);
  evaluate::JobConfig job;
  if (r) job.rules.push_back(*r);
  return job;
}

std::vector<evaluate::RuleStatus> run(evaluate::JobConfig job, evaluate::EvaluatorOptions options = {}) {
  auto ev = evaluate::Evaluator::create(registry(), std::move(job), std::move(options));
  EXPECT_VIGIL_OK(ev);
  if (!ev) return {};
  (*ev)->run({});
  return (*ev)->statuses();
}

TEST(ProfilerExtension, TheHostOffersItAndTheSdkRuleIsCreatedWithoutATrial) {
  const auto* ext = static_cast<const vigil_profiler_ext*>(plugin_host::find_extension(VIGIL_PROFILER_EXTENSION_ID));
  ASSERT_NE(ext, nullptr);
  EXPECT_EQ(ext->struct_size, sizeof(vigil_profiler_ext));
  EXPECT_NE(ext->wait_for_window, nullptr);
  ASSERT_NE(registry().find("HotCpu"), nullptr);
  EXPECT_EQ(evaluate::builtin_rule_kind("cpubottleneck"), RuleKind::Profiler);
  EXPECT_EQ(evaluate::builtin_rule_kind("VanishingGradient"), RuleKind::Debug);
}

TEST(ProfilerRules, EachWindowIsJudgedAndTheHotOneFires) {
  ScratchDir dir;
  write_cpu_file(dir.path(), 0, 4.5, 20, {2.5});
  evaluate::EvaluatorOptions options;
  options.follow = false;
  options.status_file = dir / "status.json";
  auto statuses = run(profiler_job(dir.path()), options);
  ASSERT_EQ(statuses.size(), 1u);
  const auto& s = statuses[0];
  EXPECT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << test::seen(s);
  // 1 s windows from T0: [2, 3] holds the hot sample (and [2.5, ...] is inside only that one).
  EXPECT_EQ(test::trigger_steps(s), (std::vector<int64_t>{2}));
  const auto evidence = test::evidence(s, 0);
  EXPECT_EQ(evidence["value"], 100.0);
  EXPECT_EQ(evidence["threshold"], 90.0);
  EXPECT_EQ(evidence["window_start_us"], int64_t(kT0 * 1e6) + 2'000'000);
  EXPECT_EQ(evidence["window_end_us"], int64_t(kT0 * 1e6) + 3'000'000);
  // Windows 0..4 hold data; window 5 starts after the last sample (4.5 s), so the rule ends there.
  EXPECT_EQ(s.judgement.steps_judged, 5);
  EXPECT_EQ(s.current_step, 5);

  const auto file = nlohmann::json::parse(test::read_file(dir / "status.json"));
  EXPECT_TRUE(file["DebugRuleEvaluationStatuses"].empty());
  ASSERT_EQ(file["ProfilerRuleEvaluationStatuses"].size(), 1u);
  EXPECT_EQ(file["ProfilerRuleEvaluationStatuses"][0]["RuleEvaluationStatus"], "IssuesFound");
  EXPECT_NE(file["ProfilerRuleEvaluationStatuses"][0]["StatusDetails"].get<std::string>().find(
                "Evaluation of the rule HotCpu at step 2 resulted in the condition being met"),
            std::string::npos);
}

TEST(ProfilerRules, FrameworkEventsReachTheRuleWithTheirWindow) {
  ScratchDir dir;
  write_cpu_file(dir.path(), 0, 1.5, 20, {0.5});
  profiler::TraceEventWriter trace({.root = dir.path(), .node_id = "0-algo-1", .start_time_us = int64_t(kT0 * 1e6)});
  for (int step = 0; step < 4; ++step)
    ASSERT_VIGIL_OK(trace.write({.training_phase = "Step:ModeKeys.TRAIN",
                                 .name = "Step:ModeKeys.TRAIN",
                                 .start_us = int64_t(kT0 * 1e6) + step * 400'000,
                                 .duration_us = 300'000,
                                 .args = {{"step_num", step}}}));
  ASSERT_VIGIL_OK(trace.close());
  evaluate::EvaluatorOptions options;
  options.follow = false;
  auto statuses = run(profiler_job(dir.path()), options);
  ASSERT_EQ(test::trigger_steps(statuses.at(0)), (std::vector<int64_t>{0}));
  // Window 0 is [T0, T0 + 1 s]: steps 0, 1 and 2 overlap it (step 2 starts at 0.8 s).
  EXPECT_EQ(test::evidence(statuses[0], 0)["framework_events"], 3);
}

TEST(ProfilerRules, AFolderWithoutDataEndsWithoutJudging) {
  ScratchDir dir;
  std::filesystem::create_directories(dir / "system");
  evaluate::EvaluatorOptions options;
  options.follow = false;
  auto statuses = run(profiler_job(dir.path()), options);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::NoIssuesFound) << test::seen(statuses[0]);
  EXPECT_FALSE(statuses[0].judgement.enough_data());
  EXPECT_NE(statuses[0].judgement.reason.find("no profiler data"), std::string::npos) << statuses[0].judgement.reason;
}

TEST(ProfilerRules, ALiveJobIsFollowedUntilItsEndMarker) {
  ScratchDir dir;
  write_cpu_file(dir.path(), 0, 1.5, 20);
  evaluate::EvaluatorOptions options;
  options.poll_interval = std::chrono::milliseconds(20);
  auto ev = evaluate::Evaluator::create(registry(), profiler_job(dir.path()), options);
  ASSERT_VIGIL_OK(ev);
  std::jthread evaluation([&] { (*ev)->run({}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // Only one file so far: no window is known to be complete, so none was judged yet.
  EXPECT_EQ((*ev)->statuses()[0].status, RuleEvaluationStatus::InProgress);
  EXPECT_FALSE((*ev)->statuses()[0].current_step.has_value());
  write_cpu_file(dir.path(), 2, 3.5, 20, {3.5});  // in window 3 only ([3, 4]; bounds are inclusive)
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // The second file (named T0 + 2 s) completes windows 0 and 1 only.
  EXPECT_EQ((*ev)->statuses()[0].status, RuleEvaluationStatus::InProgress);
  write_end_marker(dir.path());
  evaluation.join();
  const auto s = (*ev)->statuses()[0];
  EXPECT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << test::seen(s);
  EXPECT_EQ(test::trigger_steps(s), (std::vector<int64_t>{3}));
  EXPECT_EQ(s.judgement.steps_judged, 4);
}

TEST(ProfilerRules, AStopRequestEndsAWaitingRule) {
  ScratchDir dir;
  write_cpu_file(dir.path(), 0, 0.5, 20);
  auto ev = evaluate::Evaluator::create(registry(), profiler_job(dir.path()), {});
  ASSERT_VIGIL_OK(ev);
  std::stop_source stop;
  std::jthread evaluation([&] { (*ev)->run(stop.get_token()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop.request_stop();
  evaluation.join();
  EXPECT_EQ((*ev)->statuses()[0].status, RuleEvaluationStatus::Stopped);
}

TEST(ProfilerRules, DebugAndProfilerRulesRunSideBySide) {
  // A plugin that never asks for the extension (sdk_profiles) beside one that does, in one job.
  ScratchDir dir;
  const auto trial = dir / "debug-output", profiler_root = dir / "profiler-output";
  test::write_worker(trial, "worker_0", 1, test::range_steps(0, 4), /*end_marker=*/true);
  write_cpu_file(profiler_root, 0, 1.5, 95);
  const std::string text = R"({
    "DebugRuleConfigurations": [{"RuleConfigurationName": "Profiled", "RuleEvaluatorImage": "x",
                                 "RuleParameters": {"rule_to_invoke": "ProfiledRule"}}],
    "ProfilerRuleConfigurations": [{"RuleConfigurationName": "Hot", "RuleEvaluatorImage": "x",
                                    "RuleParameters": {"rule_to_invoke": "HotCpu", "threshold": "99"}},
                                   {"RuleConfigurationName": "Warm", "RuleEvaluatorImage": "x",
                                    "RuleParameters": {"rule_to_invoke": "HotCpu", "threshold": "50"}}]})";
  auto job = evaluate::parse_job_json(text, trial.string(), profiler_root.string());
  ASSERT_VIGIL_OK(job);
  ASSERT_EQ(job->rules.size(), 3u);
  EXPECT_EQ(job->rules[1].kind, RuleKind::Profiler);
  EXPECT_EQ(job->rules[1].base_trial, profiler_root.string());
  evaluate::EvaluatorOptions options;
  options.follow = false;
  options.status_file = dir / "status.json";
  auto statuses = run(std::move(*job), options);
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_EQ(test::trigger_steps(statuses[0]), (std::vector<int64_t>{1}));  // ProfiledRule fires at step 1
  EXPECT_EQ(statuses[1].status, RuleEvaluationStatus::NoIssuesFound) << test::seen(statuses[1]);
  EXPECT_EQ(statuses[2].status, RuleEvaluationStatus::IssuesFound) << test::seen(statuses[2]);
  const auto file = nlohmann::json::parse(test::read_file(dir / "status.json"));
  ASSERT_EQ(file["DebugRuleEvaluationStatuses"].size(), 1u);
  ASSERT_EQ(file["ProfilerRuleEvaluationStatuses"].size(), 2u);
  EXPECT_EQ(file["ProfilerRuleEvaluationStatuses"][0]["RuleConfigurationName"], "Hot");
  EXPECT_EQ(file["ProfilerRuleEvaluationStatuses"][1]["RuleConfigurationName"], "Warm");
}

TEST(ProfilerRules, AProfilerRuleRunAsADebugRuleSaysHowToConfigureIt) {
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 1), /*end_marker=*/true);
  auto r = evaluate::rule_from_parameters("HotCpu", {{"rule_to_invoke", "HotCpu"}}, dir.path().string(), "test");
  ASSERT_VIGIL_OK(r);
  evaluate::EvaluatorOptions options;
  options.follow = false;
  auto statuses = run(evaluate::JobConfig{.rules = {*r}}, options);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::Error);
  EXPECT_NE(statuses[0].details.find("ProfilerRuleConfigurations"), std::string::npos) << statuses[0].details;
}

// Profiler rules over an S3 prefix (the S3 test server, tests/support/s3_test_server.py): the
// evaluator in this process, and `vigil evaluate` finding <job>/profiler-output beside an s3://
// <job>/debug-output. Both reach the server through the AWS_* variables, as a user's would.
class ProfilerRulesOverS3 : public test::S3ServerSuite {
 protected:
  void SetUp() override {
    test::S3ServerSuite::SetUp();
    if (HasFatalFailure()) return;
    const auto& info = server_->info();
    environment_ = {{"AWS_ACCESS_KEY_ID", info["AWS_ACCESS_KEY_ID"].get<std::string>()},
                    {"AWS_SECRET_ACCESS_KEY", info["AWS_SECRET_ACCESS_KEY"].get<std::string>()},
                    {"AWS_REGION", info["AWS_REGION"].get<std::string>()},
                    {"AWS_ENDPOINT_URL_S3", info["proxy"].get<std::string>()}};
    for (const auto& [name, value] : environment_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : environment_) ::unsetenv(name.c_str());
  }

  // Copies the local folder `from` to s3://trials/<prefix> with the store's write().
  static void upload(const std::filesystem::path& from, const std::string& prefix) {
    auto local = storage::open_object_store(from.string());
    ASSERT_VIGIL_OK(local);
    auto s3 = storage::open_s3_store(storage::S3Uri{"trials", prefix}, server_->config());
    ASSERT_VIGIL_OK(s3);
    auto listed = (*local)->list("");
    ASSERT_VIGIL_OK(listed);
    for (const auto& object : *listed) {
      auto bytes = (*local)->read(object.relpath);
      ASSERT_VIGIL_OK(bytes);
      ASSERT_VIGIL_OK((*s3)->write(object.relpath, *bytes));
    }
  }

  std::map<std::string, std::string> environment_;
};

TEST_F(ProfilerRulesOverS3, TheEvaluatorJudgesAnS3PrefixAsTheLocalFolder) {
  ScratchDir dir;
  write_cpu_file(dir.path(), 0, 4.5, 20, {2.5});
  upload(dir.path(), "jobs/evaluated/profiler-output");
  evaluate::EvaluatorOptions options;
  options.follow = false;
  auto statuses = run(profiler_job("s3://trials/jobs/evaluated/profiler-output"), options);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound) << test::seen(statuses[0]);
  EXPECT_EQ(test::trigger_steps(statuses[0]), (std::vector<int64_t>{2}));  // as over the folder
  EXPECT_EQ(statuses[0].judgement.steps_judged, 5);

  // A prefix without data ends without judging, as an empty folder does.
  auto empty = run(profiler_job("s3://trials/jobs/nothing/profiler-output"), options);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].status, RuleEvaluationStatus::NoIssuesFound) << test::seen(empty[0]);
  EXPECT_NE(empty[0].judgement.reason.find("no profiler data"), std::string::npos) << empty[0].judgement.reason;

  // A prefix that cannot be listed is the rule's error, naming it and never the credentials.
  ::setenv("AWS_MAX_ATTEMPTS", "2", 1);
  server_->set_faults(nlohmann::json::array({{{"match", "failing"}, {"method", "GET"}, {"times", 100},
                                              {"action", "status"}, {"status", 500}, {"code", "InternalError"}}}));
  auto failing = run(profiler_job("s3://trials/jobs/failing/profiler-output"), options);
  ::unsetenv("AWS_MAX_ATTEMPTS");
  ASSERT_EQ(failing.size(), 1u);
  EXPECT_EQ(failing[0].status, RuleEvaluationStatus::Error) << test::seen(failing[0]);
  EXPECT_NE(failing[0].details.find("s3://trials/jobs/failing/profiler-output"), std::string::npos)
      << failing[0].details;
  EXPECT_EQ(failing[0].details.find("S3RVER"), std::string::npos) << failing[0].details;
}

TEST_F(ProfilerRulesOverS3, TheCliFindsProfilerOutputBesideAnS3DebugOutput) {
  ScratchDir dir;
  write_cpu_file(dir / "job", 0, 4.5, 20, {2.5});
  upload(dir / "job", "jobs/cli/profiler-output");
  std::ofstream(dir / "job.json") << R"({"ProfilerRuleConfigurations": [{"RuleConfigurationName": "Hot",
      "RuleEvaluatorImage": "x", "RuleParameters": {"rule_to_invoke": "HotCpu"}}]})";
  const auto evaluate = [&](const std::string& trial) {
    std::string command;
    for (const auto& [name, value] : environment_) command += name + "='" + value + "' ";
    command += "'" + std::string(VIGIL_BINARY) + "' evaluate --quiet --no-follow --plugins '" +
               test::variant_dir("sdk_profiler").string() + "' --job '" + (dir / "job.json").string() + "' --trial '" +
               trial + "' --status-file '" + (dir / "status.json").string() + "' > '" + (dir / "out.txt").string() +
               "' 2>&1";
    std::filesystem::remove(dir / "status.json");
    (void)std::system(command.c_str());
    return test::read_file(dir / "out.txt");
  };
  const std::string output = evaluate("s3://trials/jobs/cli/debug-output");
  const auto file = nlohmann::json::parse(test::read_file(dir / "status.json"));
  ASSERT_EQ(file["ProfilerRuleEvaluationStatuses"].size(), 1u) << output;
  EXPECT_EQ(file["ProfilerRuleEvaluationStatuses"][0]["RuleEvaluationStatus"], "IssuesFound") << output;

  // No profiler-output beside it: the profiler rule has no data folder, and says so.
  const std::string alone = evaluate("s3://trials/jobs/elsewhere/debug-output");
  EXPECT_NE(alone.find("no profiler data folder"), std::string::npos) << alone;
}

TEST(ProfilerJobs, BadProfilerConfigurationsAreRefusedNamingTheField) {
  auto refused = [](const std::string& text, const std::string& expected) {
    auto job = evaluate::parse_job_json(text, "/tmp", "");
    ASSERT_FALSE(job) << text;
    EXPECT_NE(job.error().message.find(expected), std::string::npos) << job.error().message;
  };
  refused(R"({"ProfilerRuleConfigurations": [{"RuleConfigurationName": "P", "RuleParameters": {"rule_to_invoke": "X"}}]})",
          "ProfilerRuleConfigurations[0]: no profiler data folder");
  refused(R"({"ProfilerRuleConfigurations": {}})",
          "Value '{}' at 'profilerRuleConfigurations' failed to satisfy constraint: Member must be a list");
  refused(R"({"DebugRuleConfigurations": [{"RuleConfigurationName": "A", "RuleParameters": {"rule_to_invoke": "X"}}],
              "ProfilerRuleConfigurations": [{"RuleConfigurationName": "A",
                                              "RuleParameters": {"rule_to_invoke": "Y", "base_trial": "/tmp"}}]})",
          "RuleConfigurationName 'A' is used by both debugRuleConfigurations.1 and profilerRuleConfigurations.1");
  refused(R"({"ProfilerRuleConfigurations": [{"RuleConfigurationName": "P", "Bogus": 1}]})",
          "1 validation error detected: Value '1' at 'profilerRuleConfigurations.1.member.Bogus' failed to satisfy "
          "constraint: Member must be one of RuleConfiguration's members");
  refused(R"({"TrainingJobName": "j"})", "DebugRuleConfigurations: is missing (and so is ProfilerRuleConfigurations)");
  std::string many = R"({"ProfilerRuleConfigurations": [)";
  for (int i = 0; i < 21; ++i)
    many += fmt::format(R"({}{{"RuleConfigurationName": "P{}", "RuleParameters": {{"rule_to_invoke": "X"}}}})",
                        i ? "," : "", i);
  refused(many + "]}",
          "at 'profilerRuleConfigurations' failed to satisfy constraint: Member must have length less than or equal to 20");

  auto python = evaluate::parse_job_json(
      R"({"ProfilerRuleConfigurations": [{"RuleConfigurationName": "P", "RuleParameters":
           {"rule_to_invoke": "MyRule", "source_s3_uri": "/tmp/r.py"}}]})",
      "", "/tmp");
  ASSERT_VIGIL_OK(python);
  auto resolved = evaluate::resolve_job(registry(), *python);
  ASSERT_FALSE(resolved);
  EXPECT_NE(resolved.error().message.find("run as debug rules"), std::string::npos) << resolved.error().message;

  // An s3:// profiler trial is parsed, not looked up, when the job is resolved.
  auto s3 = evaluate::resolve_job(registry(), profiler_job("s3://trials/job/profiler-output"));
  EXPECT_VIGIL_OK(s3);
  auto bad_bucket = evaluate::resolve_job(registry(), profiler_job("s3://No_Such_Bucket/profiler-output"));
  ASSERT_FALSE(bad_bucket);
  EXPECT_NE(bad_bucket.error().message.find("is not an S3 location"), std::string::npos) << bad_bucket.error().message;
}

TEST(ProfilerJobs, TheKindCrossesTheIsolationProtocol) {
  evaluate::ChildWork work;
  work.job = profiler_job("/tmp");
  auto decoded = evaluate::decode_child_work(evaluate::encode_child_work(work));
  ASSERT_VIGIL_OK(decoded);
  EXPECT_EQ(decoded->job.rules.at(0).kind, RuleKind::Profiler);
}

}  // namespace
}  // namespace vigil
