// The "data" family (ClassImbalance, Confusion, CheckInputImages, NLPSequenceRatio) through the real
// host: trials written with Vigil's writer, the plugin loaded from the built-in plugin folder, and the
// evaluator's statuses, trigger steps and evidence checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "test_support.h"

namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using namespace test;  // the suites' helpers: tests/support/test_support.h

std::vector<double> data_repeat(std::initializer_list<std::pair<double, int>> runs) {
  std::vector<double> out;
  for (const auto& [v, n] : runs) out.insert(out.end(), static_cast<size_t>(n), v);
  return out;
}

// Class-id vectors saved as int64 `labels` / `predictions` at EVAL step `step` (mode step = index).
TrialStep data_eval_step(int64_t step, int64_t mode_step, const std::vector<double>& labels,
                        const std::vector<double>& predictions) {
  return TrialStep{step,
                  Mode::Eval,
                  mode_step,
                  {{"labels", labels, {int64_t(labels.size())}, format::ElementType::Int64},
                   {"predictions", predictions, {int64_t(predictions.size())}, format::ElementType::Int64}}};
}

// A TRAIN step holding only an unrelated tensor.
TrialStep data_train_step(int64_t step, int64_t mode_step) {
  return TrialStep{step, Mode::Train, mode_step, {{"loss_output_0", {1.0}, {1}}}};
}

// Labels and class predictions realising a confusion matrix (rows: labels, columns: predictions).
std::pair<std::vector<double>, std::vector<double>> data_from_matrix(const std::vector<std::vector<int>>& matrix) {
  std::vector<double> y, y_hat;
  for (size_t label = 0; label < matrix.size(); ++label)
    for (size_t predicted = 0; predicted < matrix[label].size(); ++predicted)
      for (int k = 0; k < matrix[label][predicted]; ++k) {
        y.push_back(static_cast<double>(label));
        y_hat.push_back(static_cast<double>(predicted));
      }
  return {y, y_hat};
}

TrialStep data_eval_matrix(int64_t step, int64_t mode_step, const std::vector<std::vector<int>>& matrix) {
  const auto [y, y_hat] = data_from_matrix(matrix);
  return data_eval_step(step, mode_step, y, y_hat);
}

// int64 labels with float32 predictions of shape `shape` (probabilities or per-class scores).
TrialStep data_eval_scores(int64_t step, int64_t mode_step, const std::vector<double>& labels,
                           const std::vector<double>& scores, std::vector<int64_t> shape) {
  return TrialStep{step,
                   Mode::Eval,
                   mode_step,
                   {{"labels", labels, {int64_t(labels.size())}, format::ElementType::Int64},
                    {"predictions", scores, std::move(shape), format::ElementType::Float32}}};
}

// =============================================================================================
// ClassImbalance

TEST(DataClassImbalance, FiresOnImbalanceFromTheStepWhereSamplesAreReached) {
  ScratchDir dir;
  const auto labels = data_repeat({{0, 95}, {1, 5}});
  std::vector<TrialStep> steps;
  for (int64_t k = 0; k < 5; ++k) {
    steps.push_back(data_train_step(2 * k, k));               // skipped: no labels
    steps.push_back(data_eval_step(2 * k + 1, k, labels, labels));  // 100 labels each
  }
  write_trial(dir.path(), steps);
  auto s = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "250"}});
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  // 100, 200 labels: no verdict; 300 at step 5.
  EXPECT_EQ(trigger_steps(s), (std::vector<int64_t>{5, 7, 9}));
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["labels_seen"], 300);
  EXPECT_DOUBLE_EQ(e["imbalance_ratio"].get<double>(), 19.0);
  EXPECT_EQ(e["class_counts"]["0"], 285);
  EXPECT_EQ(e["class_counts"]["1"], 15);
  EXPECT_EQ(e["largest_class"], "0");
  EXPECT_EQ(e["smallest_class"], "1");
  EXPECT_EQ(e["imbalance_exceeded"], true);
  EXPECT_EQ(e["threshold_imbalance"], 10.0);
  EXPECT_EQ(e["label_tensors"], nlohmann::json::array({"labels"}));
  EXPECT_EQ(e["prediction_tensors"], nlohmann::json::array({"predictions"}));
  EXPECT_DOUBLE_EQ(e["worst_misprediction_rate"].get<double>(), 0.0);

  // With the default samples (500) the 500 labels are reached at the last step only.
  auto d = evaluate_rule("ClassImbalance", dir.path());
  EXPECT_EQ(trigger_steps(d), (std::vector<int64_t>{9})) << seen(d);
}

TEST(DataClassImbalance, RatioExactlyAtTheThresholdDoesNotFire) {
  ScratchDir dir;
  const auto labels = data_repeat({{0, 100}, {1, 10}});  // ratio exactly 10
  write_trial(dir.path(), {data_eval_step(0, 0, labels, labels)});
  auto s = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "110"}});
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  auto t = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "110"}, {"threshold_imbalance", "9.99"}});
  EXPECT_EQ(trigger_steps(t), (std::vector<int64_t>{0})) << seen(t);
  // Not enough labels: never judged.
  auto u = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "111"}, {"threshold_imbalance", "9.99"}});
  EXPECT_EQ(u.status, RuleEvaluationStatus::NoIssuesFound) << seen(u);
}

TEST(DataClassImbalance, MispredictionRateAboveTheThresholdFires) {
  ScratchDir dir;
  const auto labels = data_repeat({{0, 10}, {1, 10}, {2, 10}});
  // Class 1: 7 of 10 mispredicted (exactly 0.7); class 2: 8 of 10 at step 1.
  auto at_threshold = data_repeat({{0, 10}, {2, 7}, {1, 3}, {2, 10}});
  auto above = data_repeat({{0, 10}, {1, 10}, {0, 8}, {2, 2}});
  {
    ScratchDir one;
    write_trial(one.path(), {data_eval_step(0, 0, labels, at_threshold)});
    auto s = evaluate_rule("ClassImbalance", one.path(), {{"samples", "30"}});
    EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  }
  write_trial(dir.path(), {data_eval_step(0, 0, labels, at_threshold), data_eval_step(1, 1, labels, above)});
  auto s = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "30"}});
  // Cumulative at step 1: class 1 7/20, class 2 8/20: nothing above 0.7.
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  auto t = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "30"}, {"threshold_misprediction", "0.3"}});
  ASSERT_EQ(trigger_steps(t), (std::vector<int64_t>{0, 1})) << seen(t);
  const auto& e = t.triggers[1].evidence.at(0);
  EXPECT_EQ(e["imbalance_exceeded"], false);
  EXPECT_DOUBLE_EQ(e["misprediction_rate_above_threshold"]["1"].get<double>(), 0.35);
  EXPECT_DOUBLE_EQ(e["misprediction_rate_above_threshold"]["2"].get<double>(), 0.4);
  EXPECT_EQ(e["worst_misprediction_class"], "2");
}

TEST(DataClassImbalance, ArgmaxOverTheLastAxisOfScores) {
  ScratchDir dir;
  // 4 samples, 3 classes of scores; argmax = [2, 0, 1, 1]; labels [2, 0, 0, 0].
  TrialStep step{0, Mode::Eval, 0,
                {{"labels", {2, 0, 0, 0}, {4}, format::ElementType::Int64},
                 {"predictions", {0.1, 0.2, 0.7, 0.9, 0.05, 0.05, 0.3, 0.6, 0.1, 0.2, 0.5, 0.3}, {4, 3}}}};
  write_trial(dir.path(), {step});
  auto s = evaluate_rule("ClassImbalance", dir.path(),
                         {{"samples", "4"}, {"argmax", "True"}, {"threshold_misprediction", "0.6"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_DOUBLE_EQ(e["misprediction_rate_above_threshold"]["0"].get<double>(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(e["imbalance_ratio"].get<double>(), 3.0);
  EXPECT_EQ(e["misprediction_rate_above_threshold"].size(), 1u);

  // Without argmax the 12 scores do not pair with 4 labels: the rule fails and says why.
  auto f = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "4"}});
  EXPECT_EQ(f.status, RuleEvaluationStatus::Error);
  EXPECT_NE(f.details.find("4 labels but predictions holds 12 predictions"), std::string::npos) << f.details;
}

TEST(DataClassImbalance, NaNPredictionsAreMispredictionsAndNaNLabelsOneClass) {
  ScratchDir dir;
  TrialStep step{0, Mode::Eval, 0,
                {{"labels", {0, 0, 1, 1, kNaN, kNaN}, {6}, format::ElementType::Float32},
                 {"predictions", {0, 0, kNaN, kNaN, kNaN, 1}, {6}, format::ElementType::Float32}}};
  write_trial(dir.path(), {step});
  auto s = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "6"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["classes"], 3);
  EXPECT_EQ(e["class_counts"]["nan"], 2);
  EXPECT_DOUBLE_EQ(e["misprediction_rate_above_threshold"]["1"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e["misprediction_rate_above_threshold"]["nan"].get<double>(), 1.0);
  EXPECT_FALSE(e["misprediction_rate_above_threshold"].contains("0"));
}

TEST(DataClassImbalance, MissingTensorsSkipStepsAndRegexesSelectTensors) {
  ScratchDir dir;
  const auto labels = data_repeat({{0, 20}, {1, 1}});
  write_trial(dir.path(),
                   {data_train_step(0, 0),
                    // only labels: skipped
                    TrialStep{1, Mode::Eval, 0, {{"labels", labels, {21}, format::ElementType::Int64}}},
                    TrialStep{2, Mode::Eval, 1,
                             {{"val/y", labels, {21}, format::ElementType::Int64},
                              {"val/y_hat", labels, {21}, format::ElementType::Int64}}}});
  auto none = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "1"}});
  EXPECT_EQ(none.status, RuleEvaluationStatus::NoIssuesFound) << seen(none);
  auto s = evaluate_rule("ClassImbalance", dir.path(),
                         {{"samples", "1"}, {"labels_regex", "y$"}, {"predictions_regex", "y_hat"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{2})) << seen(s);
  EXPECT_EQ(s.triggers[0].evidence.at(0)["label_tensors"], nlohmann::json::array({"val/y"}));
  EXPECT_DOUBLE_EQ(s.triggers[0].evidence.at(0)["imbalance_ratio"].get<double>(), 20.0);
}

TEST(DataClassImbalance, WorkersArePooled) {
  ScratchDir dir;
  // Each worker alone is balanced enough for samples=40 only together.
  write_trial(dir.path(), {data_eval_step(0, 0, data_repeat({{0, 19}, {1, 1}}), data_repeat({{0, 20}}))}, {.num_workers = 2, .end_marker = false});
  write_trial(dir.path(), {data_eval_step(0, 0, data_repeat({{0, 19}, {1, 1}}), data_repeat({{0, 20}}))}, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("ClassImbalance", dir.path(), {{"samples", "40"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  EXPECT_EQ(s.triggers[0].evidence.at(0)["labels_seen"], 40);
  EXPECT_DOUBLE_EQ(s.triggers[0].evidence.at(0)["imbalance_ratio"].get<double>(), 19.0);
}

TEST(DataClassImbalance, InterpretPredictionsThresholdsProbabilitiesAndArgmaxesScores) {
  // 60 binary labels with probabilities on the right side of 0.5: SageMaker's reading compares the
  // probabilities with the labels and finds every label mispredicted.
  ScratchDir binary;
  std::vector<double> y, p;
  for (int i = 0; i < 60; ++i) {
    y.push_back(i % 2);
    p.push_back(i % 2 ? 0.9 - 0.001 * i : 0.1 + 0.001 * i);
  }
  write_trial(binary.path(), {data_eval_scores(0, 0, y, p, {60})});
  auto faithful = evaluate_rule("ClassImbalance", binary.path(), {{"samples", "60"}});
  ASSERT_EQ(trigger_steps(faithful), (std::vector<int64_t>{0})) << seen(faithful);
  EXPECT_DOUBLE_EQ(faithful.triggers[0].evidence.at(0)["worst_misprediction_rate"].get<double>(), 1.0);
  auto read = evaluate_rule("ClassImbalance", binary.path(), {{"samples", "60"}, {"interpret_predictions", "True"}});
  EXPECT_EQ(read.status, RuleEvaluationStatus::NoIssuesFound) << seen(read);

  // One wrong side of 0.5 for every label: all mispredicted once thresholded.
  ScratchDir flipped;
  std::vector<double> q;
  for (double v : p) q.push_back(1 - v);
  write_trial(flipped.path(), {data_eval_scores(0, 0, y, q, {60, 1})});
  auto wrong = evaluate_rule("ClassImbalance", flipped.path(), {{"samples", "60"}, {"interpret_predictions", "True"}});
  ASSERT_EQ(trigger_steps(wrong), (std::vector<int64_t>{0})) << seen(wrong);
  EXPECT_DOUBLE_EQ(wrong.triggers[0].evidence.at(0)["worst_misprediction_rate"].get<double>(), 1.0);

  // An (n, 3) probability matrix is argmax'd; class indices are used as they are.
  ScratchDir softprob;
  std::vector<double> labels{0, 1, 2, 2}, matrix{0.7, 0.2, 0.1, 0.1, 0.8, 0.1, 0.2, 0.2, 0.6, 0.3, 0.3, 0.4};
  write_trial(softprob.path(), {data_eval_scores(0, 0, labels, matrix, {4, 3}), data_eval_step(1, 1, labels, labels)});
  auto m = evaluate_rule("ClassImbalance", softprob.path(), {{"samples", "4"}, {"interpret_predictions", "True"}});
  EXPECT_EQ(m.status, RuleEvaluationStatus::NoIssuesFound) << seen(m);
  auto refused = evaluate_rule("ClassImbalance", softprob.path(), {{"samples", "4"}});
  EXPECT_EQ(refused.status, RuleEvaluationStatus::Error) << seen(refused);  // 4 labels, 12 predictions
}

TEST(DataClassImbalance, UnderrepresentedClassesOnlyAreCheckedForMispredictions) {
  // 45 + 45 + 10 labels (ratio 4.5: no imbalance). Class 1 is always called 0; class 2, with fewer
  // than half a balanced share (10 < 100 / 3 / 2), always called 0 too in the second trial.
  const auto labels = data_repeat({{0, 45}, {1, 45}, {2, 10}});
  ScratchDir common;
  write_trial(common.path(), {data_eval_step(0, 0, labels, data_repeat({{0, 90}, {2, 10}}))});
  auto all = evaluate_rule("ClassImbalance", common.path(), {{"samples", "100"}});
  ASSERT_EQ(trigger_steps(all), (std::vector<int64_t>{0})) << seen(all);
  auto under = evaluate_rule("ClassImbalance", common.path(),
                             {{"samples", "100"}, {"misprediction_classes", "underrepresented"}});
  EXPECT_EQ(under.status, RuleEvaluationStatus::NoIssuesFound) << seen(under);

  ScratchDir minority;
  write_trial(minority.path(), {data_eval_step(0, 0, labels, data_repeat({{0, 45}, {1, 45}, {0, 10}}))});
  auto m = evaluate_rule("ClassImbalance", minority.path(),
                         {{"samples", "100"}, {"misprediction_classes", "underrepresented"}});
  ASSERT_EQ(trigger_steps(m), (std::vector<int64_t>{0})) << seen(m);
  const auto& e = m.triggers[0].evidence.at(0);
  EXPECT_EQ(e["classes_checked_for_misprediction"], 1);
  EXPECT_DOUBLE_EQ(e["misprediction_rate_above_threshold"]["2"].get<double>(), 1.0);
  EXPECT_EQ(e["imbalance_exceeded"], false);
  EXPECT_NE(rule_refusal("ClassImbalance", minority.path(), {{"misprediction_classes", "minority"}}), "");
}

TEST(DataClassImbalance, ConfidenceNeedsTheLowerBoundAboveTheThreshold) {
  // Class 1: 4 of 5 mispredicted (0.8 > 0.7, but the 95 % Wilson lower bound is about 0.38).
  ScratchDir few;
  write_trial(few.path(),
              {data_eval_step(0, 0, data_repeat({{0, 95}, {1, 5}}), data_repeat({{0, 95}, {0, 4}, {1, 1}}))});
  const std::map<std::string, std::string> judged{{"samples", "100"}, {"threshold_imbalance", "100"}};
  EXPECT_EQ(trigger_steps(evaluate_rule("ClassImbalance", few.path(), judged)), (std::vector<int64_t>{0}));
  auto bounded = judged;
  bounded["confidence"] = "0.95";
  auto b = evaluate_rule("ClassImbalance", few.path(), bounded);
  EXPECT_EQ(b.status, RuleEvaluationStatus::NoIssuesFound) << seen(b);
  // 90 of 100 mispredicted: the lower bound (about 0.84) is above 0.7.
  ScratchDir many;
  write_trial(many.path(), {data_eval_step(0, 0, data_repeat({{0, 100}, {1, 100}}),
                                           data_repeat({{0, 100}, {0, 90}, {1, 10}}))});
  auto c = evaluate_rule("ClassImbalance", many.path(), bounded);
  ASSERT_EQ(trigger_steps(c), (std::vector<int64_t>{0})) << seen(c);
  EXPECT_DOUBLE_EQ(c.triggers[0].evidence.at(0)["confidence"].get<double>(), 0.95);
  EXPECT_NE(rule_refusal("ClassImbalance", many.path(), {{"confidence", "1"}}), "");
}

// =============================================================================================
// Confusion

TEST(DataConfusion, SpecTestVectors) {
  ScratchDir dir;
  std::vector<double> y{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto y_hat = y;
  y_hat[4] = 7;
  write_trial(dir.path(), {data_eval_step(0, 0, y, y_hat)});
  auto s = evaluate_rule("Confusion", dir.path(), {{"category_no", "10"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["category_no"], 10);
  EXPECT_EQ(e["category_no_inferred"], false);
  EXPECT_EQ(e["violating_columns"], 1);
  EXPECT_EQ(e["columns"][0]["predicted_class"], 7);
  EXPECT_EQ(e["columns"][0]["column_total"], 2);
  EXPECT_DOUBLE_EQ(e["columns"][0]["diagonal_share"].get<double>(), 0.5);
  EXPECT_EQ(e["columns"][0]["max_off_diagonal_label"], 4);
  EXPECT_EQ(e["columns"][0]["below_min_diag"], true);
  EXPECT_EQ(e["columns"][0]["above_max_off_diag"], true);
  EXPECT_DOUBLE_EQ(e["accuracy"].get<double>(), 0.9);

  // Test 3: min_diag 0 leaves the off-diagonal check alone.
  auto t = evaluate_rule("Confusion", dir.path(), {{"min_diag", "0"}, {"max_off_diag", "0.01"}});
  ASSERT_EQ(trigger_steps(t), (std::vector<int64_t>{0})) << seen(t);
  EXPECT_EQ(t.triggers[0].evidence.at(0)["columns"][0]["below_min_diag"], false);
  EXPECT_EQ(t.triggers[0].evidence.at(0)["category_no_inferred"], true);

  // Test 4: identical tensors named labels and predictions, defaults: no trigger.
  ScratchDir same;
  write_trial(same.path(), {data_eval_step(0, 0, y, y)});
  auto u = evaluate_rule("Confusion", same.path());
  EXPECT_EQ(u.status, RuleEvaluationStatus::NoIssuesFound) << seen(u);
}

TEST(DataConfusion, ColumnSharesExactlyAtTheBoundsDoNotFire) {
  ScratchDir dir;
  // Column 0: 9 correct, 1 labelled 1 (diagonal 0.9, off-diagonal 0.1); column 1: 10 correct.
  auto y = data_repeat({{0, 9}, {1, 11}});
  auto y_hat = data_repeat({{0, 10}, {1, 10}});
  write_trial(dir.path(), {data_eval_step(0, 0, y, y_hat)});
  auto s = evaluate_rule("Confusion", dir.path());
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  auto d = evaluate_rule("Confusion", dir.path(), {{"min_diag", "0.91"}});
  ASSERT_EQ(trigger_steps(d), (std::vector<int64_t>{0})) << seen(d);
  EXPECT_EQ(d.triggers[0].evidence.at(0)["columns"][0]["above_max_off_diag"], false);
  auto o = evaluate_rule("Confusion", dir.path(), {{"max_off_diag", "0.09"}});
  ASSERT_EQ(trigger_steps(o), (std::vector<int64_t>{0})) << seen(o);
  EXPECT_EQ(o.triggers[0].evidence.at(0)["columns"][0]["below_min_diag"], false);
  EXPECT_EQ(o.triggers[0].evidence.at(0)["violating_columns"], 1);
}

TEST(DataConfusion, EachStepIsJudgedOnItsOwnAndTrainStepsAreSkipped) {
  ScratchDir dir;
  std::vector<double> y{0, 1, 2, 3};
  write_trial(dir.path(), {data_train_step(0, 0), data_eval_step(1, 0, y, {0, 1, 2, 2}),
                                data_train_step(2, 1), data_eval_step(3, 1, y, y)});
  auto s = evaluate_rule("Confusion", dir.path());
  EXPECT_EQ(trigger_steps(s), (std::vector<int64_t>{1})) << seen(s);
}

TEST(DataConfusion, CollectionsWhenNoTensorHasTheDefaultNames) {
  ScratchDir dir;
  std::vector<double> y{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto bad = y;
  bad[0] = 1;
  format::CollectionConfig labels{.name = "labels", .include_regex = {"^y$"}};
  format::CollectionConfig preds{.name = "preds", .include_regex = {"^y_hat$"}};
  write_trial(dir.path(),
                   {TrialStep{0, Mode::Eval, 0, {{"y", y, {10}, format::ElementType::Int64}, {"y_hat", y, {10}, format::ElementType::Int64}}},
                    TrialStep{1, Mode::Eval, 1, {{"y", y, {10}, format::ElementType::Int64}, {"y_hat", bad, {10}, format::ElementType::Int64}}}}, {.collections = {labels, preds}});
  auto s = evaluate_rule("Confusion", dir.path(), {{"predictions_collection", "preds"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{1})) << seen(s);
  EXPECT_EQ(s.triggers[0].evidence.at(0)["label_tensors"], nlohmann::json::array({"y"}));
  EXPECT_EQ(s.triggers[0].evidence.at(0)["prediction_tensors"], nlohmann::json::array({"y_hat"}));
  // Without the right collection there is nothing to read: every step is skipped.
  auto n = evaluate_rule("Confusion", dir.path());
  EXPECT_EQ(n.status, RuleEvaluationStatus::NoIssuesFound) << seen(n);
}

TEST(DataConfusion, ValuesThatAreNotClassIndicesFailTheRule) {
  {
    ScratchDir dir;
    TrialStep step{0, Mode::Eval, 0,
                  {{"labels", {0, 1, 2}, {3}, format::ElementType::Float32},
                   {"predictions", {0, kNaN, 2}, {3}, format::ElementType::Float32}}};
    write_trial(dir.path(), {step});
    auto s = evaluate_rule("Confusion", dir.path());
    EXPECT_EQ(s.status, RuleEvaluationStatus::Error);
    EXPECT_NE(s.details.find("predictions holds nan at index 1"), std::string::npos) << s.details;
  }
  {
    ScratchDir dir;
    write_trial(dir.path(), {data_eval_step(0, 0, {0, 1, 5}, {0, 1, 5})});
    auto s = evaluate_rule("Confusion", dir.path(), {{"category_no", "5"}});
    EXPECT_EQ(s.status, RuleEvaluationStatus::Error);
    EXPECT_NE(s.details.find("labels holds 5 at index 2, which is not a class index in [0, 5)"), std::string::npos)
        << s.details;
    auto inferred = evaluate_rule("Confusion", dir.path());
    EXPECT_EQ(inferred.status, RuleEvaluationStatus::NoIssuesFound) << seen(inferred);
  }
}

// The calibrated profile's Confusion (docs/rules.md), given explicitly.
const std::map<std::string, std::string> kCalibratedConfusion{{"interpret_predictions", "True"},
                                                              {"criterion", "pair_informedness"},
                                                              {"window", "8"},
                                                              {"min_support", "30"},
                                                              {"confidence", "0.95"}};

TEST(DataConfusion, PairInformednessFiresOnIndistinguishableClassesNotOnSpreadErrors) {
  // A healthy 4-class classifier at 85 % accuracy, its errors spread over the other classes: SageMaker's
  // column shares fire (precision 0.85 < 0.9), the pairs are all well told apart.
  const std::vector<std::vector<int>> healthy{{17, 1, 1, 1}, {1, 17, 1, 1}, {1, 1, 17, 1}, {1, 1, 1, 17}};
  // Classes 1 and 2 indistinguishable: each is called 1 or 2 at random; 0 and 3 are recognised.
  const std::vector<std::vector<int>> confused{{19, 0, 0, 1}, {0, 10, 10, 0}, {0, 9, 11, 0}, {1, 0, 0, 19}};
  ScratchDir good, bad;
  std::vector<TrialStep> good_steps, bad_steps;
  for (int64_t k = 0; k < 8; ++k) {
    good_steps.push_back(data_eval_matrix(k, k, healthy));
    bad_steps.push_back(data_eval_matrix(k, k, confused));
  }
  write_trial(good.path(), good_steps);
  write_trial(bad.path(), bad_steps);
  EXPECT_EQ(trigger_steps(evaluate_rule("Confusion", good.path())).size(), 8u);
  auto g = evaluate_rule("Confusion", good.path(), kCalibratedConfusion);
  EXPECT_EQ(g.status, RuleEvaluationStatus::NoIssuesFound) << seen(g);

  auto b = evaluate_rule("Confusion", bad.path(), kCalibratedConfusion);
  ASSERT_EQ(trigger_steps(b), (std::vector<int64_t>{7})) << seen(b);  // the first full window of 8
  const auto& e = b.triggers[0].evidence.at(0);
  EXPECT_EQ(e["confused_pairs"], 1);
  EXPECT_EQ(e["pairs"], 8 * 80);
  EXPECT_EQ(e["window"], 8);
  const auto& pair = e["pairs_confused"][0];
  EXPECT_EQ(pair["classes"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(pair["labels_of_first"], 8 * 20);
  EXPECT_EQ(pair["second_called_first"], 8 * 9);
  EXPECT_NEAR(pair["informedness"].get<double>(), 0.5 - 0.45, 1e-12);
  EXPECT_LT(pair["informedness_upper_bound"].get<double>(), 0.25);
  EXPECT_NE(rule_refusal("Confusion", bad.path(), {{"criterion", "rows"}}), "");
}

TEST(DataConfusion, WindowPoolsEvaluationsAndMinSupportWaitsForEnoughLabels) {
  // Classes 0 and 1 confused at the first three evaluations only (10 labels each), then told apart.
  const std::vector<std::vector<int>> mixed{{5, 5}, {5, 5}}, apart{{10, 0}, {0, 10}};
  ScratchDir dir;
  std::vector<TrialStep> steps;
  for (int64_t k = 0; k < 9; ++k) steps.push_back(data_eval_matrix(k, k, k < 3 ? mixed : apart));
  write_trial(dir.path(), steps);
  const std::map<std::string, std::string> pairs{{"criterion", "pair_informedness"}, {"min_support", "30"}};
  // One evaluation at a time: 10 labels per class never reach min_support 30.
  auto single = evaluate_rule("Confusion", dir.path(), pairs);
  EXPECT_EQ(single.status, RuleEvaluationStatus::NoIssuesFound) << seen(single);
  auto low = pairs;
  low["min_support"] = "10";
  EXPECT_EQ(trigger_steps(evaluate_rule("Confusion", dir.path(), low)), (std::vector<int64_t>{0, 1, 2}));
  // Three pooled: judged from step 2 (informedness 0); at step 3 one of the three pooled evaluations
  // tells the classes apart, which lifts the informedness to 1/3, above 0.25.
  auto w = pairs;
  w["window"] = "3";
  EXPECT_EQ(trigger_steps(evaluate_rule("Confusion", dir.path(), w)), (std::vector<int64_t>{2}));
  EXPECT_NE(rule_refusal("Confusion", dir.path(), {{"window", "0"}}), "");
  EXPECT_NE(rule_refusal("Confusion", dir.path(), {{"min_support", "-1"}}), "");
}

TEST(DataConfusion, MinSupportAndConfidenceOnColumnShares) {
  // Column 1: 8 of 10 right (0.8 < 0.9): fires as a point estimate, not with a 95 % bound (the upper
  // bound is about 0.93) nor below min_support; column 0 of 90 predictions is right.
  ScratchDir small;
  write_trial(small.path(), {data_eval_matrix(0, 0, {{90, 2}, {0, 8}})});
  EXPECT_EQ(trigger_steps(evaluate_rule("Confusion", small.path())), (std::vector<int64_t>{0}));
  auto bounded = evaluate_rule("Confusion", small.path(), {{"confidence", "0.95"}});
  EXPECT_EQ(bounded.status, RuleEvaluationStatus::NoIssuesFound) << seen(bounded);
  auto supported = evaluate_rule("Confusion", small.path(), {{"min_support", "11"}});
  EXPECT_EQ(supported.status, RuleEvaluationStatus::NoIssuesFound) << seen(supported);
  // 80 of 100: the upper bound (about 0.86) is below 0.9.
  ScratchDir large;
  write_trial(large.path(), {data_eval_matrix(0, 0, {{100, 20}, {0, 80}})});
  auto l = evaluate_rule("Confusion", large.path(), {{"confidence", "0.95"}, {"min_support", "11"}});
  ASSERT_EQ(trigger_steps(l), (std::vector<int64_t>{0})) << seen(l);
  EXPECT_EQ(l.triggers[0].evidence.at(0)["columns"][0]["predicted_class"], 1);
}

TEST(DataConfusion, InterpretPredictionsReadsProbabilities) {
  // binary:logistic's probabilities are no class indices: refused by SageMaker's reading, thresholded
  // at 0.5 with interpret_predictions.
  ScratchDir dir;
  std::vector<double> y, p;
  for (int i = 0; i < 40; ++i) {
    y.push_back(i % 2);
    p.push_back(i % 2 ? 0.75 : 0.25);
  }
  write_trial(dir.path(), {data_eval_scores(0, 0, y, p, {40})});
  auto faithful = evaluate_rule("Confusion", dir.path());
  EXPECT_EQ(faithful.status, RuleEvaluationStatus::Error) << seen(faithful);
  EXPECT_NE(faithful.details.find("not a class index"), std::string::npos) << faithful.details;
  auto read = evaluate_rule("Confusion", dir.path(), {{"interpret_predictions", "True"}});
  EXPECT_EQ(read.status, RuleEvaluationStatus::NoIssuesFound) << seen(read);
  // Scores of two columns, argmax'd: every label gets the other class.
  ScratchDir scores;
  std::vector<double> s;
  for (int i = 0; i < 40; ++i) {
    s.push_back(i % 2 ? 2.0 : -1.0);
    s.push_back(i % 2 ? -2.0 : 1.0);
  }
  write_trial(scores.path(), {data_eval_scores(0, 0, y, s, {40, 2})});
  auto wrong = evaluate_rule("Confusion", scores.path(), {{"interpret_predictions", "True"}});
  ASSERT_EQ(trigger_steps(wrong), (std::vector<int64_t>{0})) << seen(wrong);
  EXPECT_DOUBLE_EQ(wrong.triggers[0].evidence.at(0)["accuracy"].get<double>(), 0.0);
}

// =============================================================================================
// CheckInputImages

// A batch of `n` NCHW images (3 channels of 2x2) whose channel c holds means[c].
TensorSave data_images(const std::string& name, int64_t n, const std::vector<double>& means) {
  TensorSave s{name, {}, {n, 3, 2, 2}};
  for (int64_t i = 0; i < n; ++i)
    for (double m : means)
      for (int k = 0; k < 4; ++k) s.values.push_back(m);
  return s;
}

TEST(DataCheckInputImages, FiresOnceEnoughImagesWereSeen) {
  ScratchDir dir;
  std::vector<TrialStep> steps;
  for (int64_t k = 0; k < 4; ++k) {
    steps.push_back(TrialStep{2 * k, Mode::Train, k, {data_images("net_hybridsequential0_input_0", 4, {0, 0.5, 0})}});
    steps.push_back(TrialStep{2 * k + 1, Mode::Eval, k, {{"loss", {1}, {1}}}});  // skipped
  }
  write_trial(dir.path(), steps);
  auto s = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "10"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{4, 6})) << seen(s);  // 12 images at step 4
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["tensor"], "net_hybridsequential0_input_0");
  EXPECT_EQ(e["samples_seen"], 12);
  EXPECT_EQ(e["channel_means"], nlohmann::json::array({0.0, 0.5, 0.0}));
  EXPECT_EQ(e["channels_above_threshold"], nlohmann::json::array({1}));
  EXPECT_EQ(e["threshold_mean"], 0.2);
  // Defaults: 500 images are never reached.
  auto d = evaluate_rule("CheckInputImages", dir.path());
  EXPECT_EQ(d.status, RuleEvaluationStatus::NoIssuesFound) << seen(d);
}

TEST(DataCheckInputImages, MeansAreCumulativeAndTheBoundIsStrict) {
  ScratchDir dir;
  // Channel 0 means: 0.25 on every image; channel 2: -0.75 then +0.25 (cumulative -0.25).
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0, {data_images("hybridsequential0_input_0", 2, {0.25, 0, -0.75})}},
                                TrialStep{1, Mode::Train, 1, {data_images("hybridsequential0_input_0", 2, {0.25, 0, 0.25})}}});
  auto s = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "2"}, {"threshold_mean", "0.25"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  EXPECT_EQ(s.triggers[0].evidence.at(0)["channels_above_threshold"], nlohmann::json::array({2}));
  auto t = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "4"}, {"threshold_mean", "0.25"}});
  EXPECT_EQ(t.status, RuleEvaluationStatus::NoIssuesFound) << seen(t);  // |-0.25| and 0.25 are not > 0.25
  auto u = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "4"}, {"threshold_mean", "0.24"}});
  ASSERT_EQ(trigger_steps(u), (std::vector<int64_t>{1})) << seen(u);
  EXPECT_EQ(u.triggers[0].evidence.at(0)["channel_means"], nlohmann::json::array({0.25, 0.0, -0.25}));
}

TEST(DataCheckInputImages, ChannelsLastWithANegativeAxis) {
  ScratchDir dir;
  // NHWC: 2 images of 1x2 pixels with 3 channels; channel 2 holds 1.0.
  TensorSave nhwc{"hybridsequential0_input_0", {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1}, {2, 1, 2, 3}};
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0, {nhwc}}});
  auto s = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "2"}, {"channel", "-1"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  EXPECT_EQ(s.triggers[0].evidence.at(0)["channel_means"], nlohmann::json::array({0.0, 0.0, 1.0}));
  // Channel 1 of NHWC is the height (1): its mean 1/3 fires as well, a misconfiguration the user sees.
  auto h = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "2"}});
  ASSERT_EQ(trigger_steps(h), (std::vector<int64_t>{0})) << seen(h);
  EXPECT_EQ(h.triggers[0].evidence.at(0)["channel_means"].size(), 1u);
  // Axis 0 (the batch) or beyond the tensor: an error.
  auto bad = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "2"}, {"channel", "4"}});
  EXPECT_EQ(bad.status, RuleEvaluationStatus::Error);
  EXPECT_NE(bad.details.find("channel=4 is not one of its non-batch axes"), std::string::npos) << bad.details;
}

TEST(DataCheckInputImages, NaNNeverFiresInfDoes) {
  ScratchDir dir;
  auto nan_images = data_images("hybridsequential0_input_0", 2, {kNaN, 0, 0});
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0, {nan_images}}});
  auto s = evaluate_rule("CheckInputImages", dir.path(), {{"threshold_samples", "1"}});
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  ScratchDir inf;
  write_trial(inf.path(), {TrialStep{0, Mode::Train, 0, {data_images("hybridsequential0_input_0", 2, {0, -kInf, 0})}}});
  auto t = evaluate_rule("CheckInputImages", inf.path(), {{"threshold_samples", "1"}});
  ASSERT_EQ(trigger_steps(t), (std::vector<int64_t>{0})) << seen(t);
  EXPECT_EQ(t.triggers[0].evidence.at(0)["channels_above_threshold"], nlohmann::json::array({1}));
}

TEST(DataCheckInputImages, NoMatchingTensorIsNoData) {
  ScratchDir dir;
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0, {data_images("other_input_0", 600, {1, 1, 1})}}});
  auto s = evaluate_rule("CheckInputImages", dir.path());
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  auto r = evaluate_rule("CheckInputImages", dir.path(), {{"regex", "other_input"}});
  EXPECT_EQ(trigger_steps(r), (std::vector<int64_t>{0})) << seen(r);
}

// =============================================================================================
// NLPSequenceRatio

TensorSave data_tokens(const std::string& name, std::vector<double> ids, format::ElementType dtype = format::ElementType::Int64) {
  const auto n = static_cast<int64_t>(ids.size());
  return TensorSave{name, std::move(ids), {2, n / 2}, dtype};
}

TEST(DataNLPSequenceRatio, FiresAboveTheThresholdNotAtIt) {
  ScratchDir dir;
  std::vector<double> half = data_repeat({{0, 10}, {5, 10}});   // 50 %
  std::vector<double> more = data_repeat({{0, 11}, {5, 9}});    // 55 %
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0, {data_tokens("model.embedding0_input_0", half)}},
                                TrialStep{1, Mode::Eval, 0, {{"loss", {1}, {1}}}},
                                TrialStep{2, Mode::Train, 1, {data_tokens("model.embedding0_input_0", more)}}});
  auto s = evaluate_rule("NLPSequenceRatio", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{2})) << seen(s);
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["tensor"], "model.embedding0_input_0");
  EXPECT_EQ(e["worker"], "worker_0");
  EXPECT_EQ(e["token_value"], 0.0);
  EXPECT_EQ(e["token_count"], 11);
  EXPECT_EQ(e["elements"], 20);
  EXPECT_DOUBLE_EQ(e["percent"].get<double>(), 55.0);
  EXPECT_EQ(e["threshold_percent"], 50.0);
}

TEST(DataNLPSequenceRatio, SeveralTokensPairedWithTheirThresholds) {
  ScratchDir dir;
  std::vector<double> ids = data_repeat({{0, 4}, {1, 6}, {7, 10}});  // 20 %, 30 %
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0, {data_tokens("embedding0_input_0", ids)}}});
  auto s = evaluate_rule("NLPSequenceRatio", dir.path(),
                         {{"token_values", "0, 1"}, {"token_thresholds_percent", "10, 30"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  ASSERT_EQ(s.triggers[0].evidence.size(), 1u);  // token 1 is exactly at 30 %
  EXPECT_EQ(s.triggers[0].evidence[0]["token_value"], 0.0);
  // The 2020 docs' "50,50" for one token: the extra threshold is ignored.
  auto old = evaluate_rule("NLPSequenceRatio", dir.path(), {{"token_thresholds_percent", "50,50"}});
  EXPECT_EQ(old.status, RuleEvaluationStatus::NoIssuesFound) << seen(old);
  // A token without a threshold is refused when the rule is created.
  auto bad = evaluate_rule("NLPSequenceRatio", dir.path(), {{"token_values", "0,1"}});
  EXPECT_EQ(bad.status, RuleEvaluationStatus::Error);
  EXPECT_NE(bad.details.find("one threshold per token value"), std::string::npos) << bad.details;
  auto pct = evaluate_rule("NLPSequenceRatio", dir.path(), {{"token_thresholds_percent", "150"}});
  EXPECT_EQ(pct.status, RuleEvaluationStatus::Error);
}

TEST(DataNLPSequenceRatio, NaNElementsNeverMatchAndWorkersAreJudgedApart) {
  ScratchDir dir;
  write_trial(dir.path(),
                   {TrialStep{0, Mode::Train, 0, {data_tokens("embedding0_input_0", data_repeat({{kNaN, 8}, {3, 2}}), format::ElementType::Float32)}}}, {.num_workers = 2, .end_marker = false});
  write_trial(dir.path(),
                   {TrialStep{0, Mode::Train, 0, {data_tokens("embedding0_input_0", data_repeat({{0, 8}, {3, 2}}))}}}, {.worker = "worker_1", .num_workers = 2});
  auto nan_token = evaluate_rule("NLPSequenceRatio", dir.path(), {{"token_values", "nan"}});
  EXPECT_EQ(nan_token.status, RuleEvaluationStatus::Error);  // "nan" is not a token value
  auto s = evaluate_rule("NLPSequenceRatio", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  ASSERT_EQ(s.triggers[0].evidence.size(), 1u);
  EXPECT_EQ(s.triggers[0].evidence[0]["worker"], "worker_1");
  EXPECT_DOUBLE_EQ(s.triggers[0].evidence[0]["percent"].get<double>(), 80.0);
}

TEST(DataNLPSequenceRatio, SeveralRegexesAndNoMatchIsNoData) {
  ScratchDir dir;
  write_trial(dir.path(), {TrialStep{0, Mode::Train, 0,
                                         {data_tokens("enc_input_0", data_repeat({{0, 10}})),
                                          data_tokens("dec_input_0", data_repeat({{0, 2}, {1, 8}}))}}});
  auto none = evaluate_rule("NLPSequenceRatio", dir.path());
  EXPECT_EQ(none.status, RuleEvaluationStatus::NoIssuesFound) << seen(none);
  auto s = evaluate_rule("NLPSequenceRatio", dir.path(), {{"tensor_regex", "^enc_,^dec_"}, {"token_thresholds_percent", "15"}});
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  ASSERT_EQ(s.triggers[0].evidence.size(), 2u);
  EXPECT_EQ(s.triggers[0].evidence[0]["tensor"], "dec_input_0");  // name order
  EXPECT_EQ(s.triggers[0].evidence[1]["tensor"], "enc_input_0");
}

// =============================================================================================
// The labelled pathology runs (shared/fixtures/pathologies): beyond pathology_test's verdicts, every
// trigger step and the evidence's numbers match the label's.

fs::path data_run(const std::string& name) { return fs::path(VIGIL_SHARED_DIR) / "fixtures" / "pathologies" / name; }

TEST(DataPathologies, ClassImbalanceEvidenceMatchesTheLabel) {
  auto s = evaluate_rule("ClassImbalance", data_run("class_imbalance_severe_s1"));
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{17, 20, 23, 26, 29, 32, 35, 38, 41, 44})) << seen(s);
  const auto& e = s.triggers.back().evidence.at(0);
  EXPECT_EQ(e["labels_seen"], 1440);
  EXPECT_EQ(e["class_counts"], nlohmann::json({{"0", 1335}, {"1", 90}, {"2", 15}}));
  EXPECT_DOUBLE_EQ(e["imbalance_ratio"].get<double>(), 89.0);
  EXPECT_EQ(e["worst_misprediction_class"], "2");
  EXPECT_NEAR(e["worst_misprediction_rate"].get<double>(), 0.933, 5e-4);
  auto healthy = evaluate_rule("ClassImbalance", data_run("healthy_mlp_s1"));
  EXPECT_EQ(healthy.status, RuleEvaluationStatus::NoIssuesFound) << seen(healthy);
}

TEST(DataPathologies, ConfusionDefaultsFireOnAHealthyRunAsLabelled) {
  // The faithful misfire: with min_diag 0.9 the early EVAL steps of a healthy run fire.
  auto s = evaluate_rule("Confusion", data_run("healthy_mlp_s1"));
  EXPECT_EQ(trigger_steps(s), (std::vector<int64_t>{2, 5, 8, 11, 14})) << seen(s);
  auto c = evaluate_rule("Confusion", data_run("class_imbalance_severe_s1"));
  EXPECT_EQ(trigger_steps(c), (std::vector<int64_t>{11, 14, 17, 38, 41})) << seen(c);
}

TEST(DataPathologies, CheckInputImagesEvidenceMatchesTheLabel) {
  auto s = evaluate_rule("CheckInputImages", data_run("unnormalized_images_unit_s1"));
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{22, 24, 25, 27, 28, 30, 31, 33, 34, 36, 37, 39, 40, 42, 43}))
      << seen(s);
  const auto& e = s.triggers.back().evidence.at(0);
  EXPECT_EQ(e["samples_seen"], 960);
  ASSERT_EQ(e["channel_means"].size(), 3u);
  EXPECT_NEAR(e["channel_means"][0].get<double>(), 0.501, 5e-4);
  EXPECT_NEAR(e["channel_means"][1].get<double>(), 0.5, 5e-4);
  EXPECT_NEAR(e["channel_means"][2].get<double>(), 0.5, 5e-4);
}

TEST(DataPathologies, NLPSequenceRatioEvidenceMatchesTheLabel) {
  auto s = evaluate_rule("NLPSequenceRatio", data_run("nlp_padding_dominated_s1"));
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42}))
      << seen(s);
  double max_percent = 0;
  int64_t max_step = -1;
  for (const auto& t : s.triggers)
    for (const auto& e : t.evidence)
      if (e["percent"].get<double>() > max_percent) max_percent = e["percent"].get<double>(), max_step = t.step;
  EXPECT_NEAR(max_percent, 80.08, 5e-3);
  EXPECT_EQ(max_step, 24);
}

TEST(DataRules, DescriptorsCarryTheDocumentedParameters) {
  const auto& registry = test::builtin_registry();
  for (const char* name : {"ClassImbalance", "Confusion", "CheckInputImages", "NLPSequenceRatio"}) {
    const auto* type = registry.find(name);
    ASSERT_NE(type, nullptr) << name;
    EXPECT_EQ(std::string(type->descriptor->id), std::string("vigil.builtin.") + name);
    EXPECT_NE(std::strstr(type->descriptor->description, "**Verdict"), nullptr) << name;
  }
  const auto* ci = registry.find("ClassImbalance")->descriptor;
  std::map<std::string, std::string> defaults;
  for (uint32_t i = 0; i < ci->param_count; ++i)
    defaults[ci->params[i].name] = ci->params[i].default_text ? ci->params[i].default_text : "";
  EXPECT_EQ(defaults, (std::map<std::string, std::string>{{"threshold_imbalance", "10"},
                                                          {"threshold_misprediction", "0.7"},
                                                          {"samples", "500"},
                                                          {"argmax", "False"},
                                                          {"labels_regex", ".*labels"},
                                                          {"predictions_regex", ".*predictions"},
                                                          {"interpret_predictions", "False"},
                                                          {"misprediction_classes", "all"},
                                                          {"confidence", "0"}}));
  // The calibrated profile's defaults (docs/rules.md, "Calibrated profile").
  EXPECT_EQ(calibrated_defaults(ci), (std::map<std::string, std::string>{{"interpret_predictions", "True"},
                                                                          {"misprediction_classes", "underrepresented"},
                                                                          {"confidence", "0.95"}}));
  EXPECT_EQ(calibrated_defaults(registry.find("Confusion")->descriptor),
            (std::map<std::string, std::string>{{"interpret_predictions", "True"},
                                                {"criterion", "pair_informedness"},
                                                {"window", "8"},
                                                {"min_support", "30"},
                                                {"confidence", "0.95"}}));
  for (const char* name : {"CheckInputImages", "NLPSequenceRatio"})
    EXPECT_TRUE(calibrated_defaults(registry.find(name)->descriptor).empty()) << name;
}

}  // namespace
}  // namespace vigil
