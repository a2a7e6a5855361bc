// Every built-in rule on every labelled pathology run (shared/fixtures/pathologies): run with the
// label's parameters (SageMaker's defaults, or the docs' example selection), the rule must give the
// label's verdict: fire at one of the labelled trigger steps, or not fire. The label's other
// configurations and verified "would fire with" parameters are checked the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRuns = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "pathologies";

struct Case {
  std::string run;
  std::string rule;
  std::string config;  // "default", an other_configs key, or "would_fire_with"
  json params;         // the label's parameters (JSON values; null = leave out)
  std::string expected;  // fire | not_fire | no_data
  std::vector<int64_t> trigger_steps;  // labelled steps (may be empty: then first_trigger_step)
  std::optional<int64_t> first_trigger_step;
};

// A label value as SageMaker would pass it: a string (Python str() of numbers and booleans,
// comma-joined lists).
std::optional<std::string> as_rule_parameter(const json& v) {
  if (v.is_null()) return std::nullopt;
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v.get<double>());
    return std::string(buf);
  }
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& item : v) {
      auto s = as_rule_parameter(item);
      if (!s) continue;
      out += (out.empty() ? "" : ",") + *s;
    }
    return out;
  }
  return v.dump();
}

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  std::vector<fs::path> labels;
  for (const auto& e : fs::directory_iterator(kRuns))
    if (e.path().string().ends_with(".label.json")) labels.push_back(e.path());
  std::sort(labels.begin(), labels.end());
  for (const auto& path : labels) {
    std::ifstream in(path);
    const json label = json::parse(in);
    const std::string run = label["run"].get<std::string>();
    for (const auto& [rule, v] : label["rules"].items()) {
      auto steps_of = [](const json& j) {
        std::vector<int64_t> s;
        if (j.contains("trigger_steps") && j["trigger_steps"].is_array())
          for (const auto& x : j["trigger_steps"]) s.push_back(x.get<int64_t>());
        return s;
      };
      auto first_of = [](const json& j) -> std::optional<int64_t> {
        if (j.contains("first_trigger_step") && j["first_trigger_step"].is_number_integer())
          return j["first_trigger_step"].get<int64_t>();
        return std::nullopt;
      };
      const json base = v.value("params", json::object());
      cases.push_back({run, rule, "default", base, v["expected"].get<std::string>(), steps_of(v), first_of(v)});
      if (v.contains("other_configs") && v["other_configs"].is_object())
        for (const auto& [name, oc] : v["other_configs"].items()) {
          json params = base;
          const json overrides = oc.value("params", json::object());
          for (const auto& [k, val] : overrides.items()) params[k] = val;
          cases.push_back({run, rule, name, params, oc["expected"].get<std::string>(), steps_of(oc), first_of(oc)});
        }
      if (v.contains("would_fire_with") && v["would_fire_with"].is_object() && v["would_fire_with"].value("verified", false)) {
        const auto& wf = v["would_fire_with"];
        json params = base;
        const json overrides = wf.value("params", json::object());
        for (const auto& [k, val] : overrides.items()) params[k] = val;
        cases.push_back({run, rule, "would_fire_with", params, "fire", {}, first_of(wf)});
      }
    }
  }
  return cases;
}

class Pathology : public ::testing::TestWithParam<Case> {};

TEST_P(Pathology, GivesTheLabelledVerdict) {
  const Case& c = GetParam();
  ASSERT_NE(test::builtin_registry().find(c.rule), nullptr)
      << "built-in rule " << c.rule << " is not loaded from " << VIGIL_BUILTIN_PLUGIN_DIR;
  std::map<std::string, std::string> params;
  for (const auto& [k, v] : c.params.items())
    if (auto s = as_rule_parameter(v)) params[k] = *s;
  evaluate::EvaluatorOptions options;
  options.output_directory = fs::temp_directory_path() / "vigil-pathology-reports";  // CreateXgboostReport's HTML
  fs::create_directories(*options.output_directory);
  auto run = test::try_evaluate_rule(c.rule, kRuns / c.run, params, options);
  ASSERT_VIGIL_OK(run);
  const auto& status = *run;
  const std::string seen = test::seen(status);
  if (c.expected == "fire") {
    ASSERT_EQ(status.status, evaluate::RuleEvaluationStatus::IssuesFound) << seen;
    const int64_t first = status.triggers.front().step;
    if (!c.trigger_steps.empty()) {
      EXPECT_NE(std::find(c.trigger_steps.begin(), c.trigger_steps.end(), first), c.trigger_steps.end())
          << "first trigger at step " << first << " is not a labelled trigger step; " << seen;
    } else if (c.first_trigger_step) {
      EXPECT_EQ(first, *c.first_trigger_step) << seen;
    }
  } else if (c.expected == "not_fire") {
    EXPECT_EQ(status.status, evaluate::RuleEvaluationStatus::NoIssuesFound) << seen;
  } else {
    // no_data: the label cannot judge (the rule's data, or a required parameter such as
    // SimilarAcrossRuns' other trial, is missing). The rule must not report issues.
    EXPECT_NE(status.status, evaluate::RuleEvaluationStatus::IssuesFound) << seen;
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.run + "__" + info.param.rule + "__" + info.param.config;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Labels, Pathology, ::testing::ValuesIn(load_cases()), case_name);

}  // namespace
}  // namespace vigil
