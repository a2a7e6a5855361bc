#include "evaluate/rule_groups.h"

#include <algorithm>
#include <cctype>
#include <vigil/sdk/text.hpp>

namespace vigil::evaluate {

namespace {

using sdk::iequals;

// The sets of the rules config's _ruleGroups.py (since March 2021), the framework groups that
// _get_rule_list(framework) builds from them, and the older SIMPLE set of ruleGroups.json.
const std::vector<RuleGroup>& groups() {
  static const std::vector<RuleGroup> all = [] {
    const std::vector<std::string_view> universal = {"AllZero",           "ClassImbalance",      "Confusion",
                                                     "LossNotDecreasing", "Overfit",             "Overtraining",
                                                     "SimilarAcrossRuns", "StalledTrainingRule", "UnchangedTensor"};
    const std::vector<std::string_view> deep_learning = {"DeadRelu",           "ExplodingTensor",
                                                         "PoorWeightInitialization", "SaturatedActivation",
                                                         "TensorVariance",     "VanishingGradient",
                                                         "WeightUpdateRatio"};
    const std::vector<std::string_view> dl_application = {"CheckInputImages", "NLPSequenceRatio"};
    const std::vector<std::string_view> xgboost = {"FeatureImportanceOverweight", "TreeDepth"};
    const std::vector<std::string_view> report = {"CreateXgboostReport"};
    // The built-in profiler rules (builtin-rules §3, §6): run from ProfilerRuleConfigurations.
    // OverallFrameworkMetrics has no rules-config class in SageMaker (the docs list it): it is
    // ProfilerReport's sub-rule, and a rule of its own here.
    const std::vector<std::string_view> profiler = {
        "BatchSize",          "CPUBottleneck", "Dataloader",     "GPUMemoryIncrease",       "IOBottleneck",
        "LoadBalancing",      "LowGPUUtilization", "MaxInitializationTime", "OverallSystemUsage",
        "OverallFrameworkMetrics", "StepOutlier", "ProfilerReport"};
    auto join = [](std::initializer_list<const std::vector<std::string_view>*> parts) {
      std::vector<std::string_view> out;
      for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
      return out;
    };
    return std::vector<RuleGroup>{
        {"universal", "rules for every framework (TensorFlow, MXNet, PyTorch, XGBoost)", universal},
        {"deep_learning", "rules for deep-learning frameworks (TensorFlow, MXNet, PyTorch)", deep_learning},
        {"deep_learning_application", "rules for deep-learning applications (images, NLP)", dl_application},
        {"xgboost", "rules for XGBoost", xgboost},
        {"tensorflow", "universal + deep_learning + deep_learning_application",
         join({&universal, &deep_learning, &dl_application})},
        {"pytorch", "universal + deep_learning + deep_learning_application",
         join({&universal, &deep_learning, &dl_application})},
        {"mxnet", "universal + deep_learning + deep_learning_application",
         join({&universal, &deep_learning, &dl_application})},
        {"xgboost_framework", "universal + xgboost, with CreateXgboostReport",
         join({&universal, &xgboost, &report})},
        {"simple", "the SIMPLE set of ruleGroups.json for deep-learning frameworks",
         {"VanishingGradient", "LossNotDecreasing", "WeightUpdateRatio"}},
        {"profiler", "the profiler rules, over the job's system and framework metrics", profiler, RuleKind::Profiler},
    };
  }();
  return all;
}

}  // namespace

std::span<const RuleGroup> rule_groups() { return groups(); }

const RuleGroup* find_rule_group(std::string_view name) {
  for (const auto& g : groups())
    if (iequals(g.name, name)) return &g;
  return nullptr;
}

RuleKind builtin_rule_kind(std::string_view rule_name) {
  for (const auto& g : groups())
    if (g.kind == RuleKind::Profiler &&
        std::any_of(g.rules.begin(), g.rules.end(), [&](std::string_view r) { return iequals(r, rule_name); }))
      return RuleKind::Profiler;
  return RuleKind::Debug;
}

}  // namespace vigil::evaluate
