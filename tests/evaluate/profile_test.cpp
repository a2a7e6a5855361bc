// ABI 1.2 on the host side: rule profiles (descriptor profile defaults, their checks, binding, the
// vigil_profile key), the Judgement of rules that say they did not judge, and wall-clock ticks.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluate/evaluator.h"
#include "evaluate/isolation_protocol.h"
#include "plugin_host/param_values.h"
#include "plugin_host/profiles.h"
#include "plugin_test_support.h"
#include "test_support.h"

namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using test::registry_with;
using test::ScratchDir;

const plugin_host::PluginRegistry& profile_registry() {
  static const auto registry = registry_with({"sdk_profiles"});
  return registry;
}

const vigil_rule_descriptor& profiled_rule() {
  const auto* type = profile_registry().find("ProfiledRule");
  EXPECT_NE(type, nullptr) << "the sdk_profiles test plugin did not load";
  return *type->descriptor;
}

std::map<std::string, std::string> bound(const vigil_rule_descriptor& d, std::map<std::string, std::string> given,
                                         std::string_view profile) {
  auto params = plugin_host::BoundParams::bind(d, given, "test", profile);
  EXPECT_VIGIL_OK(params);
  std::map<std::string, std::string> out;
  if (!params) return out;
  for (uint32_t i = 0; i < d.param_count; ++i) out[d.params[i].name] = params->parsed()[i].text;
  return out;
}

TEST(Profiles, TheSdkPutsCalibratedDefaultsInTheDescriptor) {
  const auto& d = profiled_rule();
  const auto defaults = plugin_host::profile_defaults(&d);
  ASSERT_EQ(defaults.size(), 2u);
  EXPECT_STREQ(defaults[0].profile, VIGIL_PROFILE_CALIBRATED);
  EXPECT_STREQ(defaults[0].param, "fire_at");
  EXPECT_STREQ(defaults[0].default_text, "4");
  EXPECT_STREQ(defaults[1].param, "min_steps");
  EXPECT_EQ(plugin_host::check_descriptor(&d), "");
}

TEST(Profiles, BindingTakesTheProfilesDefaultsAndGivenValuesWin) {
  const auto& d = profiled_rule();
  EXPECT_EQ(bound(d, {}, VIGIL_PROFILE_SAGEMAKER),
            (std::map<std::string, std::string>{{"fire_at", "1"}, {"label", "plain"}, {"min_steps", "0"}}));
  EXPECT_EQ(bound(d, {}, VIGIL_PROFILE_CALIBRATED),
            (std::map<std::string, std::string>{{"fire_at", "4"}, {"label", "plain"}, {"min_steps", "3"}}));
  EXPECT_EQ(bound(d, {{"fire_at", "7"}}, VIGIL_PROFILE_CALIBRATED).at("fire_at"), "7");
}

TEST(Profiles, AnOlderDescriptorHasNoProfileDefaults) {
  vigil_rule_descriptor d = profiled_rule();
  d.struct_size = offsetof(vigil_rule_descriptor, profile_defaults);  // what an ABI 1.1 plugin declares
  EXPECT_TRUE(plugin_host::profile_defaults(&d).empty());
  EXPECT_EQ(bound(d, {}, VIGIL_PROFILE_CALIBRATED).at("fire_at"), "1");
  EXPECT_EQ(plugin_host::check_descriptor(&d), "");
}

TEST(Profiles, TheLoaderRefusesBadProfileDefaults) {
  const vigil_rule_descriptor good = profiled_rule();
  struct Case {
    vigil_profile_default entry;
    std::string expected;
  };
  const uint32_t size = sizeof(vigil_profile_default);
  const std::vector<Case> cases = {
      {{size - 1, VIGIL_PROFILE_CALIBRATED, "fire_at", "4"}, "struct_size"},
      {{size, "tuned", "fire_at", "4"}, "names profile 'tuned'"},
      {{size, VIGIL_PROFILE_SAGEMAKER, "fire_at", "4"}, "names profile 'sagemaker'"},
      {{size, VIGIL_PROFILE_CALIBRATED, "fire_now", "4"}, "names no declared parameter"},
      {{size, VIGIL_PROFILE_CALIBRATED, "fire_at", "-2"}, "invalid"},
      {{size, VIGIL_PROFILE_CALIBRATED, "fire_at", nullptr}, "is NULL"},
  };
  for (const auto& c : cases) {
    vigil_rule_descriptor d = good;
    d.profile_defaults = &c.entry;
    d.profile_default_count = 1;
    EXPECT_NE(plugin_host::check_descriptor(&d).find(c.expected), std::string::npos)
        << c.expected << ": " << plugin_host::check_descriptor(&d);
  }
  const vigil_profile_default twice[] = {{size, VIGIL_PROFILE_CALIBRATED, "fire_at", "4"},
                                         {size, VIGIL_PROFILE_CALIBRATED, "fire_at", "5"}};
  vigil_rule_descriptor d = good;
  d.profile_defaults = twice;
  d.profile_default_count = 2;
  EXPECT_NE(plugin_host::check_descriptor(&d).find("two calibrated defaults"), std::string::npos);
  d.profile_defaults = nullptr;
  EXPECT_NE(plugin_host::check_descriptor(&d).find("no array"), std::string::npos);
}

TEST(Profiles, TheReservedKeySelectsAProfileAndTheJobDefaultFillsTheRest) {
  auto own = evaluate::rule_from_parameters("a", {{"rule_to_invoke", "ProfiledRule"}, {"vigil_profile", "calibrated"}},
                                            "/tmp", "test");
  ASSERT_VIGIL_OK(own);
  EXPECT_EQ(own->profile, "calibrated");
  EXPECT_EQ(own->parameters.count("vigil_profile"), 0u);  // reserved: never passed to the rule
  auto unknown = evaluate::rule_from_parameters("b", {{"rule_to_invoke", "ProfiledRule"}, {"vigil_profile", "tuned"}},
                                                "/tmp", "test");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown profile 'tuned' (profiles: sagemaker, calibrated)"), std::string::npos)
      << unknown.error().message;

  auto plain = evaluate::rule_from_parameters("c", {{"rule_to_invoke", "ProfiledRule"}}, "/tmp", "test");
  ASSERT_VIGIL_OK(plain);
  evaluate::JobConfig job{.rules = {*own, *plain}};
  job.rules[0].profile = "sagemaker";
  ASSERT_VIGIL_OK(evaluate::apply_default_profile(job, "calibrated"));
  EXPECT_EQ(job.rules[0].profile, "sagemaker");  // a rule's own choice stays
  EXPECT_EQ(job.rules[1].profile, "calibrated");
  EXPECT_FALSE(evaluate::apply_default_profile(job, "tuned"));
}

std::vector<evaluate::RuleStatus> run_job(std::vector<std::map<std::string, std::string>> rules, const std::filesystem::path& trial,
                                          evaluate::EvaluatorOptions options = {}) {
  evaluate::JobConfig job;
  for (size_t i = 0; i < rules.size(); ++i) {
    auto r = evaluate::rule_from_parameters(fmt::format("rule{}", i), rules[i], trial.string(), "test");
    EXPECT_VIGIL_OK(r);
    if (r) job.rules.push_back(*r);
  }
  auto ev = evaluate::Evaluator::create(profile_registry(), std::move(job), std::move(options));
  EXPECT_VIGIL_OK(ev);
  if (!ev) return {};
  (*ev)->run({});
  return (*ev)->statuses();
}

TEST(Profiles, TheEvaluatorRunsEachRuleWithItsProfileAndCountsWhatItJudged) {
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 9), /*end_marker=*/true);
  auto statuses = run_job({{{"rule_to_invoke", "ProfiledRule"}},
                           {{"rule_to_invoke", "ProfiledRule"}, {"vigil_profile", "calibrated"}}},
                          dir.path());
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].profile, "sagemaker");
  EXPECT_EQ(test::trigger_steps(statuses[0]), (std::vector<int64_t>{1}));
  EXPECT_EQ(statuses[0].judgement.steps_judged, 10);
  EXPECT_EQ(statuses[0].judgement.steps_not_judged, 0);
  EXPECT_EQ(statuses[1].profile, "calibrated");
  EXPECT_EQ(test::trigger_steps(statuses[1]), (std::vector<int64_t>{4}));
  EXPECT_EQ(statuses[1].judgement.steps_judged, 7);
  EXPECT_EQ(statuses[1].judgement.steps_not_judged, 3);
  EXPECT_EQ(statuses[1].judgement.reason, "3 of 3 steps seen");
}

TEST(Profiles, ARuleThatNeverJudgedSaysSoBesideNoIssuesFound) {
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 2), /*end_marker=*/true);
  evaluate::EvaluatorOptions options;
  options.status_file = dir / "status.json";
  auto statuses = run_job({{{"rule_to_invoke", "ProfiledRule"}, {"vigil_profile", "calibrated"}}}, dir.path(), options);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_FALSE(statuses[0].judgement.enough_data());
  const auto file = nlohmann::json::parse(test::read_file(dir / "status.json"));
  const auto& entry = file["DebugRuleEvaluationStatuses"][0];
  EXPECT_EQ(entry["RuleEvaluationStatus"], "NoIssuesFound");
  EXPECT_EQ(entry["Profile"], "calibrated");
  EXPECT_EQ(entry["Judgement"]["EnoughData"], false);
  EXPECT_EQ(entry["Judgement"]["StepsJudged"], 0);
  EXPECT_EQ(entry["Judgement"]["StepsNotJudged"], 3);
  EXPECT_EQ(entry["Judgement"]["NotJudgedReason"], "3 of 3 steps seen");
}

TEST(Judgement, LongReasonsAndDetailsAreCutOnACharacterBoundary) {
  // 1023 ASCII bytes and then "é" (2 bytes): byte 1024 would split it; the status file must stay JSON.
  ScratchDir dir;
  evaluate::StatusBoard board({evaluate::RuleStatus{.configuration_name = "r"}}, dir / "status.json", {});
  const std::string text = std::string(1023, 'x') + "\xc3\xa9 and more";
  board.count_judgement(0, false, text, true);
  board.set(0, RuleEvaluationStatus::Error, text);
  ASSERT_VIGIL_OK(board.flush());
  EXPECT_EQ(board.get(0).details, std::string(1023, 'x'));
  EXPECT_EQ(board.get(0).judgement.reason, std::string(1023, 'x'));
  const auto file = nlohmann::json::parse(test::read_file(dir / "status.json"));
  EXPECT_EQ(file["DebugRuleEvaluationStatuses"][0]["StatusDetails"].get<std::string>().size(), 1023u);
}

TEST(Profiles, JudgementsAndProfilesCrossTheIsolationProtocol) {
  evaluate::ChildWork work;
  auto r = evaluate::rule_from_parameters("a", {{"rule_to_invoke", "ProfiledRule"}, {"vigil_profile", "calibrated"}},
                                          "/tmp", "test");
  ASSERT_VIGIL_OK(r);
  work.job.rules.push_back(*r);
  auto decoded = evaluate::decode_child_work(evaluate::encode_child_work(work));
  ASSERT_VIGIL_OK(decoded);
  EXPECT_EQ(decoded->job.rules.at(0).profile, "calibrated");

  const evaluate::Judgement j{.steps_judged = 2, .steps_not_judged = 5, .reason = "too few labels"};
  const nlohmann::json line = {{"rule", 0}, {"Judgement", evaluate::judgement_to_json(j)}};
  auto event = evaluate::parse_child_event(line.dump());
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->kind, evaluate::ChildEvent::Kind::Judgement);
  EXPECT_EQ(event->judgement.steps_judged, 2);
  EXPECT_EQ(event->judgement.steps_not_judged, 5);
  EXPECT_EQ(event->judgement.reason, "too few labels");
}

TEST(Profiles, WallClockTicksLetARuleFireWhileNoStepArrives) {
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 2), /*end_marker=*/false);
  evaluate::EvaluatorOptions options;
  options.idle_timeout = std::chrono::milliseconds(1500);
  options.tick_interval = std::chrono::milliseconds(50);
  auto statuses = run_job({{{"rule_to_invoke", "ClockRule"}}, {{"rule_to_invoke", "ProfiledRule"}}}, dir.path(), options);
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].status, RuleEvaluationStatus::IssuesFound) << test::seen(statuses[0]);
  // Reported as at the last step, once however many ticks found the stall.
  EXPECT_EQ(test::trigger_steps(statuses[0]), (std::vector<int64_t>{2}));
  EXPECT_EQ(test::evidence(statuses[0], 0).value("last_step", -1), 2);
  EXPECT_EQ(statuses[1].status, RuleEvaluationStatus::IssuesFound);  // the other rule ran as usual
  EXPECT_EQ(test::trigger_steps(statuses[1]), (std::vector<int64_t>{1}));

  // Without following there is nothing to wait for, so no tick.
  options.follow = false;
  statuses = run_job({{{"rule_to_invoke", "ClockRule"}}}, dir.path(), options);
  EXPECT_EQ(statuses.at(0).status, RuleEvaluationStatus::NoIssuesFound);
}

}  // namespace
}  // namespace vigil
