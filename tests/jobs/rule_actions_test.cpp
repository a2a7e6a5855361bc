// parse_rule_actions and choose_job_to_stop: the built-in actions of sagemaker-api §5 as the rule
// container reads them.
#include "jobs/rule_actions.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vigil::jobs {
namespace {

using Kind = RuleAction::Kind;

RuleActions parsed(std::string_view text, std::string_view default_job_name = "job-1") {
  auto r = parse_rule_actions(text, default_job_name);
  EXPECT_TRUE(r.has_value()) << text << ": " << (r ? "" : r.error().message);
  return r ? std::move(*r) : RuleActions{};
}

// The one warning of `actions`, "" when there is none (and a failure when there are several).
std::string only_warning(const RuleActions& actions) {
  EXPECT_LE(actions.warnings.size(), 1u);
  return actions.warnings.empty() ? "" : actions.warnings.front();
}

// What the SDK sends (sagemaker-api §10): the value of the action_json rule parameter, with its
// backslash-escaped quotes, read from the example request's JSON.
TEST(RuleActions, TheSpecExampleDecodesToStopTrainingAndEmail) {
  const std::string spec = test::read_file(test::shared_dir() / "spec" / "sagemaker-api.md");
  const size_t start = spec.find("```json\n", spec.find("## 10. Example CreateTrainingJob request")) + 8;
  const auto request = nlohmann::json::parse(spec.substr(start, spec.find("```", start) - start));
  const std::string action_json = request["DebugRuleConfigurations"][2]["RuleParameters"]["action_json"];
  ASSERT_NE(action_json.find("\\\"name\\\""), std::string::npos) << action_json;  // escaped, as the SDK writes it

  const RuleActions actions = parsed(action_json);
  EXPECT_TRUE(actions.warnings.empty());
  ASSERT_EQ(actions.actions.size(), 2u);
  EXPECT_EQ(actions.actions[0].kind, Kind::StopTraining);
  EXPECT_EQ(actions.actions[0].training_job_prefix, "resnet-dbg-2024-06-01-12-00-00-000");
  EXPECT_EQ(actions.actions[1].kind, Kind::Email);
  EXPECT_EQ(actions.actions[1].endpoint, "ops@example.com");
}

TEST(RuleActions, ASingleObjectAndPlainJson) {
  RuleActions actions = parsed(R"({"name": "sms", "endpoint": "+15551234567"})");
  ASSERT_EQ(actions.actions.size(), 1u);
  EXPECT_EQ(actions.actions[0].kind, Kind::Sms);
  EXPECT_EQ(actions.actions[0].endpoint, "+15551234567");
  EXPECT_TRUE(actions.warnings.empty());
  actions = parsed(R"([])");
  EXPECT_TRUE(actions.actions.empty());
  EXPECT_TRUE(actions.warnings.empty());
}

TEST(RuleActions, TheWholeTextIsLowerCased) {
  const RuleActions actions =
      parsed(R"([{"NAME": "StopTraining", "Training_Job_Prefix": "My-Job"}, {"Name": "EMAIL", "Endpoint": "Ops@Example.COM"}])");
  ASSERT_EQ(actions.actions.size(), 2u) << only_warning(actions);
  EXPECT_EQ(actions.actions[0].training_job_prefix, "my-job");
  EXPECT_EQ(actions.actions[1].endpoint, "ops@example.com");
}

TEST(RuleActions, StopTrainingWithoutAPrefixStopsTheJobItself) {
  RuleActions actions = parsed(R"({"name": "stoptraining"})", "Resnet-Job-7");
  ASSERT_EQ(actions.actions.size(), 1u);
  EXPECT_EQ(actions.actions[0].training_job_prefix, "resnet-job-7");  // lower-cased like the SDK-filled text
  actions = parsed(R"({"name": "stoptraining"})", "");
  EXPECT_TRUE(actions.actions.empty());
  EXPECT_NE(only_warning(actions).find("requires \"training_job_prefix\""), std::string::npos) << only_warning(actions);
}

TEST(RuleActions, InvalidEntriesAreSkippedWithAWarning) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"name": "stoptraining", "training_job_prefix": "my_job"})", "training_job_prefix 'my_job' is invalid"},
      {R"({"name": "stoptraining", "training_job_prefix": ""})", "training_job_prefix '' is invalid"},
      {R"({"name": "stoptraining", "training_job_prefix": 5})", "\"training_job_prefix\" is 5, not a string"},
      {R"({"name": "email", "endpoint": "ops@example"})", "email endpoint 'ops@example' is not an address"},
      {R"({"name": "email", "endpoint": "ops@example.info"})", "email endpoint 'ops@example.info'"},
      {R"({"name": "email", "endpoint": "ops.team@example.com"})", "email endpoint 'ops.team@example.com'"},
      {R"({"name": "email"})", "email requires \"endpoint\""},
      {R"({"name": "sms", "endpoint": "5551234567"})", "sms endpoint '5551234567' is not a phone number"},
      {R"({"name": "sms", "endpoint": "+1234567890123456"})", "sms endpoint '+1234567890123456'"},
      {R"({"name": "sms", "endpoint": ["+1"]})", "\"endpoint\" is [\"+1\"], not a string"},
      {R"({"name": "slack", "endpoint": "#ops"})", "action 'slack' is not supported"},
      {R"({"endpoint": "a@b.com"})", "has no \"name\""},
      {R"(5)", "not an object or a list"},
      {R"([5])", "5 is not an object"},
  };
  for (const auto& [text, warning] : cases) {
    const RuleActions actions = parsed(text);
    EXPECT_TRUE(actions.actions.empty()) << text;
    EXPECT_NE(only_warning(actions).find(warning), std::string::npos) << text << " -> " << only_warning(actions);
  }
  // The good entries around a bad one stay, in order.
  const RuleActions mixed = parsed(
      R"([{"name": "sms", "endpoint": "+1"}, {"name": "slack"}, {"name": "email", "endpoint": "a1@b_c.io"}])");
  ASSERT_EQ(mixed.actions.size(), 2u);
  EXPECT_EQ(mixed.actions[0].kind, Kind::Sms);
  EXPECT_EQ(mixed.actions[1].kind, Kind::Email);
  ASSERT_EQ(mixed.warnings.size(), 1u);
  EXPECT_TRUE(mixed.warnings[0].starts_with("action 2:")) << mixed.warnings[0];
}

// The container un-escapes the text as a Python string literal before json.loads.
TEST(RuleActions, PythonEscapesAreUndone) {
  const RuleActions actions = parsed(R"({\"name\": \"email\", \"endpoint\": \"ops\x40example.com\"})");
  ASSERT_EQ(actions.actions.size(), 1u) << only_warning(actions);
  EXPECT_EQ(actions.actions[0].endpoint, "ops@example.com");
}

TEST(RuleActions, TextThatIsNotJsonIsAnError) {
  for (const char* text : {"[{name: stoptraining}]", "", "stoptraining", R"({\"name\": \"email\")"}) {
    auto r = parse_rule_actions(text, "job-1");
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
    EXPECT_TRUE(r.error().message.starts_with("action_json is not valid JSON")) << r.error().message;
  }
}

TEST(ChooseJobToStop, ExactlyOneJobStartingWithThePrefix) {
  EXPECT_EQ(choose_job_to_stop("resnet-dbg", {"other-job", "resnet-dbg-2024", "my-resnet-dbg"}), "resnet-dbg-2024");
  EXPECT_EQ(choose_job_to_stop("job-a", {"job-a", "job-a"}), "job-a");  // listed twice, one job
}

TEST(ChooseJobToStop, NoneOrSeveralStopNothing) {
  auto none = choose_job_to_stop("resnet", {"other-job", "my-resnet"});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().find("no InProgress training job's name starts with 'resnet'"), std::string::npos) << none.error();
  auto upper = choose_job_to_stop("job", {"Job-1"});  // startswith is case-sensitive
  EXPECT_FALSE(upper.has_value());
  auto two = choose_job_to_stop("job-a", {"job-a-1", "job-b", "job-a-2"});
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().find("2 InProgress training jobs' names start with 'job-a' (job-a-1, job-a-2)"), std::string::npos)
      << two.error();
}

}  // namespace
}  // namespace vigil::jobs
