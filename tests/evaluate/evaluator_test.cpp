// The evaluator end to end: statuses, the exact steps where conditions are met, containment of
// misbehaving rules, live evaluation while a writer writes, bad jobs, and the `vigil` command.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "evaluate/evaluator.h"
#include "plugin_test_support.h"
#include "test_support.h"
#include "trial/trial.h"


namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using test::registry_with;
using test::ScratchDir;

evaluate::RuleConfig rule(std::string name, std::string rule_to_invoke, std::string trial,
                          std::map<std::string, std::string> params = {}) {
  params["rule_to_invoke"] = std::move(rule_to_invoke);
  auto r = evaluate::rule_from_parameters(std::move(name), params, trial, "test");
  EXPECT_VIGIL_OK(r);
  return *r;
}

std::vector<int64_t> trigger_steps(const evaluate::RuleStatus& s) {
  std::vector<int64_t> out;
  for (const auto& t : s.triggers) out.push_back(t.step);
  return out;
}

std::vector<evaluate::RuleStatus> evaluate_job(const plugin_host::PluginRegistry& registry, evaluate::JobConfig job,
                                               evaluate::EvaluatorOptions options = {}) {
  auto ev = evaluate::Evaluator::create(registry, std::move(job), std::move(options));
  EXPECT_VIGIL_OK(ev);
  if (!ev) return {};
  (*ev)->run({});
  return (*ev)->statuses();
}

TEST(Evaluator, ExactTriggerStepsOnAFixture) {
  auto registry = registry_with({"good"});
  const std::string trial = (test::real_fixtures() / "vanishing_gradient").string();  // saved steps 0, 2, ..., 38
  evaluate::JobConfig job;
  job.rules.push_back(rule("fires", "StepsRule", trial, {{"fire_at", "2,5,38"}}));
  job.rules.push_back(rule("quiet", "StepsRule", trial));
  job.rules.push_back(rule("window", "StepsRule", trial, {{"fire_at", "0,10,20"}, {"start_step", "5"}, {"end_step", "20"}}));
  ScratchDir dir;
  evaluate::EvaluatorOptions options;
  options.status_file = dir.path() / "status.json";
  auto statuses = evaluate_job(registry, job, options);
  ASSERT_EQ(statuses.size(), 3u);

  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{2, 38}));  // 5 was never saved: not invoked
  EXPECT_EQ(statuses[0].details,
            "RuleEvaluationConditionMet: Evaluation of the rule StepsRule at step 2 resulted in the condition being met\n");
  ASSERT_EQ(statuses[0].triggers[0].evidence.size(), 1u);
  EXPECT_EQ(statuses[0].triggers[0].evidence[0]["step"], 2);
  EXPECT_EQ(statuses[1].status, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_TRUE(statuses[1].details.empty());
  EXPECT_EQ(statuses[2].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(statuses[2]), (std::vector<int64_t>{10}));

  // The status file holds the same, in SageMaker's shape.
  std::ifstream in(dir.path() / "status.json");
  auto file = nlohmann::json::parse(in);
  const auto& list = file.at("DebugRuleEvaluationStatuses");
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["RuleConfigurationName"], "fires");
  EXPECT_EQ(list[0]["RuleEvaluationStatus"], "IssuesFound");
  EXPECT_EQ(list[0]["StatusDetails"], statuses[0].details);
  EXPECT_TRUE(list[0]["LastModifiedTime"].is_number());
  EXPECT_EQ(list[0]["Triggers"].size(), 2u);
  EXPECT_EQ(list[1]["RuleEvaluationStatus"], "NoIssuesFound");
  EXPECT_FALSE(list[1].contains("StatusDetails"));
}

TEST(Evaluator, EndOfRuleStopsTheRule) {
  auto registry = registry_with({"good"});
  evaluate::JobConfig job;
  job.rules.push_back(rule("r", "StepsRule", (test::real_fixtures() / "mlp_healthy").string(), {{"fire_at", "3,7"}, {"end_at", "4"}}));
  auto statuses = evaluate_job(registry, job);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{3, 4}));  // 7 never reached
}

TEST(Evaluator, MisbehavingRulesGetErrorAndOthersFinish) {
  auto registry = registry_with({"good"});
  const std::string trial = (test::real_fixtures() / "mlp_healthy").string();
  evaluate::JobConfig job;
  job.rules.push_back(rule("unknown-status", "UnknownStatus", trial));
  job.rules.push_back(rule("leaks", "LeaksView", trial));
  job.rules.push_back(rule("throws", "Thrower", trial));
  job.rules.push_back(rule("fails", "StepsRule", trial, {{"fail_at", "6"}}));
  job.rules.push_back(rule("healthy", "StepsRule", trial, {{"fire_at", "29"}}));
  auto statuses = evaluate_job(registry, job);
  ASSERT_EQ(statuses.size(), 5u);
  auto expect_error = [&](size_t i, const std::string& part) {
    EXPECT_EQ(statuses[i].status, RuleEvaluationStatus::Error) << statuses[i].configuration_name;
    EXPECT_NE(statuses[i].details.find(part), std::string::npos) << statuses[i].details;
  };
  expect_error(0, "returned unknown status 4242 at step 0");
  expect_error(1, "kept 1 tensor view(s) past invoke_at_step at step 0");
  expect_error(2, "threw a C++ exception across the C ABI at step 0");
  expect_error(3, "SMDebugRuntimeError: deliberate failure at step 6");
  EXPECT_EQ(statuses[4].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(statuses[4]), (std::vector<int64_t>{29}));
}

TEST(Evaluator, PluginsThrowingFromEveryRuleCallbackAreContained) {
  for (const char* variant : {"throw_in_create", "throw_in_required", "throw_in_invoke", "throw_in_destroy"}) {
    SCOPED_TRACE(variant);
    auto registry = registry_with({variant});
    ASSERT_EQ(registry.rules().size(), 5u);
    evaluate::JobConfig job;
    job.rules.push_back(rule("r", "StepsRule", (test::real_fixtures() / "mixed_dtypes").string(), {{"fire_at", "1"}}));
    auto statuses = evaluate_job(registry, job);
    ASSERT_EQ(statuses.size(), 1u);
    if (std::string(variant) == "throw_in_destroy") {
      EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);  // the verdict stands
    } else {
      EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::Error);
      EXPECT_NE(statuses[0].details.find("threw a C++ exception"), std::string::npos) << statuses[0].details;
    }
  }
}

TEST(Evaluator, RulesShareOneReadOfEachTensor) {
  // Two rules at the same step read through one cache: the StepsRule prefetches every tensor.
  auto registry = registry_with({"good"});
  const std::string trial = (test::real_fixtures() / "mixed_dtypes").string();
  evaluate::JobConfig job;
  job.rules.push_back(rule("a", "StepsRule", trial, {{"fire_at", "0"}}));
  job.rules.push_back(rule("b", "StepsRule", trial, {{"fire_at", "3"}}));
  auto statuses = evaluate_job(registry, job);
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{0}));
  EXPECT_EQ(trigger_steps(statuses[1]), (std::vector<int64_t>{3}));
}

TEST(Evaluator, PureCPluginOnAFixture) {
  plugin_host::PluginRegistry registry;
  registry.load_directory(VIGIL_EXAMPLE_C_PLUGIN_DIR);
  ASSERT_NE(registry.find("LossAboveThreshold"), nullptr);
  const auto trial_path = (test::real_fixtures() / "mlp_healthy");
  // The expected steps, computed independently from the trial API.
  auto trial = Trial::open(trial_path);
  ASSERT_TRUE(trial.has_value());
  std::vector<int64_t> expected;
  const auto steps = (*trial)->steps().value();
  for (int64_t step : steps) {
    auto v = (*trial)->value("CrossEntropyLoss_output_0", step);
    ASSERT_VIGIL_OK(v);
    if (v->as<float>()[0] > 1.3f) expected.push_back(step);
  }
  ASSERT_FALSE(expected.empty());
  evaluate::JobConfig job;
  job.rules.push_back(rule("loss", "LossAboveThreshold", trial_path.string(), {{"threshold", "1.3"}}));
  auto statuses = evaluate_job(registry, job);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(statuses[0]), expected);
  EXPECT_EQ(statuses[0].triggers[0].evidence[0]["tensor"], "CrossEntropyLoss_output_0");
}

TEST(Evaluator, FollowsALiveTrial) {
  auto registry = registry_with({"good"});
  ScratchDir dir;
  std::atomic<bool> writer_ok{true};
  // The first step must exist before the evaluator is created (the trial folder must exist).
  std::filesystem::create_directories(dir.path());
  std::thread writer([&] {
    writer::WriterOptions o;
    for (auto& m : o.save_config) m.save_interval = 1;
    auto w = writer::TrialWriter::create(dir.path(), o);
    if (!w) { writer_ok = false; return; }
    for (int s = 0; s < 40; ++s) {
      std::vector<float> v{float(s)};
      writer_ok = writer_ok && (*w)->begin_step(Mode::Train) && (*w)->write_tensor("w", test::float_data(v, {1})) &&
                  (*w)->end_step();
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    writer_ok = writer_ok && (*w)->close();
  });
  evaluate::JobConfig job;
  job.rules.push_back(rule("live", "StepsRule", dir.path().string(), {{"fire_at", "5,17,39"}}));
  std::vector<evaluate::RuleEvaluationStatus> seen;
  evaluate::EvaluatorOptions options;
  std::mutex mu;
  options.on_status = [&](const evaluate::RuleStatus& s) {
    std::lock_guard lock(mu);
    seen.push_back(s.status);
  };
  auto statuses = evaluate_job(registry, job, options);
  writer.join();
  ASSERT_TRUE(writer_ok);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{5, 17, 39}));
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(seen.front(), RuleEvaluationStatus::InProgress);
}

// A live trial's collection files are awaited on inotify, not at the poll interval: with a poll
// interval of ten minutes, the evaluation still ends once the writer has written its trial (without
// inotify on open, the wait for the collection files would sleep those ten minutes).
TEST(Evaluator, AwaitsALiveTrialsCollectionFilesOnInotify) {
  auto registry = registry_with({"good"});
  ScratchDir dir;
  std::filesystem::create_directories(dir.path());  // the trial folder exists, empty
  evaluate::JobConfig job;
  job.rules.push_back(rule("live", "StepsRule", dir.path().string(), {{"fire_at", "1"}}));
  evaluate::EvaluatorOptions options;
  options.poll_interval = std::chrono::minutes(10);
  auto ev = evaluate::Evaluator::create(registry, job, options);
  ASSERT_VIGIL_OK(ev);
  std::jthread evaluation([&] { (*ev)->run({}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let it wait for the collection files
  ASSERT_TRUE(test::list_files(dir.path()).empty());
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 3), /*end_marker=*/true);
  evaluation.join();
  const auto statuses = (*ev)->statuses();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{1}));
}

// ABI 1.4: a rule whose plugin offers a preparer is created only after its preparation returned
// (the "prepares" plugin refuses to create a rule that was not prepared), and a failed preparation
// leaves the rule's status as it would have been: create() reports what matters, the log says why.
TEST(Evaluator, CreatesPreparedRulesAfterTheirPreparation) {
  auto registry = registry_with({"prepares"});
  ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
  const std::string trial = (test::real_fixtures() / "vanishing_gradient").string();  // saved steps 0, 2, ..., 38
  evaluate::JobConfig job;
  job.rules.push_back(rule("a", "StepsRule", trial, {{"fire_at", "2"}}));
  job.rules.push_back(rule("fail-prepare-b", "StepsRule", trial, {{"fire_at", "4"}}));
  std::mutex mu;
  std::vector<std::string> logs;
  evaluate::EvaluatorOptions options;
  options.on_log = [&](const std::string& rule, int, const std::string& message) {
    std::lock_guard lock(mu);
    logs.push_back(rule + ": " + message);
  };
  auto statuses = evaluate_job(registry, job, options);
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound) << statuses[0].details;
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{2}));
  EXPECT_EQ(statuses[1].status, RuleEvaluationStatus::IssuesFound) << statuses[1].details;
  EXPECT_EQ(trigger_steps(statuses[1]), (std::vector<int64_t>{4}));
  EXPECT_TRUE(std::any_of(logs.begin(), logs.end(), [](const std::string& l) {
    return l.starts_with("fail-prepare-b: ") && l.find("deliberate prepare failure") != std::string::npos;
  })) << ::testing::PrintToString(logs);
}

TEST(Evaluator, NoFollowAndIdleTimeoutEndTrialsWithoutMarker) {
  auto registry = registry_with({"good"});
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 5), /*end_marker=*/false);
  {
    evaluate::JobConfig job;
    job.rules.push_back(rule("r", "StepsRule", dir.path().string(), {{"fire_at", "5"}}));
    evaluate::EvaluatorOptions options;
    options.follow = false;
    auto statuses = evaluate_job(registry, job, options);
    EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound);
    EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{5}));
  }
  {
    evaluate::JobConfig job;
    job.rules.push_back(rule("r", "StepsRule", dir.path().string()));
    evaluate::EvaluatorOptions options;
    options.idle_timeout = std::chrono::milliseconds(300);
    auto started = std::chrono::steady_clock::now();
    auto statuses = evaluate_job(registry, job, options);
    EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::NoIssuesFound);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  }
}

TEST(Evaluator, StopRequestMovesRulesToStopped) {
  auto registry = registry_with({"good"});
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 2), /*end_marker=*/false);
  evaluate::JobConfig job;
  job.rules.push_back(rule("r", "StepsRule", dir.path().string()));
  std::vector<RuleEvaluationStatus> seen;
  std::mutex mu;
  evaluate::EvaluatorOptions options;
  options.on_status = [&](const evaluate::RuleStatus& s) {
    std::lock_guard lock(mu);
    seen.push_back(s.status);
  };
  auto ev = evaluate::Evaluator::create(registry, job, options);
  ASSERT_TRUE(ev.has_value());
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  (*ev)->run(stop.get_token());
  stopper.join();
  EXPECT_EQ((*ev)->statuses()[0].status, RuleEvaluationStatus::Stopped);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[seen.size() - 2], RuleEvaluationStatus::Stopping);
  EXPECT_EQ(seen.back(), RuleEvaluationStatus::Stopped);
}

// ---- bad jobs ----

void expect_bad_job(const std::string& json, const std::string& part, const std::string& trial = "/tmp") {
  auto job = evaluate::parse_job_json(json, trial);
  if (!job) {
    EXPECT_NE(job.error().message.find(part), std::string::npos) << job.error().message;
    return;
  }
  auto registry = registry_with({"good"});
  auto ev = evaluate::Evaluator::create(registry, *job, {});
  ASSERT_FALSE(ev.has_value()) << "accepted: " << json;
  EXPECT_NE(ev.error().message.find(part), std::string::npos) << ev.error().message;
}

std::string one_rule(const std::string& params) {
  return R"({"DebugRuleConfigurations": [{"RuleConfigurationName": "r", "RuleParameters": {)" + params + "}}]}";
}

// A debug rule's trial in object storage is taken by its location: a live job's may not exist yet.
TEST(Jobs, TakeATrialInObjectStorage) {
  auto job = evaluate::parse_job_json(R"({"DebugRuleConfigurations": [{"RuleConfigurationName": "r",
      "RuleParameters": {"rule_to_invoke": "StepsRule", "other_trial_0": "s3://other-bucket/run"}}]})",
                                      "s3://trials/job/debug-output");
  ASSERT_TRUE(job.has_value()) << job.error().message;
  auto registry = registry_with({"good"});
  auto ev = evaluate::Evaluator::create(registry, *job, {});
  // StepsRule reads one trial: the other trial is refused for that, not for being in a bucket.
  ASSERT_FALSE(ev.has_value());
  EXPECT_NE(ev.error().message.find("reads only its base trial"), std::string::npos) << ev.error().message;
  auto base_only = evaluate::parse_job_json(one_rule(R"("rule_to_invoke": "StepsRule")"), "s3://trials/job/debug-output");
  ASSERT_TRUE(base_only.has_value()) << base_only.error().message;
  auto ok = evaluate::Evaluator::create(registry, *base_only, {});
  EXPECT_TRUE(ok.has_value()) << ok.error().message;
}

TEST(BadJobs, AreRefusedNamingTheField) {
  expect_bad_job("{not json", "not valid JSON");
  expect_bad_job("{}", "DebugRuleConfigurations: is missing");
  expect_bad_job(one_rule(R"("rule_to_invoke": "NoSuchRule")"), "rule_to_invoke: unknown rule 'NoSuchRule'");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule", "bogus": "1")"), "unknown parameter 'bogus'");
  expect_bad_job(one_rule(R"("rule_to_invoke": "Validated", "needed": "x", "ratio": "7")"),
                 "parameter 'ratio' has invalid value '7'");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule", "fail_at": 3)"),
                 "ValidationException: 1 validation error detected: Value '3' at "
                 "'debugRuleConfigurations.1.member.ruleParameters.fail_at' failed to satisfy constraint: Member must "
                 "be a string");
  // The member checks are CreateTrainingJob's (evaluate/request_validation.h), in the service's wording.
  expect_bad_job(R"([{"RuleConfigurationName": "", "RuleParameters": {"rule_to_invoke": "StepsRule"}}])",
                 "Value '' at 'debugRuleConfigurations.1.member.ruleConfigurationName' failed to satisfy constraint: "
                 "Member must have length greater than or equal to 1");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule", "start_step": "10", "end_step": "5")"),
                 "end_step: must be greater than start_step");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule", "start_step": "-1")"), "start_step: '-1' is not a non-negative integer");
  expect_bad_job(one_rule(R"("fire_at": "1")"), "rule_to_invoke: is required");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule")"), "no trial", "");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule")"), "is not a directory", "/no/such/trial");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule")"), "trial 's3://Not_A_Bucket/x'", "s3://Not_A_Bucket/x");
  expect_bad_job(one_rule(R"("rule_to_invoke": "StepsRule", "other_trial_0": "/tmp")"), "reads only its base trial");
  std::string many = R"({"DebugRuleConfigurations": [)";
  for (int i = 0; i < 21; ++i)
    many += (i ? "," : "") + std::string(R"({"RuleConfigurationName": "r)") + std::to_string(i) +
            R"(", "RuleParameters": {"rule_to_invoke": "StepsRule"}})";
  expect_bad_job(many + "]}",
                 "at 'debugRuleConfigurations' failed to satisfy constraint: Member must have length less than or equal to 20");
  expect_bad_job(R"({"DebugRuleConfigurations": [
      {"RuleConfigurationName": "r", "RuleParameters": {"rule_to_invoke": "StepsRule"}},
      {"RuleConfigurationName": "r", "RuleParameters": {"rule_to_invoke": "StepsRule"}}]})",
                 "ValidationException: RuleConfigurationName 'r' is used by both debugRuleConfigurations.1 and "
                 "debugRuleConfigurations.2: rule configuration names must be unique within a job");
}

// Found by fuzz/job_config_fuzzer: a number too large for a double threw an exception the parser
// did not catch, terminating `vigil evaluate` instead of naming the problem.
TEST(BadJobs, NumbersBeyondDoubleAreRefusedCleanly) {
  for (const std::string json : {"33033E3333334000000000001595688857119705899]32214]", "[1e400]",
                                 R"({"DebugRuleConfigurations": [], "ResourceConfig": {"InstanceCount": -1E999}})"}) {
    auto job = evaluate::parse_job_json(json, "/tmp");
    ASSERT_FALSE(job.has_value()) << json;
    EXPECT_EQ(job.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(job.error().message.find("not valid JSON"), std::string::npos) << job.error().message;
  }
}

// Found while writing fuzz/job_config_fuzzer (and confirmed with it): a CheckpointConfig path that
// is not a string threw nlohmann's type_error out of the parser.
TEST(BadJobs, NonStringCheckpointPathsAreRefusedCleanly) {
  const std::string rules = R"("DebugRuleConfigurations": [{"RuleConfigurationName": "r", "RuleParameters": {"rule_to_invoke": "X"}}])";
  for (const std::string member : {R"("S3Uri": 5)", R"("LocalPath": ["/opt/ml/checkpoints"])"}) {
    auto job = evaluate::parse_job_json("{" + rules + R"(, "CheckpointConfig": {)" + member + "}}", "/tmp");
    ASSERT_FALSE(job.has_value()) << member;
    EXPECT_EQ(job.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(job.error().message.find("must be a string"), std::string::npos) << job.error().message;
  }
}

// Found by feeding fuzz/job_config_fuzzer deeply nested files: copying or printing a value nested
// 200,000 levels deep overflowed the stack.
TEST(BadJobs, DeeplyNestedJobFilesAreRefusedCleanly) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& json : {R"({"HyperParameters": )" + deep + R"(, "DebugRuleConfigurations": []})",
                                 R"({"DebugRuleConfigurations": [{"RuleConfigurationName": "r", "RuleParameters": {"k": )" + deep + "}}]}"}) {
    auto job = evaluate::parse_job_json(json, "/tmp");
    ASSERT_FALSE(job.has_value());
    EXPECT_EQ(job.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(job.error().message.find("nests deeper than 128 levels"), std::string::npos) << job.error().message;
  }
}

TEST(BadJobs, UnsupportedTrainingSetups) {
  const std::string rules = R"("DebugRuleConfigurations": [{"RuleConfigurationName": "r", "RuleParameters": {"rule_to_invoke": "StepsRule"}}])";
  expect_bad_job("{" + rules + R"(, "ResourceConfig": {"InstanceCount": 2}, "CheckpointConfig": {"S3Uri": "s3://b/c"}})",
                 "SMDebug Does Not Currently Support Distributed Training Jobs With Checkpointing Enabled");
  expect_bad_job("{" + rules +
                     R"(, "HyperParameters": {"sagemaker_distributed_dataparallel_enabled": "true"}, "CheckpointConfig": {"LocalPath": "/opt/ml/checkpoints"}})",
                 "SMDebug Does Not Currently Support Distributed Training Jobs With Checkpointing Enabled");
  expect_bad_job("{" + rules + R"(, "Distribution": {"smdistributed": {"modelparallel": {"enabled": true}}}})",
                 "does not support SageMaker model parallel");
  expect_bad_job("{" + rules + R"(, "Distribution": {"parameter_server": {"enabled": true}}})",
                 "does not currently support Parameter Server distribution");
  // Distributed without checkpoints, and checkpoints on one instance, are fine.
  for (const char* ok : {R"(, "ResourceConfig": {"InstanceCount": 4})", R"(, "CheckpointConfig": {"S3Uri": "s3://b/c"})"}) {
    auto job = evaluate::parse_job_json("{" + rules + ok + "}", "/tmp");
    EXPECT_VIGIL_OK(job);
  }
}

// ---- the command ----

struct CommandResult {
  int exit_code;
  std::string out;
};

CommandResult run_vigil(std::vector<std::string> args, const std::filesystem::path& scratch) {
  args.insert(args.begin(), VIGIL_BINARY);
  std::string cmd;
  for (const auto& a : args) cmd += "'" + a + "' ";
  cmd += "> '" + (scratch / "out.txt").string() + "' 2>&1";
  int status = std::system(cmd.c_str());
  std::ifstream in(scratch / "out.txt");
  return {WEXITSTATUS(status), std::string(std::istreambuf_iterator<char>(in), {})};
}

TEST(Command, EvaluateExitCodesAndOutput) {
  ScratchDir dir;
  const std::string plugins = test::variant_dir("good").string();
  const std::string trial = (test::real_fixtures() / "mlp_healthy").string();
  auto ok = run_vigil({"evaluate", "--plugins", plugins, "--trial", trial, "--rule", "StepsRule", "--param",
                       "fire_at=4", "--status-file", (dir.path() / "s.json").string()},
                      dir.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("vigil: [StepsRule] InProgress"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("vigil: [StepsRule] IssuesFound: RuleEvaluationConditionMet: Evaluation of the rule StepsRule "
                        "at step 4 resulted in the condition being met"),
            std::string::npos)
      << ok.out;
  auto bad = run_vigil({"evaluate", "--plugins", plugins, "--trial", trial, "--rule", "StepsRule", "--param", "nope=1"},
                       dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown parameter 'nope'"), std::string::npos) << bad.out;
  auto usage = run_vigil({"evaluate", "--bogus"}, dir.path());
  EXPECT_EQ(usage.exit_code, 2);
  auto help = run_vigil({"evaluate", "--help"}, dir.path());
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--idle-timeout"), std::string::npos);
  auto unwritable = run_vigil({"evaluate", "--plugins", plugins, "--trial", trial, "--rule", "StepsRule",
                               "--status-file", "/proc/vigil-cannot-write/s.json"},
                              dir.path());
  EXPECT_EQ(unwritable.exit_code, 3) << unwritable.out;
}

TEST(Command, SigtermStopsTheEvaluation) {
  ScratchDir dir;
  test::write_worker(dir.path() / "trial", "worker_0", 1, test::range_steps(0, 2), /*end_marker=*/false);
  const auto status_file = dir.path() / "status.json";
  std::vector<std::string> args = {VIGIL_BINARY, "evaluate", "--plugins", test::variant_dir("good").string(),
                                   "--trial", (dir.path() / "trial").string(), "--rule", "StepsRule",
                                   "--status-file", status_file.string(), "--quiet"};
  auto file = test::evaluate_then_sigterm(std::move(args), status_file);
  EXPECT_EQ(file["DebugRuleEvaluationStatuses"][0]["RuleEvaluationStatus"], "Stopped");
}

TEST(Command, RulesAndImageUri) {
  ScratchDir dir;
  auto rules = run_vigil({"rules", "--json", "--plugins", test::variant_dir("good").string(), "--plugins",
                          test::variant_dir("init_fails").string()},
                         dir.path());
  ASSERT_EQ(rules.exit_code, 0) << rules.out;
  auto j = nlohmann::json::parse(rules.out);
  // The built-in rules of the build tree are listed too; look at the test plugin's.
  std::vector<nlohmann::json> from_good;
  for (const auto& r : j["rules"])
    if (r["plugin"] == "vigil.test.variant.good") from_good.push_back(r);
  ASSERT_EQ(from_good.size(), 5u);
  EXPECT_EQ(from_good[0]["name"], "StepsRule");
  EXPECT_EQ(from_good[0]["parameters"][1]["name"], "fail_at");
  EXPECT_EQ(from_good[0]["parameters"][1]["default"], "-1");
  size_t init_refusals = 0;
  for (const auto& r : j["refused_plugins"])
    init_refusals += r["reason"].get<std::string>().find("deliberate init failure") != std::string::npos;
  EXPECT_EQ(init_refusals, 1u);

  auto uri = run_vigil({"image-uri", "--region", "eu-west-1"}, dir.path());
  EXPECT_EQ(uri.exit_code, 0);
  EXPECT_EQ(uri.out, "929884845733.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-debugger-rules:latest\n");
  auto custom = run_vigil({"image-uri", "--region", "cn-northwest-1", "--custom"}, dir.path());
  EXPECT_EQ(custom.out, "658559488188.dkr.ecr.cn-northwest-1.amazonaws.com.cn/sagemaker-debugger-rule-evaluator:latest\n");
  auto list = run_vigil({"image-uri", "--list"}, dir.path());
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 24);
  auto unknown = run_vigil({"image-uri", "--region", "mars-north-1"}, dir.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("unknown region 'mars-north-1'"), std::string::npos);
}

}  // namespace
}  // namespace vigil
