// The "tensor" family (VanishingGradient, ExplodingTensor, AllZero, UnchangedTensor, TensorVariance,
// WeightUpdateRatio, SimilarAcrossRuns) through the real host: trials written with Vigil's writer,
// the plugin loaded from the built-in plugin folder, and the evaluator's statuses, trigger steps and
// evidence checked. Also the exact trigger steps on the real smdebug fixtures and on the labelled
// pathology runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using format::ElementType;
using namespace test;  // the suites' helpers: tests/support/test_support.h

using Steps = std::vector<int64_t>;

// =============================================================================================
// The plugin and its descriptors

TEST(TensorRulesPlugin, RegistersEveryRuleWithSageMakersNamesAndDefaults) {
  const auto& registry = test::builtin_registry();
  const std::map<std::string, std::map<std::string, std::string>> expected = {
      {"VanishingGradient", {{"threshold", "0.0000001"}}},
      {"ExplodingTensor", {{"collection_names", ""}, {"tensor_regex", ""}, {"only_nan", "False"}}},
      {"AllZero", {{"collection_names", ""}, {"tensor_regex", ""}, {"threshold", "100"}}},
      {"UnchangedTensor",
       {{"collection_names", ""},
        {"tensor_regex", ""},
        {"num_steps", "3"},
        {"rtol", "1e-05"},
        {"atol", "1e-08"},
        {"equal_nan", "False"},
        {"vanishing_gradient_threshold", "0"},
        {"train_steps_only", "False"}}},
      {"TensorVariance",
       {{"collection_names", ""},
        {"tensor_regex", ""},
        {"max_threshold", ""},
        {"min_threshold", ""},
        {"min_about_zero", "False"}}},
      {"WeightUpdateRatio",
       {{"num_steps", ""}, {"large_threshold", "10.0"}, {"small_threshold", "0.00000001"}, {"epsilon", "0.000000001"}}},
      {"SimilarAcrossRuns", {{"collection_names", ""}, {"tensor_regex", ""}}},
  };
  for (const auto& [name, params] : expected) {
    const auto* type = registry.find(name);
    ASSERT_NE(type, nullptr) << name;
    EXPECT_EQ(std::string(type->descriptor->id), "vigil.builtin." + name);
    EXPECT_EQ(std::string(type->descriptor->name), name);
    EXPECT_GT(std::strlen(type->descriptor->description), 200u) << name << " needs its documentation";
    ASSERT_EQ(type->descriptor->param_count, params.size()) << name;
    for (uint32_t i = 0; i < type->descriptor->param_count; ++i) {
      const auto& p = type->descriptor->params[i];
      ASSERT_TRUE(params.contains(p.name)) << name << "." << p.name;
      EXPECT_EQ(std::string(p.default_text ? p.default_text : ""), params.at(p.name)) << name << "." << p.name;
    }
    EXPECT_EQ((type->descriptor->flags & VIGIL_RULEF_MULTI_TRIAL) != 0, name == "SimilarAcrossRuns") << name;
  }
  // The calibrated profile's defaults (docs/rules.md, "Calibrated profile").
  const std::map<std::string, std::map<std::string, std::string>> calibrated = {
      {"AllZero", {{"collection_names", "weights,gradients"}}},
      {"UnchangedTensor",
       {{"collection_names", "weights"},
        {"rtol", "0"},
        {"atol", "0"},
        {"vanishing_gradient_threshold", "0.0000001"},
        {"train_steps_only", "True"}}},
      {"TensorVariance",
       {{"collection_names", "weights"},
        {"max_threshold", "4"},
        {"min_threshold", "0.00001"},
        {"min_about_zero", "True"}}},
  };
  for (const auto& [name, params] : expected) {
    const auto want = calibrated.contains(name) ? calibrated.at(name) : std::map<std::string, std::string>{};
    EXPECT_EQ(calibrated_defaults(registry.find(name)->descriptor), want) << name;
  }
}

// =============================================================================================
// VanishingGradient

TEST(TensorVanishingGradient, FiresStrictlyBelowTheThresholdAndSkipsNonFiniteMeans) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"gradient/fc.weight", {0.5, -0.5}}, {"gradient/fc.bias", {1, 1}}}},   // 0.5: not below
      {1, Mode::Train, -1, {{"gradient/fc.weight", {0.25, -0.5}}, {"gradient/fc.bias", {1, 1}}}},  // 0.375 < 0.5
      {2, Mode::Train, -1, {{"gradient/fc.weight", {kNaN, 0}}}},                                   // NaN
      {3, Mode::Train, -1, {{"gradient/fc.weight", {kInf, 0}}}},                                   // inf
      {4, Mode::Train, -1, {{"loss_output_0", {0.0}}}},                                            // no gradient
      {5, Mode::Train, -1, {{"gradient/fc.weight", {0, 0}}, {"gradient/fc.bias", {0.1, -0.1}}}},
  });
  auto s = evaluate_rule("VanishingGradient", dir.path(), {{"threshold", "0.5"}});
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_EQ(trigger_steps(s), (Steps{1, 5}));
  const auto& e = evidence(s, 0);
  EXPECT_EQ(e["tensor"], "gradient/fc.weight");
  EXPECT_EQ(e["worker"], "worker_0");
  EXPECT_DOUBLE_EQ(e["mean_abs"].get<double>(), 0.375);
  EXPECT_DOUBLE_EQ(e["threshold"].get<double>(), 0.5);
  EXPECT_EQ(e["tensors_below"], 1);
  // Step 5: both gradients are below; the evidence names the smallest mean and lists both.
  const auto& e5 = evidence(s, 1);
  EXPECT_EQ(e5["tensor"], "gradient/fc.weight");
  EXPECT_DOUBLE_EQ(e5["mean_abs"].get<double>(), 0.0);
  EXPECT_EQ(e5["tensors_below"], 2);
  EXPECT_EQ(e5["below"].size(), 2u);

  // The default threshold (1e-7) sees none of these as vanishing except the all-zero gradient.
  auto d = evaluate_rule("VanishingGradient", dir.path());
  EXPECT_EQ(trigger_steps(d), (Steps{5})) << seen(d);
}

TEST(TensorVanishingGradient, ReadsSavedAbsMeanReductionsAndEveryWorker) {
  ScratchDir dir;
  // worker_0: healthy values; a reduction-only gradient whose saved abs-mean is tiny at step 1.
  write_trial(dir.path() , {
      {0, Mode::Train, -1, {{"gradient/a", {1, 2}}}, {{"gradient/r", "mean", true, 1.0}}},
      {1, Mode::Train, -1, {{"gradient/a", {1, 2}}}, {{"gradient/r", "mean", true, 1e-9}}},
      {2, Mode::Train, -1, {{"gradient/a", {1, 2}}}, {{"gradient/r", "mean", false, 1e-9}}},  // not abs: not read
      {3, Mode::Train, -1, {{"gradient/a", {1, 2}}}},
  }, {.num_workers = 2, .end_marker = false});
  // worker_1: the gradient vanishes at step 3 only.
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"gradient/a", {1, 2}}}},
      {1, Mode::Train, -1, {{"gradient/a", {1, 2}}}},
      {2, Mode::Train, -1, {{"gradient/a", {1, 2}}}},
      {3, Mode::Train, -1, {{"gradient/a", {1e-9, 0}}}},
  }, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("VanishingGradient", dir.path());
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_EQ(trigger_steps(s), (Steps{1, 3}));
  EXPECT_EQ(evidence(s, 0)["tensor"], "gradient/r");
  EXPECT_DOUBLE_EQ(evidence(s, 0)["mean_abs"].get<double>(), 1e-9);
  EXPECT_EQ(evidence(s, 1)["tensor"], "gradient/a");
  EXPECT_EQ(evidence(s, 1)["worker"], "worker_1");
}

TEST(TensorVanishingGradient, OnlyTheGradientsCollectionIsRead) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"layer.weight", {0, 0}}, {"relu_output_0", {0, 0}}}},
      {1, Mode::Eval, 0, {{"gradient/x", {0, 0}}}},  // a gradient in an EVAL step is judged too (global steps)
  });
  auto s = evaluate_rule("VanishingGradient", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{1})) << seen(s);
}

// =============================================================================================
// ExplodingTensor

TEST(TensorExplodingTensor, SpecTestVectorFiresAtTheNaNSteps) {
  ScratchDir dir;
  // builtin-rules.md §2.2: three tensors per step; [NaN] at 0, [1.0] at 1, [NaN] at 2.
  std::vector<TrialStep> steps;
  for (int64_t s = 0; s < 3; ++s) {
    const double v = s == 1 ? 1.0 : kNaN;
    steps.push_back({s, Mode::Train, -1, {{"t_0", {v}}, {"t_1", {v}}, {"t_2", {v}}}});
  }
  write_trial(dir.path(), steps);
  auto s = evaluate_rule("ExplodingTensor", dir.path());
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_EQ(trigger_steps(s), (Steps{0, 2}));
  const auto& e = evidence(s, 0);
  EXPECT_EQ(e["tensor"], "t_0");
  EXPECT_EQ(e["what"], "value");
  EXPECT_EQ(e["nan_count"], 1);
  EXPECT_EQ(e["inf_count"], 0);
  EXPECT_EQ(e["nonfinite_count"], 3);
}

TEST(TensorExplodingTensor, InfinitiesFireUnlessOnlyNaN) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"a", {1, kInf}}}},
      {1, Mode::Train, -1, {{"a", {-kInf, 1}, {}, ElementType::Float64}}},
      {2, Mode::Train, -1, {{"a", {kNaN, kInf}, {}, ElementType::Float64}}},
      {3, Mode::Train, -1, {{"a", {1e38, 1e38}}}},  // finite, though its sum overflows float32
  });
  auto s = evaluate_rule("ExplodingTensor", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{0, 1, 2})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["inf_count"], 1);
  auto n = evaluate_rule("ExplodingTensor", dir.path(), {{"only_nan", "True"}});
  EXPECT_EQ(trigger_steps(n), (Steps{2})) << seen(n);
  EXPECT_EQ(evidence(n, 0)["only_nan"], true);
}

TEST(TensorExplodingTensor, SelectsCollectionsAndRegexesOrEveryTensor) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"CrossEntropyLoss_output_0", {kNaN}}, {"gradient/fc.weight", {1, 2}}}},
      {1, Mode::Train, -1, {{"CrossEntropyLoss_output_0", {1}}, {"gradient/fc.weight", {kNaN, 2}}}},
      {2, Mode::Train, -1, {{"other", {kNaN}}}},
  });
  EXPECT_EQ(trigger_steps(evaluate_rule("ExplodingTensor", dir.path())), (Steps{0, 1, 2}));
  EXPECT_EQ(trigger_steps(evaluate_rule("ExplodingTensor", dir.path(), {{"tensor_regex", ".*gradient"}})), (Steps{1}));
  EXPECT_EQ(trigger_steps(evaluate_rule("ExplodingTensor", dir.path(), {{"collection_names", "losses"}})), (Steps{0}));
  // Both: the union.
  EXPECT_EQ(trigger_steps(evaluate_rule("ExplodingTensor", dir.path(),
                                         {{"collection_names", "losses"}, {"tensor_regex", "^oth, nothing"}})),
            (Steps{0, 2}));
  // A regex the host cannot compile is refused when the rule is created.
  auto bad = evaluate_rule("ExplodingTensor", dir.path(), {{"tensor_regex", "(unclosed"}});
  EXPECT_EQ(bad.status, RuleEvaluationStatus::Error) << seen(bad);
  EXPECT_NE(bad.details.find("tensor_regex"), std::string::npos) << bad.details;
}

TEST(TensorExplodingTensor, EveryFloatDtypeIsCheckedAndOtherDtypesNeverFire) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"half", {1, 2.5}, {}, ElementType::Float16}}},
      {1, Mode::Train, -1, {{"half", {kNaN, 1}, {}, ElementType::Float16}}},
      {2, Mode::Train, -1, {{"half", {1, -kInf}, {2, 1}, ElementType::Float16}}},
      {3, Mode::Train, -1, {{"i16", {-32768, 32767}, {}, ElementType::Int16},
                            {"i64", {-1, 1}, {}, ElementType::Int64},
                            {"u8", {255, 0}, {}, ElementType::UInt8},
                            {"flag", {1, 0}, {}, ElementType::Bool},
                            {"text", {}, {}, ElementType::String, {"nan", "inf"}}}},
  });
  auto s = evaluate_rule("ExplodingTensor", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{1, 2})) << seen(s);
}

TEST(TensorExplodingTensor, SavedReductionsAreCheckedWithOrWithoutTheValue) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {}, {{"relu_output_0", "min", false, 0.0}, {"relu_output_0", "l2", false, 3.0}}},
      {1, Mode::Train, -1, {}, {{"relu_output_0", "min", false, 0.0}, {"relu_output_0", "l2", false, kNaN}}},
      {2, Mode::Train, -1, {}, {{"relu_output_0", "mean", true, kInf}}},
      {3, Mode::Train, -1, {{"w", {1}}}, {}, {"fc_output_0"}},  // shape only: no verdict
      // A finite value whose saved l2 overflowed in the hook: smdebug's reduction_values shows the inf.
      {4, Mode::Train, -1, {{"big", {1e38, 1e38}}}, {{"big", "l2", false, kInf}}},
      // A finite float16 value whose prod would overflow: nothing is computed, nothing fires.
      {5, Mode::Train, -1, {{"half", {60000, 60000}, {}, ElementType::Float16}}},
  });
  auto s = evaluate_rule("ExplodingTensor", dir.path());
  ASSERT_EQ(trigger_steps(s), (Steps{1, 2, 4})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["what"], "reduction:l2");
  EXPECT_EQ(evidence(s, 0)["value"], "NaN");
  EXPECT_EQ(evidence(s, 1)["what"], "reduction:abs_mean");
  EXPECT_EQ(evidence(s, 1)["value"], "Infinity");
  EXPECT_EQ(evidence(s, 2)["tensor"], "big");
  EXPECT_EQ(evidence(s, 2)["what"], "reduction:l2");
  auto n = evaluate_rule("ExplodingTensor", dir.path(), {{"only_nan", "True"}});
  EXPECT_EQ(trigger_steps(n), (Steps{1})) << seen(n);
}

TEST(TensorExplodingTensor, EveryWorkerIsInspected) {
  ScratchDir dir;
  write_trial(dir.path(), {{0, Mode::Train, -1, {{"a", {1}}}}, {1, Mode::Train, -1, {{"a", {1}}}}}, {.num_workers = 2, .end_marker = false});
  write_trial(dir.path(), {{0, Mode::Train, -1, {{"a", {1}}}}, {1, Mode::Train, -1, {{"a", {kNaN}}}}}, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("ExplodingTensor", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{1})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["worker"], "worker_1");
}

// =============================================================================================
// AllZero

TEST(TensorAllZero, NeedsASelection) {
  ScratchDir dir;
  write_trial(dir.path(), {{0, Mode::Train, -1, {{"a", {0, 0}}}}});
  auto s = evaluate_rule("AllZero", dir.path());
  EXPECT_EQ(s.status, RuleEvaluationStatus::Error) << seen(s);
  EXPECT_NE(s.details.find("please provide either collection_names or tensor_regex"), std::string::npos) << s.details;
  EXPECT_NE(rule_refusal("AllZero", dir.path(), {{"tensor_regex", ".*"}, {"threshold", "100.5"}}), "");
  EXPECT_NE(rule_refusal("AllZero", dir.path(), {{"tensor_regex", ".*"}, {"threshold", "-1"}}), "");
}

TEST(TensorAllZero, DefaultThresholdNeedsEveryElementZero) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"a", {0, -0.0, 0}}}},          // -0.0 is zero
      {1, Mode::Train, -1, {{"a", {0, 0, 1e-30}}}},
      {2, Mode::Train, -1, {{"a", {0, kNaN, 0}}}},         // NaN is not zero
      {3, Mode::Eval, 0, {{"predictions", {0, 0, 0}, {}, ElementType::Int64}}},
      {4, Mode::Train, -1, {{"mask", {0, 0}, {}, ElementType::Bool}}},
      {5, Mode::Train, -1, {{"names", {}, {}, ElementType::String, {"", ""}}}},  // strings: no verdict
  });
  auto s = evaluate_rule("AllZero", dir.path(), {{"tensor_regex", ".*"}});
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_EQ(trigger_steps(s), (Steps{0, 3, 4}));
  const auto& e = evidence(s, 0);
  EXPECT_EQ(e["tensor"], "a");
  EXPECT_DOUBLE_EQ(e["zero_percent"].get<double>(), 100.0);
  EXPECT_EQ(e["zero_count"], 3);
  EXPECT_EQ(e["size"], 3);
  EXPECT_DOUBLE_EQ(e["threshold"].get<double>(), 100.0);
}

TEST(TensorAllZero, ThresholdIsInclusive) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"a", {0, 0, 1, 1}}}},  // 50 %
      {1, Mode::Train, -1, {{"a", {0, 1, 1, 1}}}},  // 25 %
  });
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"tensor_regex", "a"}, {"threshold", "50"}})),
            (Steps{0}));
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"tensor_regex", "a"}, {"threshold", "25"}})),
            (Steps{0, 1}));
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"tensor_regex", "a"}, {"threshold", "50.1"}})),
            (Steps{}));
}

TEST(TensorAllZero, SelectionAndMissingValues) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"fc.weight", {1, 1}}, {"fc.bias", {0, 0}}}},
      {1, Mode::Train, -1, {{"fc.weight", {0, 0}}}, {{"relu_output_0", "max", false, 0.0}}},
      {2, Mode::Train, -1, {}, {{"relu_output_0", "max", false, 0.0}}},  // reductions only: no verdict
  });
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"collection_names", "weights"}})), (Steps{1}));
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"collection_names", "biases"}})), (Steps{0}));
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"tensor_regex", "relu"}})), (Steps{}));
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(),
                                         {{"collection_names", "weights"}, {"tensor_regex", "bias"}})),
            (Steps{0, 1}));
}

TEST(TensorAllZero, CalibratedSelectionLeavesZeroInitialisedBiasesAlone) {
  // Biases are commonly initialised to zero; weights and gradients are not all zero in a healthy run.
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"fc.weight", {1, 2}}, {"fc.bias", {0, 0}}, {"gradient/fc.weight", {0.1, 0.2}}}},
      {1, Mode::Train, -1, {{"fc.weight", {1, 2}}, {"fc.bias", {0, 0}}, {"gradient/fc.weight", {0, 0}}}},
      {2, Mode::Train, -1, {{"fc.weight", {0, 0}}, {"fc.bias", {0, 0}}, {"gradient/fc.weight", {0.1, 0}}}},
  });
  auto s = evaluate_rule("AllZero", dir.path(), {{"collection_names", "weights,gradients"}});
  ASSERT_EQ(trigger_steps(s), (Steps{1, 2})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["tensor"], "gradient/fc.weight");
  EXPECT_EQ(evidence(s, 1)["tensor"], "fc.weight");
  EXPECT_EQ(trigger_steps(evaluate_rule("AllZero", dir.path(), {{"tensor_regex", ".*"}})), (Steps{0, 1, 2}));
}

// =============================================================================================
// UnchangedTensor

TEST(TensorUnchangedTensor, SpecTestVectors) {
  ScratchDir dir;
  // builtin-rules.md §2.4: foo_0..2 all ones at steps 0, 1, 2; boo_0..2 all ones at step 5.
  std::vector<TrialStep> steps;
  for (int64_t s = 0; s < 3; ++s) steps.push_back({s, Mode::Train, -1, {{"foo_0", {1, 1}}, {"foo_1", {1, 1}}, {"foo_2", {1, 1}}}});
  steps.push_back({5, Mode::Train, -1, {{"boo_0", {1, 1}}, {"boo_1", {1, 1}}, {"boo_2", {1, 1}}}});
  write_trial(dir.path(), steps);
  const std::map<std::string, std::string> sel{{"tensor_regex", "foo|boo"}};
  auto all = evaluate_rule("UnchangedTensor", dir.path(), sel);
  ASSERT_EQ(trigger_steps(all), (Steps{2})) << seen(all);
  const auto& e = evidence(all, 0);
  EXPECT_EQ(e["tensor"], "foo_0");
  EXPECT_EQ(e["steps"], nlohmann::json::array({0, 1, 2}));
  EXPECT_EQ(e["num_steps"], 3);
  EXPECT_EQ(e["tensors_unchanged"], 3);

  auto p = sel;
  p["end_step"] = "2";  // steps 0..1
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), p)), (Steps{}));
  p = sel;
  p["start_step"] = "2";  // the history before start_step counts
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), p)), (Steps{2}));
  p = sel;
  p["start_step"] = "3";  // steps 3..5: the boo tensors have one step only
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), p)), (Steps{}));
  p = sel;
  p["num_steps"] = "1";  // a one-step history is trivially unchanged
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), p)), (Steps{0, 1, 2, 5}));
}

TEST(TensorUnchangedTensor, ToleranceBoundaryAndNaN) {
  ScratchDir dir;
  const auto f64 = ElementType::Float64;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"a", {1.5}, {}, f64}, {"n", {kNaN, 1}}, {"i", {kInf, 1}}}},
      {1, Mode::Train, -1, {{"a", {1.5}, {}, f64}, {"n", {kNaN, 1}}, {"i", {kInf, 1}}}},
      {2, Mode::Train, -1, {{"a", {1.0}, {}, f64}, {"n", {kNaN, 1}}, {"i", {kInf, 1}}}},  // |1.5 - 1| = 0.5
      {3, Mode::Train, -1, {{"a", {1.0}, {}, f64}}},
      {4, Mode::Train, -1, {{"a", {1.0000001}, {}, f64}}},
  });
  // |v_p - v_s| <= atol + rtol * |v_s| with atol 0.5, rtol 0: 0.5 is inside, 0.5000001 outside.
  auto a = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^a$"}, {"rtol", "0"}, {"atol", "0.5"}});
  EXPECT_EQ(trigger_steps(a), (Steps{2, 3, 4})) << seen(a);
  auto b = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^a$"}, {"rtol", "0"}, {"atol", "0.4999"}});
  EXPECT_EQ(trigger_steps(b), (Steps{4})) << seen(b);  // only 1.0, 1.0, 1.0000001 are within 0.4999
  // rtol scales with the value at the judged step: 0.5 <= 0.5 * 1.0.
  auto r = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^a$"}, {"rtol", "0.5"}, {"atol", "0"}});
  EXPECT_EQ(trigger_steps(r), (Steps{2, 3, 4})) << seen(r);
  // NaN equals NaN only with equal_nan; an infinity equals itself.
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^n$"}})), (Steps{}));
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(),
                                         {{"tensor_regex", "^n$"}, {"equal_nan", "True"}})),
            (Steps{2}));
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^i$"}})), (Steps{2}));
  // The default tolerances: 1e-7 apart is close for 1.0 (1e-5 + 1e-8).
  EXPECT_EQ(trigger_steps(evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^a$"}})), (Steps{4}));
}

TEST(TensorUnchangedTensor, UsesTheTensorsOwnSavedStepsAcrossModes) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, 0, {{"CrossEntropyLoss_output_0", {2}}, {"w", {1}}}},
      {1, Mode::Train, 1, {{"CrossEntropyLoss_output_0", {2}}}},
      {2, Mode::Eval, 0, {{"CrossEntropyLoss_output_0", {2}}}},
      {3, Mode::Train, 2, {{"CrossEntropyLoss_output_0", {1.5}}}},
      {7, Mode::Train, 3, {{"w", {1}}}},
      {9, Mode::Train, 4, {{"w", {1}}}},
  });
  auto s = evaluate_rule("UnchangedTensor", dir.path(), {{"collection_names", "losses"}});
  EXPECT_EQ(trigger_steps(s), (Steps{2})) << seen(s);
  auto w = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^w$"}});
  ASSERT_EQ(trigger_steps(w), (Steps{9})) << seen(w);
  EXPECT_EQ(evidence(w, 0)["steps"], nlohmann::json::array({0, 7, 9}));
  auto none = evaluate_rule("UnchangedTensor", dir.path());
  EXPECT_EQ(none.status, RuleEvaluationStatus::Error) << seen(none);
  EXPECT_NE(rule_refusal("UnchangedTensor", dir.path(), {{"tensor_regex", "w"}, {"num_steps", "0"}}), "");
}

TEST(TensorUnchangedTensor, TrainStepsOnlyIgnoresWeightsSavedWhileEvaluating) {
  // A weight that trains at every TRAIN step and is saved, unchanged, at three EVAL steps in between
  // (as smdebug's healthy MLP run saves it): SageMaker's reading sees three equal values; with
  // train_steps_only the history is the TRAIN steps, which all differ, and EVAL steps are not judged.
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, 0, {{"w", {1}}}},
      {1, Mode::Train, 1, {{"w", {2}}}},
      {2, Mode::Eval, 0, {{"w", {2}}}},
      {3, Mode::Eval, 1, {{"w", {2}}}},
      {4, Mode::Train, 2, {{"w", {3}}}},
      {5, Mode::Train, 3, {{"w", {3}}}},
      {6, Mode::Train, 4, {{"w", {3}}}},
  });
  auto all_modes = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^w$"}});
  EXPECT_EQ(trigger_steps(all_modes), (Steps{3, 6})) << seen(all_modes);
  auto train = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "^w$"}, {"train_steps_only", "True"}});
  EXPECT_EQ(trigger_steps(train), (Steps{6})) << seen(train);  // TRAIN steps 4, 5, 6 hold 3 each
  EXPECT_EQ(evidence(train, 0)["steps"], nlohmann::json::array({4, 5, 6}));
  EXPECT_EQ(train.judgement.steps_not_judged, 4);  // steps 0 and 1 (too short a history), EVAL 2 and 3
}

TEST(TensorUnchangedTensor, ComparesEachWorkerWithItsOwnHistory) {
  ScratchDir dir;
  write_trial(dir.path(), {{0, Mode::Train, -1, {{"w", {1}}}}, {1, Mode::Train, -1, {{"w", {1}}}},
                                  {2, Mode::Train, -1, {{"w", {2}}}}}, {.num_workers = 2, .end_marker = false});
  write_trial(dir.path(), {{0, Mode::Train, -1, {{"w", {5}}}}, {1, Mode::Train, -1, {{"w", {5}}}},
                                  {2, Mode::Train, -1, {{"w", {5}}}}}, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("UnchangedTensor", dir.path(), {{"tensor_regex", "w"}});
  ASSERT_EQ(trigger_steps(s), (Steps{2})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["worker"], "worker_1");
  EXPECT_EQ(evidence(s, 0)["tensors_unchanged"], 1);
}

TEST(TensorUnchangedTensor, CalibratedExactComparisonSeesTinyUpdates) {
  // A weight that trains slowly (relative steps of 1e-6) is allclose with numpy's tolerances but not
  // unchanged; a frozen one is bit-identical.
  ScratchDir dir;
  const auto f64 = ElementType::Float64;
  std::vector<TrialStep> steps;
  for (int64_t s = 0; s < 4; ++s)
    steps.push_back({s, Mode::Train, -1,
                     {{"slow.weight", {1.0 + 1e-6 * static_cast<double>(s), -2.0}, {}, f64},
                      {"frozen.weight", {0.5, -0.25}, {}, f64}}});
  write_trial(dir.path(), steps);
  auto numpy = evaluate_rule("UnchangedTensor", dir.path(), {{"collection_names", "weights"}});
  ASSERT_EQ(trigger_steps(numpy), (Steps{2, 3})) << seen(numpy);
  EXPECT_EQ(evidence(numpy, 0)["tensors_unchanged"], 2);
  auto exact =
      evaluate_rule("UnchangedTensor", dir.path(), {{"collection_names", "weights"}, {"rtol", "0"}, {"atol", "0"}});
  ASSERT_EQ(trigger_steps(exact), (Steps{2, 3})) << seen(exact);
  EXPECT_EQ(evidence(exact, 0)["tensors_unchanged"], 1);
  EXPECT_EQ(evidence(exact, 0)["tensor"], "frozen.weight");
}

TEST(TensorUnchangedTensor, VanishingGradientThresholdLeavesVanishingTensorsToVanishingGradient) {
  // Three unchanged weights: one whose gradient vanishes (1e-20), one whose gradient is exactly zero
  // (no loss signal reaches it), one with an ordinary gradient (left out of the optimizer).
  ScratchDir dir;
  std::vector<TrialStep> steps;
  for (int64_t s = 0; s < 3; ++s)
    steps.push_back({s, Mode::Train, -1,
                     {{"deep.weight", {0.01, -0.01}},
                      {"gradient/deep.weight", {1e-20, -1e-20}},
                      {"dead.weight", {0.3, 0.4}},
                      {"gradient/dead.weight", {0, 0}},
                      {"frozen.weight", {0.5, 0.6}},
                      {"gradient/frozen.weight", {0.02, -0.01}},
                      {"nogradient.weight", {0.7, 0.8}}}});
  write_trial(dir.path(), steps);
  const std::map<std::string, std::string> sel{{"collection_names", "weights"}};
  auto all = evaluate_rule("UnchangedTensor", dir.path(), sel);
  ASSERT_EQ(trigger_steps(all), (Steps{2})) << seen(all);
  EXPECT_EQ(evidence(all, 0)["tensors_unchanged"], 4);
  auto guarded = sel;
  guarded["vanishing_gradient_threshold"] = "0.0000001";
  auto g = evaluate_rule("UnchangedTensor", dir.path(), guarded);
  ASSERT_EQ(trigger_steps(g), (Steps{2})) << seen(g);
  const auto& e = evidence(g, 0);
  EXPECT_EQ(e["tensors_unchanged"], 3);
  std::vector<std::string> names;
  for (const auto& u : e["unchanged"]) names.push_back(u["tensor"]);
  EXPECT_EQ(names, (std::vector<std::string>{"dead.weight", "frozen.weight", "nogradient.weight"}));
  // Only the vanishing tensor unchanged: nothing fires.
  auto deep = guarded;
  deep.erase("collection_names");
  deep["tensor_regex"] = "^deep";
  auto d = evaluate_rule("UnchangedTensor", dir.path(), deep);
  EXPECT_EQ(d.status, RuleEvaluationStatus::NoIssuesFound) << seen(d);
  EXPECT_NE(
      rule_refusal("UnchangedTensor", dir.path(), {{"tensor_regex", "w"}, {"vanishing_gradient_threshold", "-1"}}), "");
}

// =============================================================================================
// TensorVariance

TEST(TensorTensorVariance, NeverFiresWithoutThresholds) {
  ScratchDir dir;
  write_trial(dir.path(), {{0, Mode::Train, -1, {{"fc.weight", {-1000, 1000}}}},
                                  {1, Mode::Train, -1, {{"fc.weight", {0, 0}}}}});
  auto s = evaluate_rule("TensorVariance", dir.path(), {{"collection_names", "weights"}});
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  auto none = evaluate_rule("TensorVariance", dir.path(), {{"max_threshold", "1"}});
  EXPECT_EQ(none.status, RuleEvaluationStatus::Error) << seen(none);
}

TEST(TensorTensorVariance, StrictBoundsOnThePopulationVariance) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"fc.weight", {0, 2}}}},        // var 1 (ddof 0)
      {1, Mode::Train, -1, {{"fc.weight", {1, 1, 1}}}},     // var 0
      {2, Mode::Train, -1, {{"fc.weight", {kNaN, 1}}}},     // var NaN
      {3, Mode::Train, -1, {}, {{"fc.weight", "variance", false, 7.0}}},  // saved variance, no value
  });
  const std::string w = "weights";
  EXPECT_EQ(trigger_steps(evaluate_rule("TensorVariance", dir.path(), {{"collection_names", w}, {"max_threshold", "1"}})),
            (Steps{3}));
  auto above = evaluate_rule("TensorVariance", dir.path(), {{"collection_names", w}, {"max_threshold", "0.5"}});
  ASSERT_EQ(trigger_steps(above), (Steps{0, 3})) << seen(above);
  EXPECT_DOUBLE_EQ(evidence(above, 0)["variance"].get<double>(), 1.0);
  EXPECT_EQ(evidence(above, 0)["above_max"], true);
  EXPECT_DOUBLE_EQ(evidence(above, 0)["max_threshold"].get<double>(), 0.5);
  EXPECT_EQ(trigger_steps(evaluate_rule("TensorVariance", dir.path(), {{"collection_names", w}, {"min_threshold", "0"}})),
            (Steps{}));
  auto below = evaluate_rule("TensorVariance", dir.path(), {{"collection_names", w}, {"min_threshold", "1"}});
  ASSERT_EQ(trigger_steps(below), (Steps{1})) << seen(below);
  EXPECT_EQ(evidence(below, 0)["below_min"], true);
  EXPECT_EQ(trigger_steps(evaluate_rule("TensorVariance", dir.path(),
                                         {{"tensor_regex", "fc"}, {"min_threshold", "0.5"}, {"max_threshold", "5"}})),
            (Steps{1, 3}));
}

TEST(TensorTensorVariance, MinAboutZeroComparesTheMeanSquare) {
  // A normalisation scale of ones has no variance but has not collapsed; weights of about 1e-4 have.
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, -1, {{"norm.weight", {1, 1, 1, 1}}, {"fc.weight", {1e-4, -1e-4, 2e-4, -2e-4}}}},
      {1, Mode::Train, -1, {{"norm.weight", {1, 1, 1, 1}}, {"fc.weight", {0.5, -0.5, 1, -1}}}},
      {2, Mode::Train, -1, {{"norm.weight", {1, 1, 1, 1}}, {"fc.weight", {3, -3, 3, -3}}}},  // var 9
  });
  const std::map<std::string, std::string> calibrated{{"collection_names", "weights"},
                                                       {"min_threshold", "0.00001"},
                                                       {"max_threshold", "4"},
                                                       {"min_about_zero", "True"}};
  auto c = evaluate_rule("TensorVariance", dir.path(), calibrated);
  ASSERT_EQ(trigger_steps(c), (Steps{0, 2})) << seen(c);
  EXPECT_EQ(evidence(c, 0)["tensor"], "fc.weight");
  EXPECT_EQ(evidence(c, 0)["tensors_outside"], 1);
  EXPECT_NEAR(evidence(c, 0)["mean_square"].get<double>(), 2.5e-8, 1e-12);
  EXPECT_EQ(evidence(c, 1)["above_max"], true);
  auto variance = calibrated;
  variance["min_about_zero"] = "False";
  auto v = evaluate_rule("TensorVariance", dir.path(), variance);
  ASSERT_EQ(trigger_steps(v), (Steps{0, 1, 2})) << seen(v);  // the ones' zero variance fires
  EXPECT_EQ(evidence(v, 1)["tensor"], "norm.weight");
  EXPECT_FALSE(evidence(v, 1).contains("mean_square"));
}

// =============================================================================================
// WeightUpdateRatio

TEST(TensorWeightUpdateRatio, JudgesTrainStepsAgainstThePreviousTrainStep) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, 0, {{"fc.weight", {1, 1}}}},
      {1, Mode::Train, 1, {{"fc.weight", {1, 1}}}},      // unchanged: ratio 0 < 1e-8
      {2, Mode::Eval, 0, {{"fc.weight", {1.1, 1.1}}}},   // EVAL: neither judged nor a previous step
      {3, Mode::Train, 2, {{"fc.weight", {1.1, 1.1}}}},  // ratio ~0.1 against step 1
      {4, Mode::Train, 3, {{"fc.weight", {50, 50}}}},    // ratio ~44 > 10
  });
  auto s = evaluate_rule("WeightUpdateRatio", dir.path());
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_EQ(trigger_steps(s), (Steps{1, 4}));
  const auto& small = evidence(s, 0);
  EXPECT_EQ(small["tensor"], "fc.weight");
  EXPECT_EQ(small["mode"], "TRAIN");
  EXPECT_EQ(small["step"], 1);
  EXPECT_EQ(small["previous_step"], 0);
  EXPECT_DOUBLE_EQ(small["ratio"].get<double>(), 0.0);
  EXPECT_EQ(small["too_small"], true);
  const auto& large = evidence(s, 1);
  EXPECT_EQ(large["step"], 3);
  EXPECT_EQ(large["previous_step"], 2);
  EXPECT_EQ(large["too_large"], true);
  const double expected = std::sqrt(2.0) * (50.0 - double(1.1f)) / (std::sqrt(2.0) * double(1.1f) + 1e-9);
  EXPECT_NEAR(large["ratio"].get<double>(), expected, 1e-9);
  EXPECT_DOUBLE_EQ(large["large_threshold"].get<double>(), 10.0);
}

TEST(TensorWeightUpdateRatio, GlobalStepsWhenTheTrialHasNoTrainStep) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Global, 0, {{"fc.weight", {1, 1}}}},
      {1, Mode::Global, 1, {{"fc.weight", {1, 1}}}},
      {5, Mode::Global, 5, {{"fc.weight", {2, 2}}}},
  });
  auto s = evaluate_rule("WeightUpdateRatio", dir.path());
  ASSERT_EQ(trigger_steps(s), (Steps{1})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["mode"], "GLOBAL");
}

TEST(TensorWeightUpdateRatio, NumStepsBoundsHowFarBackThePreviousStepMayBe) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, 0, {{"fc.weight", {1, 1}}}},
      {5, Mode::Train, 5, {{"fc.weight", {1, 1}}}},      // unchanged since step 0
      {6, Mode::Train, 6, {{"fc.weight", {1.1, 1.1}}}},
  });
  EXPECT_EQ(trigger_steps(evaluate_rule("WeightUpdateRatio", dir.path())), (Steps{5}));
  EXPECT_EQ(trigger_steps(evaluate_rule("WeightUpdateRatio", dir.path(), {{"num_steps", "2"}})), (Steps{}));
  EXPECT_EQ(trigger_steps(evaluate_rule("WeightUpdateRatio", dir.path(), {{"num_steps", "5"}})), (Steps{5}));
  EXPECT_NE(rule_refusal("WeightUpdateRatio", dir.path(), {{"num_steps", "0"}}), "");
}

TEST(TensorWeightUpdateRatio, ThresholdsAreStrictAndNaNNeverFires) {
  ScratchDir dir;
  write_trial(dir.path(), {
      {0, Mode::Train, 0, {{"fc.weight", {3, 4}}}},
      {1, Mode::Train, 1, {{"fc.weight", {33, 44}}}},     // ‖(30, 40)‖ / ‖(3, 4)‖ = 50 / 5 = 10
      {2, Mode::Train, 2, {{"fc.weight", {kNaN, 44}}}},
      {3, Mode::Train, 3, {{"fc.weight", {kNaN, 44}}}},
  });
  const std::map<std::string, std::string> no_eps{{"epsilon", "0"}, {"small_threshold", "0"}};
  EXPECT_EQ(trigger_steps(evaluate_rule("WeightUpdateRatio", dir.path(), no_eps)), (Steps{}));
  auto p = no_eps;
  p["large_threshold"] = "9.999";
  auto s = evaluate_rule("WeightUpdateRatio", dir.path(), p);
  ASSERT_EQ(trigger_steps(s), (Steps{1})) << seen(s);
  EXPECT_DOUBLE_EQ(evidence(s, 0)["ratio"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(evidence(s, 0)["update_norm"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(evidence(s, 0)["previous_norm"].get<double>(), 5.0);
  // The ratio's lower bound is strict too: 10 is not below 10.
  EXPECT_EQ(trigger_steps(evaluate_rule("WeightUpdateRatio", dir.path(),
                                         {{"epsilon", "0"}, {"small_threshold", "10"}, {"large_threshold", "100"}})),
            (Steps{}));
  EXPECT_EQ(trigger_steps(evaluate_rule("WeightUpdateRatio", dir.path(),
                                         {{"epsilon", "0"}, {"small_threshold", "10.001"}, {"large_threshold", "100"}})),
            (Steps{1}));
}

TEST(TensorWeightUpdateRatio, OnlyTheWeightsCollectionPerWorker) {
  ScratchDir dir;
  write_trial(dir.path(), {{0, Mode::Train, 0, {{"fc.bias", {1}}, {"fc.weight", {1}}}},
                                  {1, Mode::Train, 1, {{"fc.bias", {1}}, {"fc.weight", {1.5}}}}}, {.num_workers = 2, .end_marker = false});
  write_trial(dir.path(), {{0, Mode::Train, 0, {{"fc.weight", {1}}}},
                                  {1, Mode::Train, 1, {{"fc.weight", {1}}}}}, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("WeightUpdateRatio", dir.path());
  ASSERT_EQ(trigger_steps(s), (Steps{1})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["worker"], "worker_1");
  EXPECT_EQ(evidence(s, 0)["tensors_outside"], 1);
}

// =============================================================================================
// SimilarAcrossRuns

TEST(TensorSimilarAcrossRuns, FiresWhereTheOtherRunDiffers) {
  ScratchDir base, other;
  write_trial(base.path(), {
      {0, Mode::Train, -1, {{"fc.weight", {1, 2}}, {"loss_output_0", {0.5}}}},
      {1, Mode::Train, -1, {{"fc.weight", {1, 2}}, {"loss_output_0", {0.5}}}},
      {2, Mode::Train, -1, {{"fc.weight", {1, 2}}, {"loss_output_0", {0.5}}}},
      {3, Mode::Train, -1, {{"fc.weight", {1, 2}}}},
      {4, Mode::Train, -1, {{"only_here", {1}}}},
  });
  write_trial(other.path(), {
      {0, Mode::Train, -1, {{"fc.weight", {1, 2}}, {"loss_output_0", {0.5}}}},
      {1, Mode::Train, -1, {{"fc.weight", {1.000001, 2}}, {"loss_output_0", {0.5}}}},  // within allclose
      {2, Mode::Train, -1, {{"fc.weight", {1, 2.5}}, {"loss_output_0", {0.5}}}},
      {3, Mode::Train, -1, {{"fc.weight", {1, 2, 3}}}},  // another shape
      {4, Mode::Train, -1, {{"elsewhere", {1}}}},
  });
  auto s = evaluate_rule("SimilarAcrossRuns", base.path(), {{"other_trial_0", other.path().string()}});
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_EQ(trigger_steps(s), (Steps{2, 3}));
  const auto& e = evidence(s, 0);
  EXPECT_EQ(e["tensor"], "fc.weight");
  EXPECT_EQ(e["other_trial"], "other_trial_0");
  EXPECT_EQ(e["worker"], "worker_0");
  EXPECT_EQ(e["shape"], nlohmann::json::array({2}));
  EXPECT_DOUBLE_EQ(e["max_abs_diff"].get<double>(), 0.5);
  EXPECT_EQ(evidence(s, 1)["other_shape"], nlohmann::json::array({3}));

  // The docs' comma-separated other_trials key works the same; a selection restricts the comparison.
  auto o = evaluate_rule("SimilarAcrossRuns", base.path(), {{"other_trials", other.path().string()}});
  EXPECT_EQ(trigger_steps(o), (Steps{2, 3})) << seen(o);
  auto loss = evaluate_rule("SimilarAcrossRuns", base.path(),
                              {{"other_trials", other.path().string()}, {"tensor_regex", "loss"}});
  EXPECT_EQ(loss.status, RuleEvaluationStatus::NoIssuesFound) << seen(loss);
  // Identical runs never fire.
  auto same = evaluate_rule("SimilarAcrossRuns", base.path(), {{"other_trial_0", base.path().string()}});
  EXPECT_EQ(same.status, RuleEvaluationStatus::NoIssuesFound) << seen(same);
}

TEST(TensorSimilarAcrossRuns, ComparesEveryOtherRunAndSkipsStepsTheyLack) {
  ScratchDir base, a, b;
  write_trial(base.path(), {{0, Mode::Train, -1, {{"w", {1}}}}, {1, Mode::Train, -1, {{"w", {1}}}},
                                   {2, Mode::Train, -1, {{"w", {1}}}}});
  write_trial(a.path(), {{0, Mode::Train, -1, {{"w", {1}}}}, {2, Mode::Train, -1, {{"w", {kNaN}}}}});
  write_trial(b.path(), {{0, Mode::Train, -1, {{"w", {1}}}}, {1, Mode::Train, -1, {{"w", {2}}}}});
  auto s = evaluate_rule("SimilarAcrossRuns", base.path(),
                           {{"other_trial_0", a.path().string()}, {"other_trial_1", b.path().string()}});
  ASSERT_EQ(trigger_steps(s), (Steps{1, 2})) << seen(s);
  EXPECT_EQ(evidence(s, 0)["other_trial"], "other_trial_1");
  EXPECT_EQ(evidence(s, 1)["other_trial"], "other_trial_0");  // NaN is never close (equal_nan False)
}

TEST(TensorSimilarAcrossRuns, ComparesStringTensorsAndNeedsAnotherRun) {
  ScratchDir base, other;
  write_trial(base.path(), {{0, Mode::Train, -1, {{"s", {}, {}, ElementType::String, {"a", "b"}}}},
                                   {1, Mode::Train, -1, {{"s", {}, {}, ElementType::String, {"a", "b"}}}}});
  write_trial(other.path(), {{0, Mode::Train, -1, {{"s", {}, {}, ElementType::String, {"a", "b"}}}},
                                    {1, Mode::Train, -1, {{"s", {}, {}, ElementType::String, {"a", "c"}}}}});
  auto s = evaluate_rule("SimilarAcrossRuns", base.path(), {{"other_trial_0", other.path().string()}});
  EXPECT_EQ(trigger_steps(s), (Steps{1})) << seen(s);
  auto missing = evaluate_rule("SimilarAcrossRuns", base.path());
  EXPECT_EQ(missing.status, RuleEvaluationStatus::Error) << seen(missing);
  EXPECT_NE(missing.details.find("Required argument other_trials"), std::string::npos) << missing.details;
  // The other rules read one trial: the host refuses other trials for them.
  EXPECT_NE(rule_refusal("ExplodingTensor", base.path(), {{"other_trial_0", other.path().string()}}), "");
}

TEST(TensorSimilarAcrossRuns, OnRealRunsWrittenBySmdebug) {
  const fs::path runs = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "pathologies";
  // The same seed and model: the stalled run only paused between steps, so every tensor agrees.
  auto same = evaluate_rule("SimilarAcrossRuns", runs / "healthy_mlp_s1",
                              {{"other_trial_0", (runs / "stalled_pause_5s_s1").string()}});
  EXPECT_EQ(same.status, RuleEvaluationStatus::NoIssuesFound) << seen(same);
  // Another training set: the losses differ from the first step on.
  auto other = evaluate_rule("SimilarAcrossRuns", runs / "healthy_mlp_s1",
                               {{"other_trial_0", (runs / "flat_loss_random_labels_s1").string()},
                                {"collection_names", "losses"}});
  ASSERT_EQ(other.status, RuleEvaluationStatus::IssuesFound) << seen(other);
  EXPECT_EQ(other.triggers.front().step, 0);
  EXPECT_EQ(evidence(other, 0)["tensor"], "CrossEntropyLoss_output_0");
}

// =============================================================================================
// The real smdebug fixtures: VanishingGradient (threshold 1e-7) and ExplodingTensor (defaults) fire at
// exactly the steps of the reference rules smdebug ran (rules.results.*Like.triggered_steps).

nlohmann::json tensor_expected(const std::string& fixture) {
  std::ifstream in(fs::path(VIGIL_SHARED_DIR) / "fixtures" / "smdebug-real" / (fixture + ".expected.json"));
  return nlohmann::json::parse(in);
}

class TensorRealFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorRealFixture, FiresAtExactlyTheReferenceSteps) {
  const std::string name = GetParam();
  const auto expected = tensor_expected(name);
  const fs::path trial = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "smdebug-real" / name;
  const auto& results = expected.at("rules").at("results");

  auto vg = evaluate_rule("VanishingGradient", trial, {{"threshold", "1e-7"}});
  EXPECT_EQ(trigger_steps(vg), results.at("VanishingGradientLike").at("triggered_steps").get<Steps>()) << seen(vg);
  EXPECT_EQ(vg.status, trigger_steps(vg).empty() ? RuleEvaluationStatus::NoIssuesFound : RuleEvaluationStatus::IssuesFound);

  auto et = evaluate_rule("ExplodingTensor", trial);
  EXPECT_EQ(trigger_steps(et), results.at("ExplodingTensorLike").at("triggered_steps").get<Steps>()) << seen(et);
  EXPECT_EQ(et.status, trigger_steps(et).empty() ? RuleEvaluationStatus::NoIssuesFound : RuleEvaluationStatus::IssuesFound);
}

INSTANTIATE_TEST_SUITE_P(SmdebugReal, TensorRealFixture,
                         ::testing::Values("loss_not_decreasing", "mixed_dtypes", "mlp_healthy", "vanishing_gradient"));

// The same lists written out, so a change in the fixture files cannot silently relax the test.
TEST(TensorRealFixtureLists, ExactTriggerSteps) {
  const fs::path root = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "smdebug-real";
  Steps even;
  for (int64_t s = 0; s <= 38; s += 2) even.push_back(s);
  const std::map<std::string, std::pair<Steps, Steps>> lists = {
      {"loss_not_decreasing", {{}, {}}},
      {"mixed_dtypes", {{}, {}}},  // int16 values smdebug could not read are finite: no hit
      {"mlp_healthy", {{}, {}}},   // reduction-only relu outputs and shape-only fc outputs included
      {"vanishing_gradient", {even, {}}},
  };
  for (const auto& [name, want] : lists) {
    auto vg = evaluate_rule("VanishingGradient", root / name, {{"threshold", "1e-7"}});
    EXPECT_EQ(trigger_steps(vg), want.first) << name << ": " << seen(vg);
    auto et = evaluate_rule("ExplodingTensor", root / name);
    EXPECT_EQ(trigger_steps(et), want.second) << name << ": " << seen(et);
  }
  // vanishing_gradient: the first trigger's evidence names the smallest mean |g| of step 0.
  auto vg = evaluate_rule("VanishingGradient", root / "vanishing_gradient", {{"threshold", "1e-7"}});
  ASSERT_FALSE(vg.triggers.empty());
  const auto& e = evidence(vg, 0);
  const auto reference = tensor_expected("vanishing_gradient")["rules"]["results"]["VanishingGradientLike"]["details"]["0"];
  EXPECT_EQ(e["tensors_below"].get<size_t>(), reference.size());
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& hit : reference) lowest = std::min(lowest, hit["mean_abs"].get<double>());
  EXPECT_NEAR(e["mean_abs"].get<double>(), lowest, lowest * 1e-6);
}

// =============================================================================================
// The labelled pathology runs: with the label's default parameters, every labelled trigger step (the
// pathology test checks only the first one).

TEST(TensorPathologyTriggerLists, EveryLabelledTriggerStep) {
  const fs::path runs = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "pathologies";
  const std::vector<std::string> rules = {"VanishingGradient", "ExplodingTensor", "AllZero",          "UnchangedTensor",
                                          "TensorVariance",    "WeightUpdateRatio"};
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(runs)) {
    if (!entry.path().string().ends_with(".label.json")) continue;
    std::ifstream in(entry.path());
    const auto label = nlohmann::json::parse(in);
    const std::string run = label["run"].get<std::string>();
    for (const auto& rule : rules) {
      if (!label["rules"].contains(rule)) continue;
      const auto& v = label["rules"][rule];
      if (!v.contains("trigger_steps") || !v["trigger_steps"].is_array()) continue;
      std::map<std::string, std::string> params;
      const auto label_params = v.value("params", nlohmann::json::object());
      for (const auto& [k, val] : label_params.items()) {
        if (val.is_null()) continue;
        if (val.is_array()) {
          std::string joined;
          for (const auto& item : val) joined += (joined.empty() ? "" : ",") + item.get<std::string>();
          params[k] = joined;
        } else if (val.is_boolean()) {
          params[k] = val.get<bool>() ? "True" : "False";
        } else if (val.is_number()) {
          params[k] = fmt::format("{}", val.get<double>());
        } else {
          params[k] = val.get<std::string>();
        }
      }
      auto s = evaluate_rule(rule, runs / run, params);
      EXPECT_EQ(trigger_steps(s), v["trigger_steps"].get<Steps>()) << run << " " << rule << ": " << seen(s);
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);
}

}  // namespace
}  // namespace vigil
