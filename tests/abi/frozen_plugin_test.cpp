// A plugin built against the frozen ABI 1.0 headers (tests/abi/frozen_v1_0/) must be accepted, listed
// and run by the current host: the ABI only grows by appending, so old plugins keep working.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "evaluate/evaluator.h"
#include "plugin_host/plugin_loader.h"
#include "test_support.h"

namespace vigil {
namespace {

const std::filesystem::path kFrozenPluginDir = VIGIL_ABI_FROZEN_PLUGIN_DIR;

using test::trigger_steps;

std::string mlp_healthy() { return (test::real_fixtures() / "mlp_healthy").string(); }

plugin_host::PluginRegistry frozen_registry() {
  plugin_host::PluginRegistry registry;
  registry.load_directory(kFrozenPluginDir);
  return registry;
}

std::string refusals(const plugin_host::PluginRegistry& registry) {
  std::string out;
  for (const auto& r : registry.refused()) out += r.path.string() + ": " + r.reason + "\n";
  return out;
}

evaluate::RuleConfig frozen_rule(std::string name, std::map<std::string, std::string> params = {}) {
  params["rule_to_invoke"] = "FrozenStepRule";
  auto r = evaluate::rule_from_parameters(std::move(name), params, mlp_healthy(), "test");
  EXPECT_VIGIL_OK(r);
  return r.value_or(evaluate::RuleConfig{});
}

std::vector<evaluate::RuleStatus> run_job(const plugin_host::PluginRegistry& registry, evaluate::JobConfig job) {
  evaluate::EvaluatorOptions options;
  options.follow = false;  // the fixture is complete
  auto ev = evaluate::Evaluator::create(registry, std::move(job), std::move(options));
  EXPECT_VIGIL_OK(ev);
  if (!ev) return {};
  (*ev)->run({});
  return (*ev)->statuses();
}

TEST(FrozenV1_0Plugin, IsAcceptedByTheCurrentHost) {
  ASSERT_TRUE(std::filesystem::is_directory(kFrozenPluginDir)) << kFrozenPluginDir;
  auto registry = frozen_registry();
  EXPECT_TRUE(registry.refused().empty()) << refusals(registry);
  ASSERT_EQ(registry.rules().size(), 1u) << refusals(registry);
  EXPECT_EQ(registry.rules()[0].plugin_id, "vigil.test.frozen-v1-0");
}

TEST(FrozenV1_0Plugin, ListsItsRuleWithItsParameter) {
  auto registry = frozen_registry();
  const plugin_host::RuleType* by_name = registry.find("FrozenStepRule");
  ASSERT_NE(by_name, nullptr) << refusals(registry);
  EXPECT_EQ(registry.find("vigil.test.frozen.FrozenStepRule"), by_name);

  const vigil_rule_descriptor* d = by_name->descriptor;
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->id, "vigil.test.frozen.FrozenStepRule");
  EXPECT_STREQ(d->name, "FrozenStepRule");
  EXPECT_STREQ(d->version, "1.0.0");
  EXPECT_EQ(d->flags, 0u);
  // The plugin wrote the 1.0 sizes; the host reads only what they cover.
  EXPECT_LE(d->struct_size, sizeof(vigil_rule_descriptor));
  ASSERT_EQ(d->param_count, 1u);
  const vigil_param_spec& p = d->params[0];
  EXPECT_LE(p.struct_size, sizeof(vigil_param_spec));
  EXPECT_STREQ(p.name, "fire_at");
  EXPECT_EQ(p.type, VIGIL_PARAM_INT64);
  EXPECT_EQ(p.flags, 0u);
  ASSERT_NE(p.default_text, nullptr);
  EXPECT_STREQ(p.default_text, "2");
  EXPECT_TRUE(std::isnan(p.min_value));
  EXPECT_TRUE(std::isnan(p.max_value));
}

TEST(FrozenV1_0Plugin, RunsWithTheCurrentEvaluator) {
  auto registry = frozen_registry();
  ASSERT_TRUE(registry.refused().empty()) << refusals(registry);
  evaluate::JobConfig job;
  job.rules.push_back(frozen_rule("fire-at-7", {{"fire_at", "7"}}));
  job.rules.push_back(frozen_rule("default"));  // fire_at's default, "2", from the 1.0 descriptor
  auto statuses = run_job(registry, job);
  ASSERT_EQ(statuses.size(), 2u);

  // Every step 0..29 went through tensor_names, tensor_value (+ deleter) and reduction_value; any
  // wrong answer, or a view never released, would have made the rule's status Error.
  EXPECT_EQ(statuses[0].status, evaluate::RuleEvaluationStatus::IssuesFound) << statuses[0].details;
  EXPECT_EQ(trigger_steps(statuses[0]), (std::vector<int64_t>{7}));
  EXPECT_EQ(statuses[1].status, evaluate::RuleEvaluationStatus::IssuesFound) << statuses[1].details;
  EXPECT_EQ(trigger_steps(statuses[1]), (std::vector<int64_t>{2}));

  // The evidence the 1.0 plugin reported through report_evidence, with what the host told it.
  ASSERT_EQ(statuses[0].triggers.size(), 1u);
  ASSERT_EQ(statuses[0].triggers[0].evidence.size(), 1u);
  const auto& evidence = statuses[0].triggers[0].evidence[0];
  EXPECT_EQ(evidence.at("step"), 7);
  EXPECT_EQ(evidence.at("tensor"), "CrossEntropyLoss_output_0");
  EXPECT_GE(evidence.at("names").get<int>(), 1);
  EXPECT_DOUBLE_EQ(evidence.at("value_max").get<double>(), evidence.at("reduction_max").get<double>());
  EXPECT_TRUE(std::isfinite(evidence.at("value_max").get<double>()));
}

}  // namespace
}  // namespace vigil
