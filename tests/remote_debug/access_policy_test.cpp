// Access policies for local training jobs (host/remote_debug/access_policy.h): IAM's policy grammar and
// decision logic, the bindings of policies to local users, and the MalformedPolicyDocument messages.
#include "remote_debug/access_policy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>

#include "test_support.h"

namespace vigil::remote_debug {
namespace {

namespace fs = std::filesystem;

const LocalUser kAlice{1001, "alice"};
const LocalUser kBob{1002, "bob"};
const LocalUser kCarol{1003, "carol"};

constexpr const char* kJobArn = "arn:aws:sagemaker:us-west-2:123456789012:training-job/job-a";

// The policy in `text`; on a parse failure the test fails and a deny-everything policy stands in, so
// that expectations of Allowed fail too.
AccessPolicy parsed(std::string_view text, const fs::path& source = "policy.json") {
  auto policy = AccessPolicy::parse(text, source);
  if (policy) return std::move(*policy);
  ADD_FAILURE() << "parse failed: " << policy.error().message;
  return *AccessPolicy::parse(R"({"Statement": {"Effect": "Deny", "Action": "*", "Resource": "*"}})", source);
}

// The message of the parse error `text` gives; a test failure where it parses or the error is not
// an invalid_argument.
std::string parse_error(std::string_view text, const fs::path& source = "policy.json") {
  auto policy = AccessPolicy::parse(text, source);
  if (policy) {
    ADD_FAILURE() << "parsed, but should not have: " << text;
    return {};
  }
  EXPECT_EQ(policy.error().code, ErrorCode::InvalidArgument) << policy.error().message;
  return policy.error().message;
}

AccessDecision decide(const AccessPolicy& policy, std::string action, std::string resource = kJobArn,
                      std::map<std::string, std::string> context = {}, const LocalUser& who = kAlice) {
  return policy.decide(who, AccessRequest{std::move(action), std::move(resource), std::move(context)}).decision;
}

void write_text(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// ---- the example policies of sagemaker-api §8.1, verbatim ------------------------------------------

TEST(AccessPolicyExamples, ConnectingUserMayStartAndTerminateSessions) {
  const AccessPolicy policy = parsed(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["ssm:StartSession", "ssm:TerminateSession"], "Resource": "*"}]})");
  EXPECT_EQ(decide(policy, "ssm:StartSession"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:TerminateSession", "arn:aws:ssm:us-west-2:123456789012:session/s-1"),
            AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:SendCommand"), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "sagemaker:UpdateTrainingJob"), AccessDecision::ImplicitDeny);
}

TEST(AccessPolicyExamples, SessionsNarrowedToTrainingJobTargets) {
  const AccessPolicy policy = parsed(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["ssm:StartSession", "ssm:TerminateSession"], "Resource": "*",
     "Condition": {"StringLike": {"ssm:resourceTag/aws:ssmmessages:target-id": ["sagemaker-training-job:*"]}}}]})");
  const std::string key = "ssm:resourceTag/aws:ssmmessages:target-id";
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {{key, "sagemaker-training-job:job-a_algo-2"}}),
            AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {{key, "other:thing"}}), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}), AccessDecision::ImplicitDeny);  // key missing
  // Condition keys match whatever their case; values are compared as written.
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {{"SSM:RESOURCETAG/AWS:SSMMESSAGES:TARGET-ID",
                                                            "sagemaker-training-job:job-a_algo-1"}}),
            AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {{key, "SageMaker-Training-Job:job-a_algo-1"}}),
            AccessDecision::ImplicitDeny);
}

TEST(AccessPolicyExamples, JobRoleSessionChannelsParse) {
  const AccessPolicy policy = parsed(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"], "Resource": "*"}]})");
  EXPECT_EQ(decide(policy, "ssmmessages:OpenDataChannel"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssmmessages:DeleteDataChannel"), AccessDecision::ImplicitDeny);
}

TEST(AccessPolicyExamples, BoolIfExistsFalseAllowRefusesEnablingRemoteDebug) {
  const AccessPolicy policy = parsed(R"({"Version": "2012-10-17", "Statement": [
    {"Sid": "NoRemoteDebug", "Effect": "Allow",
     "Action": ["sagemaker:CreateTrainingJob", "sagemaker:UpdateTrainingJob"], "Resource": "*",
     "Condition": {"BoolIfExists": {"sagemaker:EnableRemoteDebug": false}}}]})");
  for (const char* action : {"sagemaker:CreateTrainingJob", "sagemaker:UpdateTrainingJob"}) {
    SCOPED_TRACE(action);
    EXPECT_EQ(decide(policy, action, kJobArn, {{"sagemaker:EnableRemoteDebug", "true"}}), AccessDecision::ImplicitDeny);
    EXPECT_EQ(decide(policy, action, kJobArn, {{"sagemaker:EnableRemoteDebug", "false"}}), AccessDecision::Allowed);
    EXPECT_EQ(decide(policy, action, kJobArn, {}), AccessDecision::Allowed);  // absent: IfExists matches
  }
  EXPECT_EQ(policy.decide(kAlice, {"sagemaker:CreateTrainingJob", kJobArn, {}}).statement, "NoRemoteDebug");
}

TEST(AccessPolicyExamples, BoolIfExistsFalseAsDenyStatement) {
  // The same condition in a Deny: it denies where the key is false or absent, and leaves a request
  // that enables remote debugging to the Allow.
  const AccessPolicy policy = parsed(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*"},
    {"Sid": "DenyWithoutRemoteDebug", "Effect": "Deny",
     "Action": ["sagemaker:CreateTrainingJob", "sagemaker:UpdateTrainingJob"], "Resource": "*",
     "Condition": {"BoolIfExists": {"sagemaker:EnableRemoteDebug": false}}}]})");
  EXPECT_EQ(decide(policy, "sagemaker:UpdateTrainingJob", kJobArn, {{"sagemaker:EnableRemoteDebug", "true"}}),
            AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "sagemaker:UpdateTrainingJob", kJobArn, {{"sagemaker:EnableRemoteDebug", "false"}}),
            AccessDecision::ExplicitDeny);
  EXPECT_EQ(decide(policy, "sagemaker:CreateTrainingJob", kJobArn, {}), AccessDecision::ExplicitDeny);
  EXPECT_EQ(decide(policy, "sagemaker:StopTrainingJob", kJobArn, {}), AccessDecision::Allowed);
}

TEST(AccessPolicyExamples, DenyOutsideDevJobsAppliesToRequestsWithoutTheTargetKey) {
  // "Deny everything outside dev-* jobs": StopTrainingJob and UpdateTrainingJob carry no target key,
  // and IAM holds a negated operator true where its key is missing, so the Deny applies to them too.
  const AccessPolicy policy = parsed(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "*", "Resource": "*"},
    {"Sid": "OnlyDevJobs", "Effect": "Deny", "Action": "*", "Resource": "*",
     "Condition": {"StringNotLike": {"ssm:resourceTag/aws:ssmmessages:target-id": "sagemaker-training-job:dev-*"}}}]})");
  const std::string key = "ssm:resourceTag/aws:ssmmessages:target-id";
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {{key, "sagemaker-training-job:dev-1_algo-1"}}),
            AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {{key, "sagemaker-training-job:prod_algo-1"}}),
            AccessDecision::ExplicitDeny);
  EXPECT_EQ(decide(policy, "sagemaker:StopTrainingJob", kJobArn, {}), AccessDecision::ExplicitDeny);
  EXPECT_EQ(decide(policy, "sagemaker:UpdateTrainingJob", kJobArn, {{"sagemaker:EnableRemoteDebug", "true"}}),
            AccessDecision::ExplicitDeny);
}

// ---- IAM's decision logic ----------------------------------------------------------------------

TEST(AccessPolicyDecision, ExplicitDenyBeatsAllowInEitherOrder) {
  for (const bool deny_first : {false, true}) {
    SCOPED_TRACE(deny_first ? "deny first" : "allow first");
    const std::string allow = R"({"Sid": "All", "Effect": "Allow", "Action": "*", "Resource": "*"})";
    const std::string deny = R"({"Sid": "NoShell", "Effect": "Deny", "Action": "ssm:StartSession", "Resource": "*"})";
    const AccessPolicy policy =
        parsed("{\"Statement\": [" + (deny_first ? deny + "," + allow : allow + "," + deny) + "]}");
    const AccessVerdict refused = policy.decide(kAlice, {"ssm:StartSession", kJobArn, {}});
    EXPECT_EQ(refused.decision, AccessDecision::ExplicitDeny);
    EXPECT_EQ(refused.statement, "NoShell");
    EXPECT_FALSE(refused.allowed());
    const AccessVerdict allowed = policy.decide(kAlice, {"ssm:TerminateSession", kJobArn, {}});
    EXPECT_EQ(allowed.decision, AccessDecision::Allowed);
    EXPECT_EQ(allowed.statement, "All");
    EXPECT_TRUE(allowed.allowed());
  }
}

TEST(AccessPolicyDecision, NothingMatchingIsAnImplicitDenyWithoutStatement) {
  const AccessPolicy policy = parsed(R"({"Statement": {"Effect": "Allow", "Action": "ssm:StartSession",
                                         "Resource": "arn:aws:sagemaker:*:*:training-job/job-b"}})");
  const AccessVerdict v = policy.decide(kAlice, {"ssm:StartSession", kJobArn, {}});
  EXPECT_EQ(v.decision, AccessDecision::ImplicitDeny);
  EXPECT_EQ(v.statement, "");
}

TEST(AccessPolicyDecision, StatementsWithoutSidAreNamedByTheirPlace) {
  const AccessPolicy list = parsed(R"({"Statement": [
    {"Effect": "Allow", "Action": "ssm:TerminateSession", "Resource": "*"},
    {"Effect": "Deny", "Action": "ssm:StartSession", "Resource": "*"}]})");
  EXPECT_EQ(list.decide(kAlice, {"ssm:StartSession", kJobArn, {}}).statement, "Statement[1]");
  EXPECT_EQ(list.decide(kAlice, {"ssm:TerminateSession", kJobArn, {}}).statement, "Statement[0]");
  const AccessPolicy single = parsed(R"({"Statement": {"Effect": "Allow", "Action": "*", "Resource": "*"}})");
  EXPECT_EQ(single.decide(kAlice, {"ssm:StartSession", kJobArn, {}}).statement, "Statement");
}

TEST(AccessPolicyDecision, DecisionNames) {
  EXPECT_EQ(access_decision_name(AccessDecision::Allowed), "Allowed");
  EXPECT_EQ(access_decision_name(AccessDecision::ExplicitDeny), "ExplicitDeny");
  EXPECT_EQ(access_decision_name(AccessDecision::ImplicitDeny), "ImplicitDeny");
}

TEST(AccessPolicyDecision, NotActionMatchesEveryOtherAction) {
  const AccessPolicy policy = parsed(R"({"Statement": {"Effect": "Allow", "NotAction": ["ssm:*", "sagemaker:Stop*"],
                                                       "Resource": "*"}})");
  EXPECT_EQ(decide(policy, "sagemaker:DescribeTrainingJob"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSession"), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "sagemaker:StopTrainingJob"), AccessDecision::ImplicitDeny);
}

TEST(AccessPolicyDecision, NotResourceMatchesEveryOtherResource) {
  const AccessPolicy policy = parsed(R"({"Statement": [
    {"Effect": "Allow", "Action": "ssm:StartSession", "Resource": "*"},
    {"Effect": "Deny", "Action": "ssm:StartSession", "NotResource": "arn:aws:sagemaker:*:*:training-job/job-a"}]})");
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSession", "arn:aws:sagemaker:us-west-2:123456789012:training-job/job-b"),
            AccessDecision::ExplicitDeny);
}

TEST(AccessPolicyDecision, ActionsMatchIgnoringCaseWithWildcards) {
  const AccessPolicy policy = parsed(R"({"Statement": {"Effect": "Allow",
    "Action": ["sagemaker:*TrainingJob", "SSM:?tartSession"], "Resource": "*"}})");
  EXPECT_EQ(decide(policy, "sagemaker:CreateTrainingJob"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "SageMaker:describetrainingjob"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "sagemaker:TrainingJob"), AccessDecision::Allowed);  // `*` matches nothing too
  EXPECT_EQ(decide(policy, "sagemaker:ListTrainingJobs"), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:startsession"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSessions"), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:tartSession"), AccessDecision::ImplicitDeny);  // `?` is exactly one character
  const AccessPolicy everything = parsed(R"({"Statement": {"Effect": "Allow", "Action": "*", "Resource": "*"}})");
  EXPECT_EQ(decide(everything, "anything:AtAll"), AccessDecision::Allowed);
}

TEST(AccessPolicyDecision, ResourcesMatchCaseSensitivelyWithWildcards) {
  const AccessPolicy policy = parsed(R"({"Statement": {"Effect": "Allow", "Action": "*",
    "Resource": ["arn:aws:sagemaker:*:*:training-job/job-?", "arn:aws:ssm:*:*:session/*-debug*"]}})");
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:StartSession", "arn:aws:sagemaker:us-west-2:123456789012:training-job/Job-a"),
            AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:StartSession", "ARN:aws:sagemaker:us-west-2:123456789012:training-job/job-a"),
            AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:StartSession", "arn:aws:sagemaker:us-west-2:123456789012:training-job/job-ab"),
            AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:StartSession", "arn:aws:ssm:us-west-2:1:session/alice-debug-debug-7"),
            AccessDecision::Allowed);  // `*` backtracks over a repeated part
  EXPECT_EQ(decide(policy, "ssm:StartSession", "arn:aws:ssm:us-west-2:1:session/alice-Debug"),
            AccessDecision::ImplicitDeny);
}

// ---- condition operators -------------------------------------------------------------------------

struct OperatorCase {
  const char* op;
  const char* document_value;  // JSON
  std::optional<std::string> request_value;  // nullopt: the key is absent from the request
  bool matches;
};

std::string describe(const OperatorCase& c) {
  return fmt::format("{} {} vs {}", c.op, c.document_value, c.request_value ? "\"" + *c.request_value + "\"" : "(absent)");
}

// Each case as the one condition of an Allow: Allowed where it matches, ImplicitDeny where not.
void expect_operator_cases(std::initializer_list<OperatorCase> cases) {
  for (const OperatorCase& c : cases) {
    SCOPED_TRACE(describe(c));
    const AccessPolicy policy = parsed(fmt::format(R"({{"Statement": {{"Effect": "Allow", "Action": "a:b", "Resource": "*",
                                                      "Condition": {{"{}": {{"test:Key": {}}}}}}}}})",
                                                   c.op, c.document_value));
    std::map<std::string, std::string> context;
    if (c.request_value) context["test:key"] = *c.request_value;
    EXPECT_EQ(decide(policy, "a:b", kJobArn, context), c.matches ? AccessDecision::Allowed : AccessDecision::ImplicitDeny);
  }
}

TEST(AccessPolicyOperators, Strings) {
  expect_operator_cases({OperatorCase{"StringEquals", R"("job-a")", "job-a", true},
                      OperatorCase{"StringEquals", R"("job-a")", "Job-A", false},
                      OperatorCase{"StringEquals", R"("job-a")", std::nullopt, false},
                      OperatorCase{"StringEquals", R"(5)", "5", true},  // a number is its text
                      OperatorCase{"StringEquals", R"(true)", "true", true},
                      OperatorCase{"StringEquals", R"(["a", "b"])", "b", true},  // values OR
                      OperatorCase{"StringEquals", R"(["a", "b"])", "c", false},
                      OperatorCase{"StringNotEquals", R"("job-a")", "job-b", true},
                      OperatorCase{"StringNotEquals", R"("job-a")", "job-a", false},
                      OperatorCase{"StringNotEquals", R"("job-a")", std::nullopt, true},  // missing: a negated test holds, as IAM
                      OperatorCase{"StringNotEquals", R"(["a", "b"])", "b", false},  // none may match
                      OperatorCase{"StringNotEquals", R"(["a", "b"])", "c", true},
                      OperatorCase{"StringEqualsIgnoreCase", R"("Job-A")", "jOB-a", true},
                      OperatorCase{"StringEqualsIgnoreCase", R"("Job-A")", "job-b", false},
                      OperatorCase{"StringNotEqualsIgnoreCase", R"("Job-A")", "JOB-A", false},
                      OperatorCase{"StringNotEqualsIgnoreCase", R"("Job-A")", "job-b", true},
                      OperatorCase{"StringLike", R"("job-*_algo-?")", "job-a_algo-2", true},
                      OperatorCase{"StringLike", R"("job-*_algo-?")", "job-a_algo-12", false},
                      OperatorCase{"StringLike", R"("job-*")", "Job-a", false},  // case-sensitive
                      OperatorCase{"StringNotLike", R"("job-*")", "other", true},
                      OperatorCase{"StringNotLike", R"("job-*")", "job-1", false},
                      OperatorCase{"StringNotLike", R"("job-*")", std::nullopt, true},
                      OperatorCase{"StringNotEqualsIgnoreCase", R"("Job-A")", std::nullopt, true},
                      OperatorCase{"StringEqualsIgnoreCase", R"("Job-A")", std::nullopt, false},
                      OperatorCase{"StringLike", R"("job-*")", std::nullopt, false},
                      OperatorCase{"StringEqualsIfExists", R"("x")", std::nullopt, true},
                      OperatorCase{"StringEqualsIfExists", R"("x")", "x", true},
                      OperatorCase{"StringEqualsIfExists", R"("x")", "y", false},
                      OperatorCase{"StringNotEqualsIfExists", R"("x")", std::nullopt, true},
                      OperatorCase{"StringNotEqualsIfExists", R"("x")", "x", false},
                      OperatorCase{"StringEqualsIgnoreCaseIfExists", R"("X")", std::nullopt, true},
                      OperatorCase{"StringNotEqualsIgnoreCaseIfExists", R"("X")", "x", false},
                      OperatorCase{"StringLikeIfExists", R"("a*")", std::nullopt, true},
                      OperatorCase{"StringLikeIfExists", R"("a*")", "ba", false},
                      OperatorCase{"StringNotLikeIfExists", R"("a*")", std::nullopt, true},
                      OperatorCase{"StringNotEqualsIgnoreCaseIfExists", R"("X")", std::nullopt, true},
                      OperatorCase{"StringNotLikeIfExists", R"("a*")", "ab", false}});
}

TEST(AccessPolicyOperators, BoolAndNull) {
  expect_operator_cases({OperatorCase{"Bool", R"(true)", "true", true},
                      OperatorCase{"Bool", R"(true)", "TRUE", true},
                      OperatorCase{"Bool", R"(true)", "false", false},
                      OperatorCase{"Bool", R"(true)", "yes", false},  // not a boolean: no match
                      OperatorCase{"Bool", R"(true)", std::nullopt, false},
                      OperatorCase{"Bool", R"("false")", "false", true},  // "false" and false alike
                      OperatorCase{"Bool", R"("False")", "true", false},
                      OperatorCase{"BoolIfExists", R"(true)", std::nullopt, true},
                      OperatorCase{"BoolIfExists", R"(true)", "false", false},
                      OperatorCase{"Null", R"(true)", std::nullopt, true},
                      OperatorCase{"Null", R"(true)", "", false},  // present, even empty
                      OperatorCase{"Null", R"("false")", "x", true},
                      OperatorCase{"Null", R"(false)", std::nullopt, false}});
}

TEST(AccessPolicyOperators, Numbers) {
  expect_operator_cases({OperatorCase{"NumericEquals", R"(5)", "5", true},
                      OperatorCase{"NumericEquals", R"("5")", "5.0", true},
                      OperatorCase{"NumericEquals", R"(5)", "6", false},
                      OperatorCase{"NumericEquals", R"(5)", "five", false},
                      OperatorCase{"NumericEquals", R"(5)", std::nullopt, false},
                      OperatorCase{"NumericEquals", R"([1, 2, 3])", "2", true},
                      OperatorCase{"NumericNotEquals", R"(5)", "6", true},
                      OperatorCase{"NumericNotEquals", R"(5)", "5", false},
                      OperatorCase{"NumericNotEquals", R"(5)", "x", false},  // not a number: no match
                      OperatorCase{"NumericNotEquals", R"(5)", std::nullopt, true},  // missing: a negated test holds
                      OperatorCase{"NumericNotEquals", R"([5, 6])", "6", false},
                      OperatorCase{"NumericLessThan", R"(10)", "9.5", true},
                      OperatorCase{"NumericLessThan", R"(10)", "10", false},
                      OperatorCase{"NumericLessThanEquals", R"(10)", "10", true},
                      OperatorCase{"NumericLessThanEquals", R"(10)", "11", false},
                      OperatorCase{"NumericGreaterThan", R"(-1.5)", "0", true},
                      OperatorCase{"NumericGreaterThan", R"(10)", "10", false},
                      OperatorCase{"NumericGreaterThanEquals", R"("10")", "10", true},
                      OperatorCase{"NumericGreaterThanEquals", R"(10)", "9", false},
                      OperatorCase{"NumericLessThan", R"(10)", std::nullopt, false},
                      OperatorCase{"NumericLessThanEquals", R"(10)", std::nullopt, false},
                      OperatorCase{"NumericGreaterThan", R"(10)", std::nullopt, false},
                      OperatorCase{"NumericGreaterThanEquals", R"(10)", std::nullopt, false},
                      OperatorCase{"NumericEqualsIfExists", R"(5)", std::nullopt, true},
                      OperatorCase{"NumericNotEqualsIfExists", R"(5)", std::nullopt, true},
                      OperatorCase{"NumericLessThanIfExists", R"(10)", std::nullopt, true},
                      OperatorCase{"NumericLessThanIfExists", R"(10)", "20", false},
                      OperatorCase{"NumericLessThanEqualsIfExists", R"(10)", std::nullopt, true},
                      OperatorCase{"NumericGreaterThanIfExists", R"(10)", "11", true},
                      OperatorCase{"NumericGreaterThanEqualsIfExists", R"(10)", std::nullopt, true}});
}

TEST(AccessPolicyCondition, KeysAndOperatorsAllMustHold) {
  const AccessPolicy policy = parsed(R"({"Statement": {"Effect": "Allow", "Action": "a:b", "Resource": "*",
    "Condition": {"StringEquals": {"t:One": "1", "t:Two": ["2", "two"]}, "NumericLessThan": {"t:Hosts": 4}}}})");
  EXPECT_EQ(decide(policy, "a:b", kJobArn, {{"t:one", "1"}, {"t:two", "two"}, {"t:hosts", "3"}}), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "a:b", kJobArn, {{"t:one", "1"}, {"t:two", "2"}, {"t:hosts", "3"}}), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "a:b", kJobArn, {{"t:one", "1"}, {"t:two", "3"}, {"t:hosts", "3"}}),
            AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "a:b", kJobArn, {{"t:one", "1"}, {"t:hosts", "3"}}), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "a:b", kJobArn, {{"t:one", "1"}, {"t:two", "2"}, {"t:hosts", "4"}}),
            AccessDecision::ImplicitDeny);
}

TEST(AccessPolicyCondition, EmptyConditionBlockAddsNoTest) {
  const AccessPolicy policy = parsed(R"({"Statement": {"Effect": "Allow", "Action": "a:b", "Resource": "*",
                                                       "Condition": {}}})");
  EXPECT_EQ(decide(policy, "a:b"), AccessDecision::Allowed);
}

// ---- bindings -------------------------------------------------------------------------------

constexpr const char* kBindings = R"({"Bindings": [
  {"Users": ["alice", "1002"], "Policy": {"Version": "2012-10-17", "Statement": [
    {"Sid": "Shell", "Effect": "Allow", "Action": "ssm:StartSession", "Resource": "*"}]}},
  {"Users": ["alice"], "Policy": {"Statement": {"Effect": "Allow", "Action": "ssm:TerminateSession", "Resource": "*"}}},
  {"Users": "*", "Policy": {"Statement": [
    {"Sid": "Look", "Effect": "Allow", "Action": "sagemaker:DescribeTrainingJob", "Resource": "*"},
    {"Sid": "NoStop", "Effect": "Deny", "Action": "sagemaker:StopTrainingJob", "Resource": "*"}]}}
]})";

TEST(AccessPolicyBindings, UsersByNameUidAndEveryone) {
  const AccessPolicy policy = parsed(kBindings);
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}, kAlice), AccessDecision::Allowed);  // by name
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}, kBob), AccessDecision::Allowed);    // by uid 1002
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}, kCarol), AccessDecision::ImplicitDeny);
  // A name is a name, a uid a uid: bob under another uid is not uid 1002, nor alice's name under uid 1002.
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}, LocalUser{2002, "bob"}), AccessDecision::ImplicitDeny);
  EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}, LocalUser{1002, "someone"}), AccessDecision::Allowed);
  for (const LocalUser& who : {kAlice, kBob, kCarol}) {  // "*"
    SCOPED_TRACE(who.name);
    EXPECT_EQ(decide(policy, "sagemaker:DescribeTrainingJob", kJobArn, {}, who), AccessDecision::Allowed);
    EXPECT_EQ(decide(policy, "sagemaker:StopTrainingJob", kJobArn, {}, who), AccessDecision::ExplicitDeny);
  }
}

TEST(AccessPolicyBindings, EffectivePolicyIsTheUnionOfTheUsersBindings) {
  const AccessPolicy policy = parsed(kBindings);
  EXPECT_EQ(decide(policy, "ssm:TerminateSession", kJobArn, {}, kAlice), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "ssm:TerminateSession", kJobArn, {}, kBob), AccessDecision::ImplicitDeny);
  EXPECT_EQ(policy.decide(kAlice, {"ssm:TerminateSession", kJobArn, {}}).statement, "Bindings[1].Policy.Statement");
  EXPECT_EQ(policy.decide(kBob, {"sagemaker:StopTrainingJob", kJobArn, {}}).statement, "NoStop");
  // A Deny of one binding overrides an Allow of another.
  const AccessPolicy deny_for_all = parsed(R"({"Bindings": [
    {"Users": ["alice"], "Policy": {"Statement": {"Effect": "Allow", "Action": "ssm:*", "Resource": "*"}}},
    {"Users": ["*"], "Policy": {"Statement": {"Effect": "Deny", "Action": "ssm:StartSession", "Resource": "*"}}}]})");
  EXPECT_EQ(decide(deny_for_all, "ssm:StartSession"), AccessDecision::ExplicitDeny);
  EXPECT_EQ(decide(deny_for_all, "ssm:TerminateSession"), AccessDecision::Allowed);
}

TEST(AccessPolicyBindings, PolicyFileIsRelativeToTheBindingsFile) {
  test::ScratchDir dir("vigil-access-policy");
  write_text(dir / "policies" / "deny-remote-debug.json", R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Deny", "Action": ["sagemaker:CreateTrainingJob", "sagemaker:UpdateTrainingJob"], "Resource": "*",
     "Condition": {"Bool": {"sagemaker:EnableRemoteDebug": "true"}}}]})");
  write_text(dir / "conf" / "bindings.json", R"({"Bindings": [
    {"Users": ["alice"], "Policy": {"Statement": {"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*"}}},
    {"Users": ["*"], "PolicyFile": "../policies/deny-remote-debug.json"}]})");
  auto policy = AccessPolicy::load(dir / "conf" / "bindings.json");
  ASSERT_VIGIL_OK(policy);
  const AccessVerdict denied =
      policy->decide(kAlice, {"sagemaker:UpdateTrainingJob", kJobArn, {{"sagemaker:EnableRemoteDebug", "true"}}});
  EXPECT_EQ(denied.decision, AccessDecision::ExplicitDeny);
  EXPECT_EQ(denied.statement, "../policies/deny-remote-debug.json: Statement[0]");
  EXPECT_EQ(decide(*policy, "sagemaker:UpdateTrainingJob", kJobArn, {{"sagemaker:EnableRemoteDebug", "false"}}),
            AccessDecision::Allowed);
  // An absolute PolicyFile is taken as it is.
  const std::string absolute = fmt::format(R"({{"Bindings": [{{"Users": ["*"], "PolicyFile": {}}}]}})",
                                           nlohmann::json((dir / "policies" / "deny-remote-debug.json").string()).dump());
  auto from_elsewhere = AccessPolicy::parse(absolute, "/nowhere/bindings.json");
  ASSERT_VIGIL_OK(from_elsewhere);
  EXPECT_EQ(decide(*from_elsewhere, "sagemaker:CreateTrainingJob", kJobArn, {{"sagemaker:EnableRemoteDebug", "true"}}),
            AccessDecision::ExplicitDeny);
}

TEST(AccessPolicyBindings, BareDocumentAppliesToEveryUser) {
  const AccessPolicy policy =
      parsed(R"({"Version": "2008-10-17", "Id": "any", "Statement": {"Effect": "Allow", "Action": "ssm:StartSession", "Resource": "*"}})");
  for (const LocalUser& who : {kAlice, kBob, LocalUser{0, "root"}})
    EXPECT_EQ(decide(policy, "ssm:StartSession", kJobArn, {}, who), AccessDecision::Allowed) << who.name;
  EXPECT_TRUE(policy.grants_users_other_than(kAlice));
}

TEST(AccessPolicyBindings, GrantsUsersOtherThanTheOwner) {
  auto grants = [](std::string_view text, const LocalUser& owner) { return parsed(text).grants_users_other_than(owner); };
  const std::string allow = R"({"Statement": {"Effect": "Allow", "Action": "ssm:*", "Resource": "*"}})";
  const std::string deny = R"({"Statement": {"Effect": "Deny", "Action": "ssm:*", "Resource": "*"}})";
  auto one = [](std::string_view users, const std::string& policy) {
    return fmt::format(R"({{"Bindings": [{{"Users": {}, "Policy": {}}}]}})", users, policy);
  };
  EXPECT_FALSE(grants(one(R"(["alice"])", allow), kAlice));
  EXPECT_FALSE(grants(one(R"(["alice", "1001"])", allow), kAlice));
  EXPECT_TRUE(grants(one(R"(["alice", "bob"])", allow), kAlice));
  EXPECT_TRUE(grants(one(R"(["1002"])", allow), kAlice));
  EXPECT_TRUE(grants(one(R"(["*"])", allow), kAlice));
  EXPECT_FALSE(grants(one(R"(["*"])", deny), kAlice));  // denying others grants them nothing
  EXPECT_FALSE(grants(R"({"Bindings": []})", kAlice));
  EXPECT_TRUE(grants(one(R"(["alice"])", allow), kBob));
}

// Who may connect to the job's socket at all (control_server.h's `admits`): the users a binding with
// an Allow names.
TEST(AccessPolicyBindings, MayGrantAnythingToTheUsersAnAllowingBindingNames) {
  auto may = [](std::string_view text, const LocalUser& who) { return parsed(text).may_grant_anything_to(who); };
  const std::string allow = R"({"Statement": {"Effect": "Allow", "Action": "ssm:*", "Resource": "*"}})";
  const std::string deny = R"({"Statement": {"Effect": "Deny", "Action": "ssm:*", "Resource": "*"}})";
  auto one = [](std::string_view users, const std::string& policy) {
    return fmt::format(R"({{"Bindings": [{{"Users": {}, "Policy": {}}}]}})", users, policy);
  };
  EXPECT_TRUE(may(one(R"(["bob"])", allow), kBob));
  EXPECT_TRUE(may(one(fmt::format(R"(["{}"])", kBob.uid), allow), kBob));
  EXPECT_TRUE(may(one(R"(["*"])", allow), kBob));
  EXPECT_FALSE(may(one(R"(["alice"])", allow), kBob));
  EXPECT_FALSE(may(one(R"(["bob"])", deny), kBob));
  EXPECT_FALSE(may(R"({"Bindings": []})", kBob));
}

TEST(AccessPolicyBindings, LoadReportsAnUnreadableFileAsIo) {
  test::ScratchDir dir("vigil-access-policy");
  auto policy = AccessPolicy::load(dir / "absent.json");
  ASSERT_FALSE(policy.has_value());
  EXPECT_EQ(policy.error().code, ErrorCode::Io);
  EXPECT_NE(policy.error().message.find("absent.json"), std::string::npos) << policy.error().message;
}

// ---- malformed documents --------------------------------------------------------------------

struct MalformedCase {
  const char* name;
  const char* text;
  const char* place;  // expected after "MalformedPolicyDocument: policy.json: "
  const char* what;   // expected somewhere in the message
};

// Each case's text is refused with a message that names the file, then the place.
void expect_malformed_cases(std::initializer_list<MalformedCase> cases) {
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string message = parse_error(c.text);
    EXPECT_TRUE(message.starts_with(std::string("MalformedPolicyDocument: policy.json: ") + c.place)) << message;
    EXPECT_NE(message.find(c.what), std::string::npos) << message;
  }
}

#define ALLOW_ALL_ R"("Effect": "Allow", "Action": "*", "Resource": "*")"

TEST(AccessPolicyMalformed, Documents) {
  expect_malformed_cases({
        MalformedCase{"NotJson", R"({"Statement": [)", "not valid JSON", "parse"},
        MalformedCase{"NotAnObject", R"(["Statement"])", "must be a JSON object", "bindings"},
        MalformedCase{"DuplicateMember", R"({"Statement": {"Effect": "Deny", "Effect": "Allow", "Action": "*", "Resource": "*"}})",
                      "the member \"Effect\" appears twice", "Effect"},
        MalformedCase{"MissingEffect", R"({"Statement": [{)" ALLOW_ALL_ R"(}, {"Action": "*", "Resource": "*"}]})",
                      "Statement[1].Effect: ", "required"},
        MalformedCase{"BadEffect", R"({"Statement": [{"Effect": "allow", "Action": "*", "Resource": "*"}]})",
                      "Statement[0].Effect: ", "\"allow\""},
        MalformedCase{"ActionAndNotAction",
                      R"({"Statement": [{"Effect": "Allow", "Action": "*", "NotAction": "ssm:*", "Resource": "*"}]})",
                      "Statement[0]: ", "both Action and NotAction"},
        MalformedCase{"NoAction", R"({"Statement": [{"Effect": "Allow", "Resource": "*"}]})", "Statement[0]: ",
                      "needs Action or NotAction"},
        MalformedCase{"ResourceAndNotResource",
                      R"({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*", "NotResource": "*"}]})",
                      "Statement[0]: ", "both Resource and NotResource"},
        MalformedCase{"NoResource", R"({"Statement": {"Effect": "Allow", "Action": "*"}})", "Statement: ",
                      "needs Resource or NotResource"},
        MalformedCase{"Principal", R"({"Statement": [{)" ALLOW_ALL_ R"(, "Principal": {"AWS": "*"}}]})",
                      "Statement[0].Principal: ", "no principal"},
        MalformedCase{"NotPrincipal", R"({"Statement": [{)" ALLOW_ALL_ R"(, "NotPrincipal": "*"}]})",
                      "Statement[0].NotPrincipal: ", "no principal"},
        MalformedCase{"UnknownStatementElement", R"({"Statement": [{)" ALLOW_ALL_ R"(, "Actions": "*"}]})",
                      "Statement[0].Actions: ", "unknown element"},
        MalformedCase{"UnknownDocumentElement", R"({"Version": "2012-10-17", "Statment": []})", "Statment: ",
                      "unknown element"},
        MalformedCase{"BadVersion", R"({"Version": "2012-10-18", "Statement": {)" ALLOW_ALL_ R"(}})", "Version: ",
                      "2012-10-17"},
        MalformedCase{"EmptyStatementList", R"({"Statement": []})", "Statement: ", "at least one"},
        MalformedCase{"StatementNotAnObject", R"({"Statement": ["Allow"]})", "Statement[0]: ", "JSON object"},
        MalformedCase{"EmptyActionList", R"({"Statement": {"Effect": "Allow", "Action": [], "Resource": "*"}})",
                      "Statement.Action: ", "at least one"},
        MalformedCase{"ActionNotAString", R"({"Statement": {"Effect": "Allow", "Action": ["ssm:*", 3], "Resource": "*"}})",
                      "Statement.Action[1]: ", "string"},
        MalformedCase{"ActionWithoutService", R"({"Statement": {"Effect": "Allow", "Action": "StartSession", "Resource": "*"}})",
                      "Statement.Action: ", "service:Name"},
        MalformedCase{"ResourceNotAnArn", R"({"Statement": {"Effect": "Allow", "Action": "*", "Resource": "job-a"}})",
                      "Statement.Resource: ", "ARN"},
        MalformedCase{"SidNotAlphanumeric", R"({"Statement": {"Sid": "no-dashes", )" ALLOW_ALL_ R"(}})", "Statement.Sid: ",
                      "letters and digits"},
        MalformedCase{"SidTwice", R"({"Statement": [{"Sid": "A", )" ALLOW_ALL_ R"(}, {"Sid": "A", )" ALLOW_ALL_ R"(}]})",
                      "Statement[1].Sid: ", "two statements"},
        MalformedCase{"PolicyVariable",
                      R"({"Version": "2012-10-17", "Statement": {"Effect": "Allow", "Action": "*", "Resource": "arn:aws:iam::1:user/${aws:username}"}})",
                      "Statement.Resource: ", "policy variables"},
        MalformedCase{"ConditionNotAnObject", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": ["StringEquals"]}})",
                      "Statement.Condition: ", "object"},
        MalformedCase{"OperatorBlockNotAnObject", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"StringEquals": "a"}}})",
                      "Statement.Condition.StringEquals: ", "object"},
        MalformedCase{"UnknownOperator", R"({"Statement": [{)" ALLOW_ALL_ R"(, "Condition": {"StringMatches": {"a:b": "c"}}}]})",
                      "Statement[0].Condition.StringMatches: ", "unknown condition operator"},
        MalformedCase{"OperatorCaseMatters", R"({"Statement": [{)" ALLOW_ALL_ R"(, "Condition": {"stringequals": {"a:b": "c"}}}]})",
                      "Statement[0].Condition.stringequals: ", "unknown condition operator"},
        MalformedCase{"NullIfExists", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"NullIfExists": {"a:b": true}}}})",
                      "Statement.Condition.NullIfExists: ", "no IfExists"},
        MalformedCase{"DateOperator", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"DateLessThan": {"aws:CurrentTime": "2030-01-01"}}}})",
                      "Statement.Condition.DateLessThan: ", "not supported"},
        MalformedCase{"SetOperator", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"ForAnyValue:StringEquals": {"a:b": "c"}}}})",
                      "Statement.Condition.ForAnyValue:StringEquals: ", "not supported"},
        MalformedCase{"BoolNotABoolean", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"Bool": {"a:b": "maybe"}}}})",
                      "Statement.Condition.Bool.a:b: ", "neither true nor false"},
        MalformedCase{"NumberNotANumber", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"NumericLessThan": {"a:b": ["1", "ten"]}}}})",
                      "Statement.Condition.NumericLessThan.a:b[1]: ", "not a number"},
        MalformedCase{"ConditionValueNull", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"StringEquals": {"a:b": null}}}})",
                      "Statement.Condition.StringEquals.a:b: ", "strings, booleans or numbers"},
        MalformedCase{"ConditionValueListEmpty", R"({"Statement": {)" ALLOW_ALL_ R"(, "Condition": {"StringEquals": {"a:b": []}}}})",
                      "Statement.Condition.StringEquals.a:b: ", "at least one value"}});
}

TEST(AccessPolicyMalformed, Bindings) {
  expect_malformed_cases({
        MalformedCase{"NoBindings", R"({})", "Bindings: ", "required"},
        MalformedCase{"MisspeltBindings", R"({"Bnidings": []})", "Bnidings: ", "unknown member"},
        MalformedCase{"BindingsNotAList", R"({"Bindings": {}})", "Bindings: ", "list"},
        MalformedCase{"BothBindingsAndStatement", R"({"Bindings": [], "Statement": []})", "has both", "not both"},
        MalformedCase{"BindingWithoutPolicy", R"({"Bindings": [{"Users": ["alice"]}]})", "Bindings[0]: ",
                      "needs Policy or PolicyFile"},
        MalformedCase{"BindingWithBoth",
                      R"({"Bindings": [{"Users": ["alice"], "Policy": {"Statement": {)" ALLOW_ALL_ R"(}}, "PolicyFile": "p.json"}]})",
                      "Bindings[0]: ", "both Policy and PolicyFile"},
        MalformedCase{"BindingWithoutUsers", R"({"Bindings": [{"Policy": {"Statement": {)" ALLOW_ALL_ R"(}}}]})",
                      "Bindings[0].Users: ", "required"},
        MalformedCase{"UsersEmpty", R"({"Bindings": [{"Users": [], "Policy": {"Statement": {)" ALLOW_ALL_ R"(}}}]})",
                      "Bindings[0].Users: ", "non-empty list"},
        MalformedCase{"UserWildcard", R"({"Bindings": [{"Users": ["alice", "al*"], "Policy": {"Statement": {)" ALLOW_ALL_ R"(}}}]})",
                      "Bindings[0].Users[1]: ", "no wildcards"},
        MalformedCase{"UidTooLarge", R"({"Bindings": [{"Users": ["99999999999"], "Policy": {"Statement": {)" ALLOW_ALL_ R"(}}}]})",
                      "Bindings[0].Users[0]: ", "not a uid"},
        MalformedCase{"UnknownBindingMember", R"({"Bindings": [{"Users": ["*"], "Polcy": {}}]})", "Bindings[0].Polcy: ",
                      "unknown member"},
        MalformedCase{"InlineMissingEffect",
                      R"({"Bindings": [{"Users": ["*"], "Policy": {"Statement": [{"Action": "*", "Resource": "*"}]}}]})",
                      "Bindings[0].Policy.Statement[0].Effect: ", "required"},
        MalformedCase{"InlinePrincipal",
                      R"({"Bindings": [{"Users": ["*"], "Policy": {"Statement": {)" ALLOW_ALL_ R"(, "Principal": "*"}}}]})",
                      "Bindings[0].Policy.Statement.Principal: ", "no principal"},
        MalformedCase{"MissingPolicyFile", R"({"Bindings": [{"Users": ["*"], "PolicyFile": "no-such-policy.json"}]})",
                      "Bindings[0].PolicyFile: ", "no-such-policy.json"}});
}

#undef ALLOW_ALL_

TEST(AccessPolicyMalformedFiles, ErrorsInAPolicyFileNameThatFile) {
  test::ScratchDir dir("vigil-access-policy");
  write_text(dir / "bad.json", R"({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"},
                                                 {"Effect": "Permit", "Action": "*", "Resource": "*"}]})");
  write_text(dir / "bindings.json", R"({"Bindings": [{"Users": ["*"], "PolicyFile": "bad.json"}]})");
  auto policy = AccessPolicy::load(dir / "bindings.json");
  ASSERT_FALSE(policy.has_value());
  EXPECT_EQ(policy.error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(policy.error().message.rfind("MalformedPolicyDocument: " + (dir / "bad.json").string() + ": Statement[1].Effect: ", 0),
            0u)
      << policy.error().message;

  write_text(dir / "nested.json", R"({"Bindings": []})");
  const std::string nested = parse_error(R"({"Bindings": [{"Users": ["*"], "PolicyFile": "nested.json"}]})",
                                         dir / "bindings.json");
  EXPECT_NE(nested.find("not bindings"), std::string::npos) << nested;
}

TEST(AccessPolicyMalformedFiles, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = "{\"Statement\": " + std::string(200, '[') + std::string(200, ']') + "}";
  const std::string message = parse_error(deep);
  EXPECT_TRUE(message.starts_with("MalformedPolicyDocument: policy.json: nests deeper than")) << message;
}

TEST(AccessPolicyMalformedFiles, MissingPolicyFileNamesTheBindingsFileAndThePath) {
  test::ScratchDir dir("vigil-access-policy");
  const std::string message = parse_error(R"({"Bindings": [{"Users": ["*"], "PolicyFile": "gone.json"}]})",
                                          dir / "bindings.json");
  EXPECT_TRUE(message.starts_with("MalformedPolicyDocument: " + (dir / "bindings.json").string() +
                                  ": Bindings[0].PolicyFile: cannot read " + (dir / "gone.json").string()))
      << message;
}

TEST(AccessPolicyMalformedFiles, PolicyVariablesAreLiteralIn2008Documents) {
  // Before 2012-10-17 "${...}" is plain text (IAM's rule), so it is accepted and matched as written.
  const AccessPolicy policy = parsed(R"({"Version": "2008-10-17", "Statement": {"Effect": "Allow", "Action": "*",
                                         "Resource": "arn:aws:iam::1:user/${aws:username}"}})");
  EXPECT_EQ(decide(policy, "a:b", "arn:aws:iam::1:user/${aws:username}"), AccessDecision::Allowed);
  EXPECT_EQ(decide(policy, "a:b", "arn:aws:iam::1:user/alice"), AccessDecision::ImplicitDeny);
}

}  // namespace
}  // namespace vigil::remote_debug
