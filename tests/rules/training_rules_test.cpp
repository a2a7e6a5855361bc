// The "training" family (LossNotDecreasing, Overfit, Overtraining, DeadRelu, SaturatedActivation,
// PoorWeightInitialization, StalledTrainingRule) through the real host: trials written with Vigil's
// writer, the plugin loaded from the built-in plugin folder, the evaluator's statuses, trigger steps
// and evidence checked. Also LossNotDecreasing on the real smdebug fixtures against their reference
// rule LossNotDecreasingLike.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using format::ElementType;
using namespace test;  // the suites' helpers: tests/support/test_support.h
const std::string kLoss = "CrossEntropyLoss_output_0";  // in smdebug PyTorch's "losses" collection

// ---- helpers (prefixed: other families' test files share this executable) ----

// One worker of a trial, written step by step. Event wall times come from `now` (seconds), which a
// test may move; with real_clock the system clock is used.
class TrainingWriter {
 public:
  explicit TrainingWriter(const fs::path& dir, bool end_marker = true, bool real_clock = false,
                          std::string worker = "worker_0", int64_t num_workers = 1) {
    writer::WriterOptions options;
    options.worker = std::move(worker);
    options.num_workers = num_workers;
    options.write_end_marker = end_marker;
    for (auto& m : options.save_config) m.save_interval = 1;
    if (!real_clock) options.clock = [this] { return now; };
    auto w = writer::TrialWriter::create(dir, options);
    EXPECT_VIGIL_OK(w);
    if (w) w_ = std::move(*w);
  }
  TrainingWriter(const TrainingWriter&) = delete;
  TrainingWriter& operator=(const TrainingWriter&) = delete;

  // The next step of `mode` (global and mode steps count from 0).
  TrainingWriter& step(Mode mode = Mode::Train) {
    auto r = w_->begin_step(mode);
    EXPECT_VIGIL_OK(r);
    return *this;
  }
  TrainingWriter& step_at(int64_t global_step, Mode mode, int64_t mode_step) {
    auto r = w_->begin_step_at(global_step, mode, mode_step);
    EXPECT_VIGIL_OK(r);
    return *this;
  }
  // Saves a float64 tensor (shape {} for a 0-d scalar such as a PyTorch loss) in the collections
  // its name belongs to ("default" when none), like smdebug's hook.
  TrainingWriter& f64(const std::string& name, const std::vector<double>& values, std::vector<int64_t> shape = {}) {
    writer::TensorData d{.dtype = ElementType::Float64,
                         .shape = std::move(shape),
                         .bytes = std::as_bytes(std::span<const double>(values))};
    auto r = w_->save_tensor(name, d);
    EXPECT_VIGIL_OK(r);
    return *this;
  }
  TrainingWriter& f32(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape) {
    auto r = w_->save_tensor(name, test::float_data(values, std::move(shape)));
    EXPECT_VIGIL_OK(r);
    return *this;
  }
  TrainingWriter& loss(double v, const std::string& name = kLoss) { return f64(name, {v}); }
  void close() {
    auto r = w_->close();
    EXPECT_VIGIL_OK(r);
  }

  double now = 1000.0;

 private:
  std::unique_ptr<writer::TrialWriter> w_;
};

// A rule run that must not end in an Error status (the family's tests check what the rule found).
evaluate::RuleStatus training_run(const std::string& rule, const fs::path& trial,
                                  std::map<std::string, std::string> params = {},
                                  evaluate::EvaluatorOptions options = {}) {
  auto s = try_evaluate_rule(rule, trial, std::move(params), std::move(options), "training-test");
  EXPECT_VIGIL_OK(s);
  if (!s) return {};
  EXPECT_NE(s->status, RuleEvaluationStatus::Error) << s->details;
  return *s;
}

std::vector<int64_t> training_range(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (int64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

using Steps = std::vector<int64_t>;

// ---- the plugin ----

TEST(TrainingRulesPlugin, LoadsEveryRuleWithSageMakersNamesAndDefaults) {
  const auto& registry = test::builtin_registry();
  const std::map<std::string, std::map<std::string, std::string>> expected = {
      // Vigil's additions default to SageMaker's behaviour: comparison (ci2019, window_mean, trend),
      // prefer_train_mode, patience, trend_std_errors; require_validation_rise; relative_delta,
      // train_window; relative_threshold, relative_threshold_floor.
      {"LossNotDecreasing",
       {{"collection_names", ""}, {"tensor_regex", ""}, {"use_losses_collection", "True"}, {"num_steps", "10"},
        {"diff_percent", "0.1"}, {"increase_threshold_percent", "5"}, {"mode", ""}, {"comparison", "documented"},
        {"prefer_train_mode", "False"}, {"patience", "1"}, {"trend_std_errors", "1.2816"}}},
      {"Overfit",
       {{"tensor_regex", ""}, {"patience", "1"}, {"ratio_threshold", "0.1"}, {"require_validation_rise", "False"}}},
      {"Overtraining",
       {{"patience_train", "5"}, {"patience_validation", "10"}, {"delta", "0.01"}, {"relative_delta", "False"},
        {"train_window", "1"}}},
      {"DeadRelu", {{"tensor_regex", ".*relu_output"}, {"threshold_inactivity", "1.0"}, {"threshold_layer", "50.0"}}},
      {"SaturatedActivation",
       {{"collection_names", ""}, {"tensor_regex", ".*tanh_input|.*sigmoid_input"}, {"threshold_tanh_min", "-9.4999"},
        {"threshold_tanh_max", "9.4999"}, {"threshold_sigmoid_min", "-23"}, {"threshold_sigmoid_max", "16.99999"},
        {"threshold_inactivity", "1.0"}, {"threshold_layer", "50.0"}}},
      {"PoorWeightInitialization",
       {{"activation_inputs_regex", ".*relu_input"}, {"threshold", "10.0"}, {"distribution_range", "0.001"},
        {"patience", "5"}, {"steps", "10"}}},
      {"StalledTrainingRule",
       {{"threshold", "1800"}, {"stop_training_on_fire", "False"}, {"training_job_name_prefix", ""},
        {"relative_threshold", "0"}, {"relative_threshold_floor", "1"}}},
  };
  for (const auto& [name, params] : expected) {
    const auto* rule = registry.find(name);
    ASSERT_NE(rule, nullptr) << name;
    const vigil_rule_descriptor* d = rule->descriptor;
    EXPECT_EQ(std::string(d->id), "vigil.builtin." + name);
    EXPECT_EQ(std::string(d->name), name);
    EXPECT_GT(std::string(d->description).size(), 400u) << name << ": the description is the rule's documentation";
    std::map<std::string, std::string> got;
    for (uint32_t i = 0; i < d->param_count; ++i)
      got[d->params[i].name] = d->params[i].default_text ? d->params[i].default_text : "";
    EXPECT_EQ(got, params) << name;
  }
}

// The calibrated profile's defaults (ABI 1.2 profile_defaults) of a rule, as parameters.
std::map<std::string, std::string> training_calibrated(const std::string& rule) {
  const auto* type = test::builtin_registry().find(rule);
  EXPECT_NE(type, nullptr) << rule;
  return type ? test::calibrated_defaults(type->descriptor) : std::map<std::string, std::string>{};
}

TEST(TrainingRulesPlugin, PublishesTheCalibratedProfile) {
  using Params = std::map<std::string, std::string>;
  EXPECT_EQ(training_calibrated("LossNotDecreasing"),
            (Params{{"comparison", "trend"}, {"prefer_train_mode", "True"}, {"patience", "3"}}));
  EXPECT_EQ(training_calibrated("Overfit"), (Params{{"patience", "3"}, {"require_validation_rise", "True"}}));
  EXPECT_EQ(training_calibrated("Overtraining"),
            (Params{{"patience_train", "10"}, {"patience_validation", "5"}, {"relative_delta", "True"},
                    {"train_window", "10"}}));
  EXPECT_EQ(training_calibrated("StalledTrainingRule"), (Params{{"relative_threshold", "1000"}}));
  for (const char* rule : {"DeadRelu", "SaturatedActivation", "PoorWeightInitialization"})
    EXPECT_EQ(training_calibrated(rule), Params{}) << rule;
  // Each documents its calibrated profile.
  for (const char* rule : {"LossNotDecreasing", "Overfit", "Overtraining", "StalledTrainingRule"})
    EXPECT_NE(std::string(test::builtin_registry().find(rule)->descriptor->description).find("**Calibrated profile.**"),
              std::string::npos)
        << rule;
}

TEST(TrainingRulesPlugin, RefusesOutOfRangeParameters) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().loss(1.0);
    w.close();
  }
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> bad = {
      {"LossNotDecreasing", {{"diff_percent", "150"}}},
      {"LossNotDecreasing", {{"num_steps", "0"}}},
      {"LossNotDecreasing", {{"mode", "PREDICT"}}},
      {"Overfit", {{"patience", "0"}}},
      {"Overtraining", {{"delta", "-1"}}},
      {"Overtraining", {{"train_window", "0"}}},
      {"LossNotDecreasing", {{"patience", "0"}}},
      {"LossNotDecreasing", {{"trend_std_errors", "-1"}}},
      {"StalledTrainingRule", {{"relative_threshold", "-1"}}},
      {"DeadRelu", {{"threshold_layer", "101"}}},
      {"SaturatedActivation", {{"threshold_inactivity", "-1"}}},
      {"PoorWeightInitialization", {{"patience", "0"}}},
      {"StalledTrainingRule", {{"threshold", "-5"}}},
  };
  for (const auto& [rule, params] : bad) {
    auto s = try_evaluate_rule(rule, dir.path(), params);
    EXPECT_FALSE(s.has_value()) << rule << " " << params.begin()->first;
  }
  // Case-insensitive mode names, as SageMaker's strings may come.
  EXPECT_TRUE(try_evaluate_rule("LossNotDecreasing", dir.path(), {{"mode", "train"}}).has_value());
}

// ---- LossNotDecreasing ----

// TRAIN steps whose mode step is the global step, each with loss `value(step)`.
void training_loss_trial(const fs::path& dir, const Steps& steps, const std::function<double(int64_t)>& value) {
  TrainingWriter w(dir);
  for (int64_t s : steps) w.step_at(s, Mode::Train, s).loss(value(s));
  w.close();
}

TEST(TrainingLossNotDecreasing, ChecksAtMostEveryNumStepsLikeTheDocsExample) {
  // The docs: losses every 3 steps, num_steps 10: step 21 is compared with step 9; steps 31 and 32
  // are not saved, so the next check is at 33. A constant loss decreased by 0% < 0.1%: every check fires.
  ScratchDir dir;
  training_loss_trial(dir.path(), {9, 21, 30, 33}, [](int64_t) { return 1.0; });
  auto s = training_run("LossNotDecreasing", dir.path());
  EXPECT_EQ(s.status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(trigger_steps(s), (Steps{21, 33}));
  auto e = evidence_at_step(s, 21);
  EXPECT_EQ(e["mode"], "TRAIN");
  EXPECT_EQ(e["num_steps"], 10);
  ASSERT_EQ(e["losses"].size(), 1u);
  EXPECT_EQ(e["losses"][0]["tensor"], kLoss);
  EXPECT_EQ(e["losses"][0]["worker"], "worker_0");
  EXPECT_EQ(e["losses"][0]["compared_with_step"], 9);
  EXPECT_EQ(e["losses"][0]["crossed"], "diff_percent");
  EXPECT_EQ(evidence_at_step(s, 33)["losses"][0]["compared_with_step"], 21);

  // From the first step: the first check is at the first step with a saved step num_steps earlier.
  ScratchDir every3;
  Steps steps;
  for (int64_t k = 0; k <= 36; k += 3) steps.push_back(k);
  training_loss_trial(every3.path(), steps, [](int64_t) { return 2.5; });
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", every3.path())), (Steps{12, 24, 36}));
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", every3.path(), {{"num_steps", "6"}})),
            (Steps{6, 12, 18, 24, 30, 36}));
}

TEST(TrainingLossNotDecreasing, DecreaseBelowDiffPercentFiresStrictly) {
  ScratchDir dir;
  training_loss_trial(dir.path(), {0, 10}, [](int64_t s) { return s == 0 ? 1.0 : 0.875; });  // -12.5 %
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path(), {{"diff_percent", "12.5"}}).status,
            RuleEvaluationStatus::NoIssuesFound);  // exactly at the threshold
  auto s = training_run("LossNotDecreasing", dir.path(), {{"diff_percent", "12.6"}});
  EXPECT_EQ(trigger_steps(s), (Steps{10}));
  auto e = evidence_at_step(s, 10);
  EXPECT_EQ(e["diff_percent"], 12.6);
  EXPECT_EQ(e["losses"][0]["prev"], 1.0);
  EXPECT_EQ(e["losses"][0]["cur"], 0.875);
  EXPECT_EQ(e["losses"][0]["change_percent"], -12.5);
  EXPECT_EQ(e["losses"][0]["crossed"], "diff_percent");
}

TEST(TrainingLossNotDecreasing, IncreaseAboveIncreaseThresholdFiresStrictly) {
  ScratchDir dir;
  training_loss_trial(dir.path(), {0, 10}, [](int64_t s) { return s == 0 ? 1.0 : 1.125; });  // +12.5 %
  auto s = training_run("LossNotDecreasing", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{10}));
  EXPECT_EQ(evidence_at_step(s, 10)["losses"][0]["crossed"], "increase_threshold_percent");
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path(), {{"increase_threshold_percent", "12.5"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), {{"increase_threshold_percent", "12.4"}})),
            (Steps{10}));
  // A small increase is below both tests: the documented meaning does not fire on it.
  ScratchDir small;
  training_loss_trial(small.path(), {0, 10}, [](int64_t s) { return s == 0 ? 1.0 : 1.03125; });  // +3.125 %
  EXPECT_EQ(training_run("LossNotDecreasing", small.path()).status, RuleEvaluationStatus::NoIssuesFound);
}

TEST(TrainingLossNotDecreasing, The2019TestVectorsUnderTheDocumentedComparison) {
  // builtin-rules.md §2.5: losses at steps 0, 4, ..., 24. The 2019 CI behaviour (cur >= prev*(1+d/100))
  // gave 12 for vector 1 and 24 for vector 2; the documented comparison gives these.
  const std::vector<double> v1{0.3, 0.33, 0.31, 0.30, 0.28};
  const std::vector<double> v2{0.3, 0.33, 0.31, 0.30, 0.28, 0.2, 0.42};
  ScratchDir d1, d2;
  training_loss_trial(d1.path(), {0, 4, 8, 12, 16}, [&](int64_t s) { return v1[size_t(s / 4)]; });
  training_loss_trial(d2.path(), {0, 4, 8, 12, 16, 20, 24}, [&](int64_t s) { return v2[size_t(s / 4)]; });
  // Vector 1, diff 0: step 12 equals step 0, a 0 % decrease is not < 0 %.
  EXPECT_EQ(training_run("LossNotDecreasing", d1.path(), {{"diff_percent", "0"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  // Vector 2, diff 20: 0 % < 20 % at 12, then +40 % > 5 % at 24.
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", d2.path(), {{"diff_percent", "20"}})), (Steps{12, 24}));
}

// 15 cycles of (TRAIN, TRAIN, EVAL) like the pathology runs: global 0..44, TRAIN mode steps 0..29,
// EVAL mode steps 0..14 at global 2, 5, 8, ...
void training_cycles(const fs::path& dir, const std::function<double(Mode, int64_t)>& value, int cycles = 15) {
  TrainingWriter w(dir);
  int64_t train = 0, eval = 0;
  for (int c = 0; c < cycles; ++c) {
    for (int k = 0; k < 2; ++k) w.step(Mode::Train).loss(value(Mode::Train, train++));
    w.step(Mode::Eval).loss(value(Mode::Eval, eval++));
  }
  w.close();
}

TEST(TrainingLossNotDecreasing, ModeUnsetTriesEvalThenTrainThenGlobal) {
  ScratchDir dir;
  training_cycles(dir.path(), [](Mode, int64_t) { return 1.0; });
  // EVAL: mode step 10 (global 32) against mode step 0; the next would be mode step 20.
  auto unset = training_run("LossNotDecreasing", dir.path());
  EXPECT_EQ(trigger_steps(unset), (Steps{32}));
  EXPECT_EQ(evidence_at_step(unset, 32)["mode"], "EVAL");
  EXPECT_EQ(evidence_at_step(unset, 32)["mode_step"], 10);
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), {{"mode", "EVAL"}})), (Steps{32}));
  // TRAIN: mode steps 10 and 20 are global 15 and 30.
  auto train = training_run("LossNotDecreasing", dir.path(), {{"mode", "TRAIN"}});
  EXPECT_EQ(trigger_steps(train), (Steps{15, 30}));
  EXPECT_EQ(evidence_at_step(train, 30)["losses"][0]["compared_with_step"], 10);
  // GLOBAL: every step, global numbers.
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), {{"mode", "GLOBAL"}})),
            (Steps{10, 20, 30, 40}));

  // Without EVAL losses the unset mode is TRAIN; without modes at all, GLOBAL.
  ScratchDir train_only;
  training_loss_trial(train_only.path(), training_range(0, 20), [](int64_t) { return 1.0; });
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", train_only.path())), (Steps{10, 20}));
  EXPECT_EQ(evidence_at_step(training_run("LossNotDecreasing", train_only.path()), 10)["mode"], "TRAIN");
  ScratchDir global_only;
  {
    TrainingWriter w(global_only.path());
    for (int k = 0; k <= 20; ++k) w.step(Mode::Global).loss(1.0);
    w.close();
  }
  auto g = training_run("LossNotDecreasing", global_only.path());
  EXPECT_EQ(trigger_steps(g), (Steps{10, 20}));
  EXPECT_EQ(evidence_at_step(g, 10)["mode"], "GLOBAL");
}

TEST(TrainingLossNotDecreasing, EvalLossesDecreasingHideAFlatTrainingLoss) {
  // The unset mode judges EVAL: a flat TRAIN loss is then not seen (what the labels assume).
  ScratchDir dir;
  training_cycles(dir.path(), [](Mode m, int64_t k) { return m == Mode::Eval ? std::ldexp(1.0, -int(k)) : 1.0; });
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), {{"mode", "TRAIN"}})), (Steps{15, 30}));
}

TEST(TrainingLossNotDecreasing, StepsWithoutTheLossAreNotJudged) {
  // The loss is saved at 0, 5 and 12 only; other steps hold a weight. 5 has no step <= -5; 12 is
  // compared with 0 (the newest saved step <= 2).
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (int64_t s = 0; s <= 20; ++s) {
      w.step(Mode::Train).f32("fc.weight", {1.0f, 2.0f}, {2});
      if (s == 0 || s == 5 || s == 12) w.loss(1.0);
    }
    w.close();
  }
  auto s = training_run("LossNotDecreasing", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{12}));
  EXPECT_EQ(evidence_at_step(s, 12)["losses"][0]["compared_with_step"], 0);
  // Non-scalar tensors are skipped, not errors.
  auto w = training_run("LossNotDecreasing", dir.path(),
                        {{"collection_names", "weights"}, {"use_losses_collection", "False"}});
  EXPECT_EQ(w.status, RuleEvaluationStatus::NoIssuesFound) << w.details;
}

TEST(TrainingLossNotDecreasing, NaNNeverFiresAndInfinityIsAnIncrease) {
  auto run = [](double first, double second) {
    ScratchDir dir;
    training_loss_trial(dir.path(), {0, 10}, [&](int64_t s) { return s == 0 ? first : second; });
    return trigger_steps(training_run("LossNotDecreasing", dir.path()));
  };
  EXPECT_EQ(run(1.0, kNaN), Steps{});
  EXPECT_EQ(run(kNaN, 1.0), Steps{});
  EXPECT_EQ(run(kNaN, kNaN), Steps{});
  EXPECT_EQ(run(1.0, kInf), (Steps{10}));
  EXPECT_EQ(run(kInf, 1.0), Steps{});  // (inf - 1)/inf is NaN
}

TEST(TrainingLossNotDecreasing, TensorSelection) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (int64_t s = 0; s <= 10; ++s)
      w.step(Mode::Train).loss(10.0 - double(s)).f64("my_metric", {3.0}).f32("fc.weight", {1.0f, 2.0f}, {2});
    w.close();
  }
  // The losses collection decreases: nothing.
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  // A regex adds a flat scalar (union with losses).
  auto r = training_run("LossNotDecreasing", dir.path(), {{"tensor_regex", "^my_"}});
  EXPECT_EQ(trigger_steps(r), (Steps{10}));
  ASSERT_EQ(evidence_at_step(r, 10)["losses"].size(), 1u);
  EXPECT_EQ(evidence_at_step(r, 10)["losses"][0]["tensor"], "my_metric");
  // Without the losses collection and nothing else: every scalar tensor.
  auto all = training_run("LossNotDecreasing", dir.path(), {{"use_losses_collection", "False"}});
  EXPECT_EQ(trigger_steps(all), (Steps{10}));
  EXPECT_EQ(evidence_at_step(all, 10)["losses"][0]["tensor"], "my_metric");
  // A collection of non-scalars only: nothing to judge.
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path(), {{"collection_names", "weights"}, {"use_losses_collection", "False"}})
                .status,
            RuleEvaluationStatus::NoIssuesFound);
}

TEST(TrainingLossNotDecreasing, EachWorkerIsComparedWithItself) {
  ScratchDir dir;
  for (int k = 0; k < 2; ++k) {
    TrainingWriter w(dir.path(), /*end_marker=*/k == 1, false, "worker_" + std::to_string(k), 2);
    for (int64_t s = 0; s <= 10; ++s) w.step(Mode::Train).loss(k == 0 ? 10.0 - double(s) : 4.0);
    w.close();
  }
  auto s = training_run("LossNotDecreasing", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{10}));
  auto e = evidence_at_step(s, 10);
  ASSERT_EQ(e["losses"].size(), 1u);
  EXPECT_EQ(e["losses"][0]["worker"], "worker_1");
}

// smdebug's 2019 CI test vectors (spec §2.5), num_steps 10: `ci2019` fires iff cur >= prev*(1 + d/100).
TEST(TrainingLossNotDecreasing, Ci2019ComparisonReproducesSmdebugsTestVectors) {
  const std::vector<double> losses{0.3, 0.33, 0.31, 0.30, 0.28, 0.2, 0.42};
  const auto at = [&](int64_t s) { return losses[size_t(s / 4)]; };
  ScratchDir v1, v2;
  training_loss_trial(v1.path(), {0, 4, 8, 12, 16}, at);
  training_loss_trial(v2.path(), {0, 4, 8, 12, 16, 20, 24}, at);
  // Vector 1, diff 0: first trigger at 12 (0.30 vs 0.3 at step 0); 16 is inside the schedule.
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", v1.path(), {{"comparison", "ci2019"}, {"diff_percent", "0"}})),
            (Steps{12}));
  // Vector 2, diff 20: not at 12 (0.30 < 0.36), at 24 (0.42 >= 0.30*1.2 vs step 12).
  auto s = training_run("LossNotDecreasing", v2.path(), {{"comparison", "ci2019"}, {"diff_percent", "20"}});
  EXPECT_EQ(trigger_steps(s), (Steps{24}));
  EXPECT_EQ(evidence_at_step(s, 24)["comparison"], "ci2019");
  EXPECT_EQ(evidence_at_step(s, 24)["losses"][0]["compared_with_step"], 12);
  // The documented comparison tells the vectors apart: it fires at 12 (a 0 % decrease < 20 %).
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", v2.path(), {{"diff_percent", "20"}})).front(), 12);
  EXPECT_FALSE(try_evaluate_rule("LossNotDecreasing", v2.path(), {{"comparison", "latest"}}).has_value());
}

TEST(TrainingLossNotDecreasing, WindowMeanComparesTheLastTwoWindows) {
  // num_steps 3: checks when 6, 9, 12 losses are saved. Windows: (4,4,4)->(4,4,4) fires (not lower);
  // then (4,4,4)->(3,3,3) lower; then (3,3,3)->(3,2.5,4) mean 3.1667 fires.
  const std::vector<double> losses{4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 2.5, 4};
  ScratchDir dir;
  Steps steps;
  for (int64_t k = 0; k < 12; ++k) steps.push_back(2 * k);
  training_loss_trial(dir.path(), steps, [&](int64_t s) { return losses[size_t(s / 2)]; });
  auto s = training_run("LossNotDecreasing", dir.path(),
                        {{"comparison", "window_mean"}, {"num_steps", "3"}, {"diff_percent", "0"}});
  EXPECT_EQ(trigger_steps(s), (Steps{10, 22}));
  auto e = evidence_at_step(s, 22)["losses"][0];
  EXPECT_EQ(e["prev_window_first_step"], 12);
  EXPECT_EQ(e["cur_window_first_step"], 18);
  EXPECT_DOUBLE_EQ(e["prev_mean"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(e["cur_mean"].get<double>(), 9.5 / 3);
  // diff_percent lowers the bar: a 25 % drop of the mean (4 -> 3) fires with 25 % (exactly at the
  // bar: cur >= prev*(1 - d)), not with 24 %.
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(),
                                        {{"comparison", "window_mean"}, {"num_steps", "3"}, {"diff_percent", "25"}})),
            (Steps{10, 16, 22}));
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(),
                                        {{"comparison", "window_mean"}, {"num_steps", "3"}, {"diff_percent", "24"}})),
            (Steps{10, 22}));
}

// Reproducible noise in [-1, 1]: a 64-bit linear congruential generator (Knuth's MMIX constants).
class TrainingNoise {
 public:
  explicit TrainingNoise(uint64_t seed) : x_(seed) {}
  double next() {
    x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x_ >> 11) / 9007199254740992.0 * 2 - 1;  // 53 bits
  }

 private:
  uint64_t x_;
};

// `count` TRAIN losses value(i) + amplitude * noise.
void training_noisy_losses(const fs::path& dir, int64_t count, const std::function<double(int64_t)>& value,
                           double amplitude, uint64_t seed = 1) {
  TrainingNoise noise(seed);
  std::vector<double> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(value(i) + amplitude * noise.next());
  training_loss_trial(dir, training_range(0, count - 1), [&](int64_t s) { return v[size_t(s)]; });
}

const std::map<std::string, std::string> kTrend = {{"comparison", "trend"}};

TEST(TrainingLossNotDecreasing, TrendFiresOnANoisyFlatLossNotOnANoisyDecrease) {
  // Minibatch noise of +-5 % around a flat loss: the fitted decrease is within its noise, so the
  // loss is not shown to decrease; the same noise around a loss falling 10 % per 10 steps is.
  ScratchDir flat, falling;
  training_noisy_losses(flat.path(), 40, [](int64_t) { return 1.0; }, 0.05);
  training_noisy_losses(falling.path(), 40, [](int64_t i) { return 1.0 - 0.01 * double(i); }, 0.05);
  auto s = training_run("LossNotDecreasing", flat.path(), kTrend);
  ASSERT_EQ(s.status, RuleEvaluationStatus::IssuesFound) << seen(s);
  EXPECT_GE(trigger_steps(s).front(), 19);  // the first window of 2*num_steps losses ends at 19
  auto e = evidence(s, 0);
  EXPECT_EQ(e["comparison"], "trend");
  const auto& loss = e["losses"][0];
  EXPECT_EQ(loss["crossed"], "trend");
  EXPECT_EQ(loss["window_last_step"].get<int64_t>() - loss["window_first_step"].get<int64_t>(), 19);
  EXPECT_LT(loss["decrease_percent"].get<double>(),
            0.1 + loss["trend_std_errors"].get<double>() * loss["std_error_percent"].get<double>());
  EXPECT_GT(loss["std_error_percent"].get<double>(), 0.0);
  EXPECT_EQ(training_run("LossNotDecreasing", falling.path(), kTrend).status, RuleEvaluationStatus::NoIssuesFound);
}

TEST(TrainingLossNotDecreasing, TrendWithoutNoiseIsTheDocumentedTestOnTheFittedLine) {
  // 2 - 0.001 i, i = 0..19: the line's values at the halves' centres (4.5, 14.5) are 1.9955 and
  // 1.9855: a decrease of 0.01, 0.5011 % of prev, with no noise.
  ScratchDir dir;
  training_loss_trial(dir.path(), training_range(0, 19), [](int64_t i) { return 2.0 - 0.001 * double(i); });
  auto at = [&](const std::string& diff) {
    auto params = kTrend;
    params["diff_percent"] = diff;
    return training_run("LossNotDecreasing", dir.path(), params);
  };
  EXPECT_EQ(at("0.5").status, RuleEvaluationStatus::NoIssuesFound);
  auto s = at("0.51");
  ASSERT_EQ(trigger_steps(s), (Steps{19}));  // one window of 20 values: one check
  const auto loss = evidence_at_step(s, 19)["losses"][0];
  EXPECT_NEAR(loss["prev"].get<double>(), 1.9955, 1e-12);
  EXPECT_NEAR(loss["cur"].get<double>(), 1.9855, 1e-12);
  EXPECT_NEAR(loss["decrease_percent"].get<double>(), 100 * 0.01 / 1.9955, 1e-9);
  EXPECT_NEAR(loss["std_error_percent"].get<double>(), 0.0, 1e-9);
  EXPECT_EQ(loss["window_first_step"], 0);
  // Fewer than 2*num_steps values: nothing is compared.
  ScratchDir short_run;
  training_loss_trial(short_run.path(), training_range(0, 18), [](int64_t) { return 1.0; });
  EXPECT_EQ(training_run("LossNotDecreasing", short_run.path(), kTrend).status, RuleEvaluationStatus::NoIssuesFound);
  // A rise always fires, whatever its size.
  ScratchDir rising;
  training_loss_trial(rising.path(), training_range(0, 19), [](int64_t i) { return 1.0 + 0.0001 * double(i); });
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", rising.path(), kTrend)), (Steps{19}));
}

TEST(TrainingLossNotDecreasing, TrendStdErrorsIsTheNoiseMarginOfTheDecrease) {
  // A loss falling 5 % per 10 steps under +-5 % noise: decreasing beyond its noise, but not by ten
  // standard errors.
  ScratchDir dir;
  training_noisy_losses(dir.path(), 20, [](int64_t i) { return 1.0 - 0.005 * double(i); }, 0.05, 7);
  auto with = [&](const std::string& z) {
    auto params = kTrend;
    params["trend_std_errors"] = z;
    return training_run("LossNotDecreasing", dir.path(), params);
  };
  EXPECT_EQ(with("0").status, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(with("1.2816").status, RuleEvaluationStatus::NoIssuesFound);
  auto s = with("10");
  ASSERT_EQ(trigger_steps(s), (Steps{19}));
  const auto loss = evidence_at_step(s, 19)["losses"][0];
  const double t = (loss["decrease_percent"].get<double>() - 0.1) / loss["std_error_percent"].get<double>();
  EXPECT_GT(t, 1.2816);
  EXPECT_LT(t, 10.0);
}

TEST(TrainingLossNotDecreasing, TrendSkipsWindowsHoldingNaN) {
  // num_steps 2: windows of 4; the windows ending at 3..6 hold the NaN of step 3.
  ScratchDir dir;
  training_loss_trial(dir.path(), training_range(0, 8), [](int64_t s) { return s == 3 ? kNaN : 1.0; });
  auto params = kTrend;
  params["num_steps"] = "2";
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), params)), (Steps{7, 8}));
}

TEST(TrainingLossNotDecreasing, PatienceCountsConsecutiveFiringChecks) {
  // A constant loss fires at every check: trend (num_steps 5) checks every step from 9 on.
  ScratchDir dir;
  training_loss_trial(dir.path(), training_range(0, 14), [](int64_t) { return 1.0; });
  auto params = kTrend;
  params["num_steps"] = "5";
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), params)), training_range(9, 14));
  params["patience"] = "3";
  auto s = training_run("LossNotDecreasing", dir.path(), params);
  EXPECT_EQ(trigger_steps(s), training_range(11, 14));
  EXPECT_EQ(evidence_at_step(s, 11)["patience"], 3);
  EXPECT_EQ(evidence_at_step(s, 11)["losses"][0]["counter"], 3);
  // The documented comparison too: checks at 5 and 10 fire, so patience 2 fires at 10 only; a check
  // that does not fire resets the counter (a 50 % drop at 15 in the second trial).
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", dir.path(), {{"num_steps", "5"}, {"patience", "2"}})),
            (Steps{10}));
  ScratchDir reset;
  training_loss_trial(reset.path(), training_range(0, 25), [](int64_t s) { return s < 15 ? 1.0 : 0.5; });
  EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", reset.path(), {{"num_steps", "5"}, {"patience", "2"}})),
            (Steps{10, 25}));
}

TEST(TrainingLossNotDecreasing, PreferTrainModeJudgesTheTrainingLossFirst) {
  // EVAL losses halve at each evaluation, the TRAIN loss stays flat: the unset mode judges EVAL, with
  // prefer_train_mode TRAIN (mode steps 10 and 20 are global 15 and 30).
  ScratchDir dir;
  training_cycles(dir.path(), [](Mode m, int64_t k) { return m == Mode::Eval ? std::ldexp(1.0, -int(k)) : 1.0; });
  EXPECT_EQ(training_run("LossNotDecreasing", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  auto s = training_run("LossNotDecreasing", dir.path(), {{"prefer_train_mode", "True"}});
  EXPECT_EQ(trigger_steps(s), (Steps{15, 30}));
  EXPECT_EQ(evidence_at_step(s, 15)["mode"], "TRAIN");
  // Without TRAIN losses it still judges EVAL: a constant EVAL loss fires at mode step 10 (global 10).
  ScratchDir eval_only;
  {
    TrainingWriter w(eval_only.path());
    for (int k = 0; k <= 10; ++k) w.step(Mode::Eval).loss(1.0);
    w.close();
  }
  auto e = training_run("LossNotDecreasing", eval_only.path(), {{"prefer_train_mode", "True"}});
  EXPECT_EQ(trigger_steps(e), (Steps{10}));
  EXPECT_EQ(evidence_at_step(e, 10)["mode"], "EVAL");
}

// LossNotDecreasingLike (shared/fixtures/smdebug-real/<name>.expected.json) compares the means of the
// last two windows of 5 TRAIN losses, each time the number of TRAIN losses is a multiple of 5 (and
// >= 10), firing when cur >= prev*(1 - min_decrease). The built-in rule with the same parameters and
// comparison=window_mean (num_steps 5, diff_percent 0, TRAIN) fires at exactly its steps. The default
// (documented) comparison compares single values num_steps apart on another schedule; its steps are
// pinned too.
TEST(TrainingLossNotDecreasing, RealSmdebugFixturesAgainstLossNotDecreasingLike) {
  const fs::path root = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "smdebug-real";
  struct Case {
    std::string name;
    Steps documented;  // the default comparison's steps with the same parameters
  };
  const std::vector<Case> cases = {
      // A constant TRAIN loss: the documented comparison checks mode steps 5, 10, 15, where a 0 %
      // decrease is not < 0 %.
      {"loss_not_decreasing", {}},
      {"mixed_dtypes", {}},  // 4 TRAIN steps: no step 5 steps back
      {"mlp_healthy", {}},   // checks at TRAIN mode steps 5, 10, 15: always lower
      // TRAIN steps 0, 2, ..., 38: checks 6, 12, ..., 36, firing on the rises 0.4465 -> 0.4969
      // (+11.3 %) at 18 and 0.4957 -> 0.5926 (+19.5 %) at 30.
      {"vanishing_gradient", {18, 30}},
  };
  for (const auto& c : cases) {
    std::ifstream in(root / (c.name + ".expected.json"));
    ASSERT_TRUE(in) << c.name;
    const auto expected = nlohmann::json::parse(in);
    const auto& ref = expected["rules"]["results"]["LossNotDecreasingLike"];
    ASSERT_EQ(ref["params"]["window"], "5");
    ASSERT_EQ(ref["params"]["min_decrease"], "0.0");
    const std::map<std::string, std::string> same = {{"num_steps", "5"}, {"diff_percent", "0"}, {"mode", "TRAIN"}};
    auto windows = same;
    windows["comparison"] = "window_mean";
    auto w = training_run("LossNotDecreasing", root / c.name, windows);
    EXPECT_EQ(trigger_steps(w), ref["triggered_steps"].get<Steps>()) << c.name;
    for (const auto& t : w.triggers) {  // the same means as the reference's details
      const auto& detail = ref["details"][std::to_string(t.step)][0];
      ASSERT_FALSE(t.evidence.empty());
      const auto& mine = t.evidence.front()["losses"][0];
      EXPECT_EQ(mine["tensor"], detail["tensor"]) << c.name;
      EXPECT_DOUBLE_EQ(mine["cur_mean"].get<double>(), detail["cur_mean"].get<double>()) << c.name;
      EXPECT_DOUBLE_EQ(mine["prev_mean"].get<double>(), detail["prev_mean"].get<double>()) << c.name;
    }

    EXPECT_EQ(trigger_steps(training_run("LossNotDecreasing", root / c.name, same)), c.documented) << c.name;
  }
}

// ---- Overfit ----

TEST(TrainingOverfit, RatioAboveThresholdAtEachEvalStepStrictly) {
  ScratchDir dir;
  training_cycles(dir.path(), [](Mode m, int64_t) { return m == Mode::Eval ? 2.25 : 2.0; }, 3);  // r = 0.125
  auto s = training_run("Overfit", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{2, 5, 8}));
  auto e = evidence_at_step(s, 2)["losses"][0];
  EXPECT_EQ(e["tensor"], kLoss);
  EXPECT_EQ(e["val"], 2.25);
  EXPECT_EQ(e["mean_train"], 2.0);
  EXPECT_EQ(e["train_values"], 2);
  EXPECT_EQ(e["ratio"], 0.125);
  EXPECT_EQ(training_run("Overfit", dir.path(), {{"ratio_threshold", "0.125"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"ratio_threshold", "0.12"}})), (Steps{2, 5, 8}));
}

TEST(TrainingOverfit, PatienceCountsConsecutiveChecks) {
  // EVAL checks: above, above, below, above, above, above.
  const std::vector<double> eval{1.5, 1.5, 1.0, 1.5, 1.5, 1.5};
  ScratchDir dir;
  training_cycles(dir.path(), [&](Mode m, int64_t k) { return m == Mode::Eval ? eval[size_t(k)] : 1.0; }, 6);
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path())), (Steps{2, 5, 11, 14, 17}));
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"patience", "2"}})), (Steps{5, 14, 17}));
  auto s = training_run("Overfit", dir.path(), {{"patience", "3"}});
  EXPECT_EQ(trigger_steps(s), (Steps{17}));
  EXPECT_EQ(evidence_at_step(s, 17)["losses"][0]["counter"], 3);
}

TEST(TrainingOverfit, TrainingMeanCoversTheTrainStepsSinceThePreviousCheck) {
  // Phase 1: train 4, 4, val 4 (r 0). Phase 2: train 1, 1, val 1.5 (r 0.5; cumulative means would
  // give 2.75/2.5 - 1 = 0.1, not above 0.1).
  ScratchDir dir;
  training_cycles(dir.path(), [](Mode m, int64_t k) {
    if (m == Mode::Train) return k < 2 ? 4.0 : 1.0;
    return k == 0 ? 4.0 : 1.5;
  }, 2);
  auto s = training_run("Overfit", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{5}));
  EXPECT_EQ(evidence_at_step(s, 5)["losses"][0]["mean_train"], 1.0);
}

TEST(TrainingOverfit, ConsecutiveEvalStepsReuseTheLastTrainingMean) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step(Mode::Eval).loss(9.0);  // 0: no training loss yet: no check
    w.step(Mode::Train).loss(1.0).step(Mode::Train).loss(3.0);  // 1, 2: mean 2
    w.step(Mode::Eval).loss(2.5);  // 3: r 0.25
    w.step(Mode::Eval).loss(2.1);  // 4: r 0.05 against the same mean
    w.step(Mode::Eval).loss(2.4);  // 5: r 0.2
    w.step(Mode::Predict).loss(100.0);  // 6: ignored
    w.step(Mode::Train).f32("fc.weight", {1.0f}, {1});  // 7: no loss: the window stays
    w.step(Mode::Eval).loss(2.125);  // 8: r 0.0625
    w.close();
  }
  auto s = training_run("Overfit", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{3, 5}));
  EXPECT_EQ(evidence_at_step(s, 5)["losses"][0]["mean_train"], 2.0);
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"patience", "2"}})), Steps{});
}

TEST(TrainingOverfit, StartStepIsTheHostsEvaluationWindow) {
  ScratchDir dir;
  training_cycles(dir.path(), [](Mode m, int64_t) { return m == Mode::Eval ? 1.5 : 1.0; }, 4);
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"start_step", "6"}})), (Steps{8, 11}));
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"start_step", "0"}})), (Steps{2, 5, 8, 11}));
}

TEST(TrainingOverfit, NaNResetsAndOtherTensorsByRegex) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (int c = 0; c < 3; ++c) {
      w.step(Mode::Train).loss(1.0).f64("val_metric", {1.0});
      w.step(Mode::Eval).loss(c == 1 ? kNaN : 1.5).f64("val_metric", {1.05});
    }
    w.close();
  }
  // Checks at 1, 3, 5: ratio 0.5, NaN (no trigger, counter reset), 0.5.
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path())), (Steps{1, 5}));
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"patience", "2"}})), Steps{});
  // tensor_regex replaces the losses collection: val_metric is 5 % above.
  EXPECT_EQ(training_run("Overfit", dir.path(), {{"tensor_regex", "val_metric"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"tensor_regex", "val_metric"}, {"ratio_threshold", "0.04"}})),
            (Steps{1, 3, 5}));
  // No loss at all: no data, no error.
  EXPECT_EQ(training_run("Overfit", dir.path(), {{"tensor_regex", "nothing_matches"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
}

TEST(TrainingOverfit, RequireValidationRiseCountsOnlyAValidationLossAboveItsBest) {
  // TRAIN 1.0 throughout; EVAL 2.0, 1.8, 1.6, 1.7, 1.8, 1.9, 1.5, 1.6: always 50 % or more above the
  // training loss (the ratio alone fires at every check), above its best at checks 3, 4, 5 and 7.
  const std::vector<double> eval{2.0, 1.8, 1.6, 1.7, 1.8, 1.9, 1.5, 1.6};
  ScratchDir dir;
  training_cycles(dir.path(), [&](Mode m, int64_t k) { return m == Mode::Eval ? eval[size_t(k)] : 1.0; }, 8);
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path())), (Steps{2, 5, 8, 11, 14, 17, 20, 23}));
  EXPECT_EQ(trigger_steps(training_run("Overfit", dir.path(), {{"require_validation_rise", "True"}})),
            (Steps{11, 14, 17, 23}));
  auto s = training_run("Overfit", dir.path(), {{"require_validation_rise", "True"}, {"patience", "3"}});
  EXPECT_EQ(trigger_steps(s), (Steps{17}));
  auto e = evidence_at_step(s, 17)["losses"][0];
  EXPECT_EQ(e["best_val"], 1.6);
  EXPECT_EQ(e["counter"], 3);
  // A validation loss that keeps falling, however far above the training loss, never counts.
  ScratchDir falling;
  training_cycles(falling.path(), [](Mode m, int64_t k) { return m == Mode::Eval ? 3.0 - 0.1 * double(k) : 1.0; });
  EXPECT_EQ(training_run("Overfit", falling.path(), {{"require_validation_rise", "True"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
}

// ---- Overtraining ----

TEST(TrainingOvertraining, TrainingLossWithoutImprovementAboveDelta) {
  // 2.0 then 1.75 seven times. delta 0.25: 1.75 is not < 2.0 - 0.25, no improvement ever: the counter
  // reaches 5 at step 5. delta 0.125: 1.75 improves at step 1, then 5 at step 6.
  ScratchDir dir;
  training_loss_trial(dir.path(), training_range(0, 7), [](int64_t s) { return s == 0 ? 2.0 : 1.75; });
  auto s = training_run("Overtraining", dir.path(), {{"delta", "0.25"}});
  EXPECT_EQ(trigger_steps(s), (Steps{5, 6, 7}));
  auto e = evidence_at_step(s, 5)["no_improvement"][0];
  EXPECT_EQ(e["mode"], "TRAIN");
  EXPECT_EQ(e["counter"], 5);
  EXPECT_EQ(e["patience"], 5);
  EXPECT_EQ(e["best"], 2.0);
  EXPECT_EQ(e["value"], 1.75);
  EXPECT_EQ(trigger_steps(training_run("Overtraining", dir.path(), {{"delta", "0.125"}})), (Steps{6, 7}));
  EXPECT_EQ(trigger_steps(training_run("Overtraining", dir.path(), {{"delta", "0.125"}, {"patience_train", "7"}})),
            Steps{});
}

TEST(TrainingOvertraining, ValidationLossStallsWhileTrainingImproves) {
  // (TRAIN, EVAL) x 10: TRAIN falls by 0.5 each time, EVAL stays at 1: the validation counter is 3 at
  // the 4th EVAL step (global 7) and the rule fires at every later step, TRAIN steps included.
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (int k = 0; k < 10; ++k) {
      w.step(Mode::Train).loss(10.0 - 0.5 * k);
      w.step(Mode::Eval).loss(1.0);
    }
    w.close();
  }
  EXPECT_EQ(training_run("Overtraining", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  auto s = training_run("Overtraining", dir.path(), {{"patience_validation", "3"}});
  EXPECT_EQ(trigger_steps(s), training_range(7, 19));
  EXPECT_EQ(evidence_at_step(s, 7)["no_improvement"][0]["mode"], "EVAL");
  EXPECT_EQ(evidence_at_step(s, 8)["no_improvement"][0]["counter"], 3);
}

TEST(TrainingOvertraining, ImprovementResetsNaNDoesNotAndStepsWithoutLossAreNotJudged) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    const std::vector<double> v{1, 1, 1, 1, 1, 1, 0.5, 0.5, kNaN, kNaN, kNaN, kNaN};
    for (size_t i = 0; i < v.size(); ++i) w.step(Mode::Train).loss(v[i]);
    w.step(Mode::Train).f32("fc.weight", {1.0f}, {1});  // 12: no loss
    w.step(Mode::Predict).loss(0.0);                    // 13: PREDICT is ignored
    w.step(Mode::Train).loss(kNaN);                     // 14
    w.close();
  }
  // Counter: 5 at 5; 0 at 6; then 1, 2, 3, 4, 5 at 7..11 (NaN is no improvement); 6 at 14.
  EXPECT_EQ(trigger_steps(training_run("Overtraining", dir.path())), (Steps{5, 11, 14}));
}

TEST(TrainingOvertraining, RelativeDeltaDoesNotDependOnTheLossScale) {
  // A loss falling 0.5 % per step, at scales 1 and 1000. An absolute delta of 0.01 is 1 % of the
  // first and 0.001 % of the second; as a fraction it is 1 % of both, and both give the same steps.
  ScratchDir small, large;
  training_loss_trial(small.path(), training_range(0, 12), [](int64_t i) { return 1.0 - 0.005 * double(i); });
  training_loss_trial(large.path(), training_range(0, 12), [](int64_t i) { return 1000.0 - 5.0 * double(i); });
  const std::map<std::string, std::string> relative = {{"relative_delta", "True"}, {"patience_train", "2"}};
  const auto small_steps = trigger_steps(training_run("Overtraining", small.path(), relative));
  EXPECT_FALSE(small_steps.empty());
  EXPECT_EQ(trigger_steps(training_run("Overtraining", large.path(), relative)), small_steps);
  // Absolute: no 0.005 step beats best - 0.01 at scale 1 (fires), every 5.0 step does at 1000.
  EXPECT_FALSE(trigger_steps(training_run("Overtraining", small.path(), {{"patience_train", "2"}})).empty());
  EXPECT_EQ(training_run("Overtraining", large.path(), {{"patience_train", "2"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
}

TEST(TrainingOvertraining, TrainWindowComparesTheMovingMeanOfTrainingLosses) {
  // A loss falling 0.015 per step under +-0.1 minibatch noise: a lucky minibatch sets a best that
  // the next values seldom beat, so single values stall (7 steps at most here); the mean of 10
  // follows the trend (3 steps at most).
  ScratchDir dir;
  training_noisy_losses(dir.path(), 60, [](int64_t i) { return 1.0 - 0.015 * double(i); }, 0.1, 3);
  EXPECT_EQ(training_run("Overtraining", dir.path()).status, RuleEvaluationStatus::IssuesFound);
  EXPECT_EQ(training_run("Overtraining", dir.path(), {{"train_window", "10"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  // The window starts once full: a constant loss sets its best at step 9, and 5 more steps make
  // the counter 5 at step 14; the evidence gives the mean and the window.
  ScratchDir flat;
  training_loss_trial(flat.path(), training_range(0, 15), [](int64_t) { return 1.0; });
  auto s = training_run("Overtraining", flat.path(), {{"train_window", "10"}});
  EXPECT_EQ(trigger_steps(s), (Steps{14, 15}));
  auto e = evidence_at_step(s, 14)["no_improvement"][0];
  EXPECT_EQ(e["value"], 1.0);
  EXPECT_EQ(e["train_window"], 10);
  EXPECT_EQ(e["counter"], 5);
}

// ---- DeadRelu ----

// A (batch 4, units 4) output; unit u of sample b is values[b*4 + u].
std::vector<double> training_units(const std::vector<std::vector<double>>& per_unit) {
  std::vector<double> v(16);
  for (size_t u = 0; u < 4; ++u)
    for (size_t b = 0; b < 4; ++b) v[b * 4 + u] = per_unit[u][b];
  return v;
}

TEST(TrainingDeadRelu, DeadShareAboveThresholdLayerStrictly) {
  const std::vector<double> off{0, 0, -1, 0}, on{1, 2, 0.5, 3};
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().f64("layer1.relu_output_0", training_units({off, off, off, on}), {4, 4});   // 75 %
    w.step().f64("layer1.relu_output_0", training_units({off, off, on, on}), {4, 4});    // 50 %
    w.step().f64("other.relu_input_0", training_units({off, off, off, off}), {4, 4});   // not selected
    w.step().f64("layer1.relu_output_0", training_units({off, off, off, off}), {4, 4});  // 100 %
    w.close();
  }
  auto s = training_run("DeadRelu", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{0, 3}));
  auto e = evidence_at_step(s, 0)["layers"][0];
  EXPECT_EQ(e["tensor"], "layer1.relu_output_0");
  EXPECT_EQ(e["dead_percent"], 75.0);
  EXPECT_EQ(e["dead_units"], 3);
  EXPECT_EQ(e["units"], 4);
  EXPECT_EQ(e["batch"], 4);
  EXPECT_EQ(trigger_steps(training_run("DeadRelu", dir.path(), {{"threshold_layer", "49.9"}})), (Steps{0, 1, 3}));
  EXPECT_EQ(trigger_steps(training_run("DeadRelu", dir.path(), {{"threshold_layer", "75"}})), (Steps{3}));
}

TEST(TrainingDeadRelu, ThresholdInactivityIsStrict) {
  // Every unit is active in exactly 1 of 4 samples (25 %).
  const std::vector<double> once{0, 0, 0, 1};
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().f64("layer1.relu_output_0", training_units({once, once, once, once}), {4, 4});
    w.close();
  }
  EXPECT_EQ(training_run("DeadRelu", dir.path(), {{"threshold_inactivity", "25"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("DeadRelu", dir.path(), {{"threshold_inactivity", "25.5"}})), (Steps{0}));
}

TEST(TrainingDeadRelu, NaNIsInactiveInfinityActive) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().f64("layer1.relu_output_0", std::vector<double>(16, kNaN), {4, 4});
    w.step().f64("layer1.relu_output_0", std::vector<double>(16, kInf), {4, 4});
    w.step().f64("layer1.relu_output_0", std::vector<double>(16, -kInf), {4, 4});
    w.close();
  }
  EXPECT_EQ(trigger_steps(training_run("DeadRelu", dir.path())), (Steps{0, 2}));
}

TEST(TrainingDeadRelu, UnitsOfConvolutionsAndVectorsAndSeveralLayers) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    // (batch 2, channels 2, 2x2): channel 0 dead everywhere, plus one position of channel 1: 5/8.
    std::vector<double> conv(16, 1.0);
    for (int b = 0; b < 2; ++b) {
      for (int p = 0; p < 4; ++p) conv[size_t(b * 8 + p)] = 0;
      conv[size_t(b * 8 + 4)] = -2;
    }
    w.step().f64("conv.relu_output_0", conv, {2, 2, 2, 2});
    // Rank 1: one sample of 4 units, 3 of them 0.
    w.step().f64("vec.relu_output_0", {0, 0, 0, 1}, {4});
    // Two layers at one step: only the dead one is reported.
    w.step().f64("a.relu_output_0", std::vector<double>(16, 1.0), {4, 4}).f64("b.ReLU_output_0", std::vector<double>(16, 0.0), {4, 4});
    w.close();
  }
  auto s = training_run("DeadRelu", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{0, 1}));
  EXPECT_EQ(evidence_at_step(s, 0)["layers"][0]["dead_percent"], 62.5);
  EXPECT_EQ(evidence_at_step(s, 0)["layers"][0]["units"], 8);
  EXPECT_EQ(evidence_at_step(s, 1)["layers"][0]["batch"], 1);
  EXPECT_EQ(trigger_steps(training_run("DeadRelu", dir.path(), {{"threshold_layer", "62.5"}})), (Steps{1}));
  // The docs' example regex: both spellings.
  auto both = training_run("DeadRelu", dir.path(), {{"tensor_regex", ".*relu_output|.*ReLU_output"}});
  EXPECT_EQ(trigger_steps(both), (Steps{0, 1, 2}));
  ASSERT_EQ(evidence_at_step(both, 2)["layers"].size(), 1u);
  EXPECT_EQ(evidence_at_step(both, 2)["layers"][0]["tensor"], "b.ReLU_output_0");
  // Nothing matches: no data, no error.
  EXPECT_EQ(training_run("DeadRelu", dir.path(), {{"tensor_regex", "^nothing$"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
}

// ---- SaturatedActivation ----

TEST(TrainingSaturatedActivation, TanhInputsOutsideTheRangeStrictly) {
  // (batch 2, units 4): per step, how many units sit at +-10 (outside +-9.4999).
  auto layer = [](int saturated) {
    std::vector<double> v(8, 0.5);
    for (int b = 0; b < 2; ++b)
      for (int u = 0; u < saturated; ++u) v[size_t(b * 4 + u)] = (u % 2 ? -10.0 : 10.0);
    return v;
  };
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().f64("layer3.tanh_input_0", layer(2), {2, 4});  // 50 %
    w.step().f64("layer3.tanh_input_0", layer(3), {2, 4});  // 75 %
    w.step().f64("layer3.tanh_input_0", {2.0, 2.0, 1.5, -2.0, 2.0, 2.0, 1.5, -2.0}, {2, 4});
    w.close();
  }
  auto s = training_run("SaturatedActivation", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{1}));
  auto e = evidence_at_step(s, 1)["layers"][0];
  EXPECT_EQ(e["function"], "tanh");
  EXPECT_EQ(e["saturated_percent"], 75.0);
  EXPECT_EQ(e["range_max"], 9.4999);
  // The ends of the range are outside it: at step 2, 3 of 4 units sit exactly on +-2.
  EXPECT_EQ(trigger_steps(training_run("SaturatedActivation", dir.path(),
                                        {{"threshold_tanh_min", "-2"}, {"threshold_tanh_max", "2"}})),
            (Steps{1, 2}));
  EXPECT_EQ(trigger_steps(training_run("SaturatedActivation", dir.path(),
                                        {{"threshold_tanh_min", "-2.5"}, {"threshold_tanh_max", "2.5"}})),
            (Steps{1}));
  EXPECT_EQ(trigger_steps(training_run("SaturatedActivation", dir.path(), {{"threshold_layer", "50"}})), (Steps{1}));
  EXPECT_EQ(trigger_steps(training_run("SaturatedActivation", dir.path(), {{"threshold_layer", "49"}})),
            (Steps{0, 1}));
}

TEST(TrainingSaturatedActivation, SigmoidRangeNaNAndNamesWithoutAFunction) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    // Sigmoid: 17 and -23 are outside (-23, 16.99999), 16.9 and -22.5 inside.
    w.step().f64("stack.0.sigmoid_input_0", {17, -23, 16.9, -22.5, 17, -23, 16.9, -22.5}, {2, 4});   // 50 %
    w.step().f64("stack.0.sigmoid_input_0", {17, -23, 17, -22.5, 17, -23, 17, -22.5}, {2, 4});       // 75 %
    w.step().f64("stack.0.Sigmoid_input_0", std::vector<double>(8, kNaN), {2, 4});                   // 100 %
    w.step().f64("layer.act_input_0", std::vector<double>(8, 100.0), {2, 4});                    // no function
    w.close();
  }
  auto s = training_run("SaturatedActivation", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{1}));
  EXPECT_EQ(evidence_at_step(s, 1)["layers"][0]["function"], "sigmoid");
  // Any case of the function's name; a selected tensor naming no function is skipped.
  EXPECT_EQ(trigger_steps(training_run("SaturatedActivation", dir.path(), {{"tensor_regex", "_input_0$"}})),
            (Steps{1, 2}));
  // collection_names adds a collection's tensors to the regex matches.
  ScratchDir coll;
  {
    TrainingWriter w(coll.path());
    w.step().f64("a.Sigmoid_input_0", std::vector<double>(8, 30.0), {2, 4}).f64("b.tanh_input_0", {0.0, 0.0}, {2, 1});
    w.close();
  }
  EXPECT_EQ(training_run("SaturatedActivation", coll.path(), {{"tensor_regex", "^b\\."}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  auto u = training_run("SaturatedActivation", coll.path(), {{"tensor_regex", "^b\\."}, {"collection_names", "default"}});
  EXPECT_EQ(trigger_steps(u), (Steps{0}));
  EXPECT_EQ(evidence_at_step(u, 0)["layers"][0]["tensor"], "a.Sigmoid_input_0");
}

// ---- PoorWeightInitialization ----

TEST(TrainingPoorWeightInitialization, ActivationVarianceRatio) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().f64("layer1.relu_input_0", {-1, 1, -1, 1}, {2, 2}).f64("layer2.relu_input_0", {-4, 4, -4, 4}, {2, 2});
    w.step().f64("layer1.relu_input_0", {0, 0, 0, 0}, {2, 2}).f64("layer2.relu_input_0", {-1, 1, -1, 1}, {2, 2});
    w.step().f64("layer1.relu_input_0", {0, 0, 0, 0}, {2, 2}).f64("layer2.relu_input_0", {3, 3, 3, 3}, {2, 2});
    w.step().f64("layer1.relu_input_0", {-4, 4, -4, 4}, {2, 2});  // one layer: no ratio
    w.step().f64("layer1.relu_input_0", {kNaN, 4, -4, 4}, {2, 2}).f64("layer2.relu_input_0", {0, 0, 0, 0}, {2, 2});
    w.close();
  }
  // Step 0: 16/1; step 1: 1/0 = inf fires; step 2: 0/0 is NaN; step 4: NaN variance.
  auto s = training_run("PoorWeightInitialization", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{0, 1}));
  auto e = evidence_at_step(s, 0)["checks"][0];
  EXPECT_EQ(e["check"], "activation_variance_ratio");
  EXPECT_EQ(e["ratio"], 16.0);
  EXPECT_EQ(e["max_variance_tensor"], "layer2.relu_input_0");
  EXPECT_EQ(e["min_variance_tensor"], "layer1.relu_input_0");
  EXPECT_EQ(evidence_at_step(s, 1)["checks"][0]["ratio_is_infinite"], true);
  EXPECT_EQ(trigger_steps(training_run("PoorWeightInitialization", dir.path(), {{"threshold", "16"}})), (Steps{1}));
  EXPECT_EQ(trigger_steps(training_run("PoorWeightInitialization", dir.path(), {{"threshold", "15.9"}})),
            (Steps{0, 1}));
}

TEST(TrainingPoorWeightInitialization, GradientSpreadOnlyDuringTheFirstSteps) {
  std::vector<float> ramp(21);
  for (int i = 0; i <= 20; ++i) ramp[size_t(i)] = float(i);  // p5 = 1, p95 = 19: spread 18
  const std::vector<float> flat(4, 0.5f);                      // spread 0
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (int s = 0; s < 15; ++s) {
      if (s < 12) w.step().f32("gradient/fc.weight", ramp, {21});
      else w.step().f32("gradient/fc.weight", flat, {4});
    }
    w.step().f32("gradient/fc.weight", {std::numeric_limits<float>::quiet_NaN(), 0, 0, 0}, {4});  // 15: NaN
    w.step(Mode::Eval).f64("labels", {1.0});  // 16: no gradient
    w.close();
  }
  EXPECT_EQ(training_run("PoorWeightInitialization", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  auto s = training_run("PoorWeightInitialization", dir.path(), {{"steps", "20"}});
  EXPECT_EQ(trigger_steps(s), (Steps{12, 13, 14}));
  auto e = evidence_at_step(s, 12)["checks"][0];
  EXPECT_EQ(e["check"], "gradient_distribution_range");
  EXPECT_EQ(e["tensor"], "gradient/fc.weight");
  EXPECT_EQ(e["p95_minus_p5"], 0.0);
  // Exactly at the range: strict.
  EXPECT_EQ(trigger_steps(training_run("PoorWeightInitialization", dir.path(), {{"distribution_range", "18"}})),
            Steps{});
  EXPECT_EQ(trigger_steps(training_run("PoorWeightInitialization", dir.path(), {{"distribution_range", "18.5"}})),
            training_range(0, 9));
}

TEST(TrainingPoorWeightInitialization, LossThatStopsDecreasing) {
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    const std::vector<double> train{1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95};
    for (size_t i = 0; i < train.size(); ++i) {
      w.step(Mode::Train).loss(train[i]);
      if (i == 3) w.step(Mode::Eval).loss(5.0);  // 4: EVAL losses do not count
    }
    w.close();
  }
  // TRAIN values since the lowest (0.9 at step 1): 5 at step 7 (global; step 4 is EVAL).
  auto s = training_run("PoorWeightInitialization", dir.path());
  EXPECT_EQ(trigger_steps(s), (Steps{7, 8}));
  auto e = evidence_at_step(s, 7)["checks"][0];
  EXPECT_EQ(e["check"], "loss_stall");
  EXPECT_EQ(e["lowest_loss"], 0.9);
  EXPECT_EQ(e["steps_without_new_lowest"], 5);
  EXPECT_EQ(trigger_steps(training_run("PoorWeightInitialization", dir.path(), {{"patience", "6"}})), (Steps{8}));
  EXPECT_EQ(trigger_steps(training_run("PoorWeightInitialization", dir.path(), {{"steps", "8"}})), (Steps{7}));
}

// ---- StalledTrainingRule ----

TEST(TrainingStalledTrainingRule, GapBetweenSavedStepsAboveThresholdStrictly) {
  // Wall times 1000, 1001, 1002, then 2000 (a 998 s gap after step 2), 2001.
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (double t : {1000.0, 1001.0, 1002.0, 2000.0, 2001.0}) {
      w.now = t;
      w.step().loss(1.0);
    }
    w.close();
  }
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  auto s = training_run("StalledTrainingRule", dir.path(), {{"threshold", "500"}});
  EXPECT_EQ(trigger_steps(s), (Steps{2}));
  auto e = evidence_at_step(s, 2);
  EXPECT_EQ(e["next_step"], 3);
  EXPECT_EQ(e["wall_time"], 1002.0);
  EXPECT_EQ(e["next_wall_time"], 2000.0);
  EXPECT_EQ(e["gap_seconds"], 998.0);
  EXPECT_EQ(e["stop_training_on_fire"], false);
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path(), {{"threshold", "998"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("StalledTrainingRule", dir.path(), {{"threshold", "997.5"}})), (Steps{2}));
  // Every gap of 1 s fires with a threshold below it; the last step (training ended) never does.
  EXPECT_EQ(trigger_steps(training_run("StalledTrainingRule", dir.path(), {{"threshold", "0.5"}})),
            (Steps{0, 1, 2, 3}));
  auto stop = training_run("StalledTrainingRule", dir.path(),
                           {{"threshold", "500"}, {"stop_training_on_fire", "True"}, {"training_job_name_prefix", "job"}});
  EXPECT_EQ(evidence_at_step(stop, 2)["stop_training"], "not run locally");
}

TEST(TrainingStalledTrainingRule, AStepIsSavedWhenItsLastRecordIsWritten) {
  // Step 0 writes records at 1000 and 1010, step 1 at 1015: the gap is 5 s, not 15 s.
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    w.step().loss(1.0);
    w.now = 1010.0;
    w.f64("fc.weight", {1.0, 2.0}, {2});
    w.now = 1015.0;
    w.step().loss(1.0);
    w.close();
  }
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path(), {{"threshold", "5"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(training_run("StalledTrainingRule", dir.path(), {{"threshold", "4.9"}})), (Steps{0}));
  // Any mode, any tensor; steps are global.
  ScratchDir modes;
  {
    TrainingWriter w(modes.path());
    w.step(Mode::Train).loss(1.0);
    w.now = 1100.0;
    w.step(Mode::Eval).f64("labels", {1.0, 0.0}, {2});
    w.close();
  }
  EXPECT_EQ(trigger_steps(training_run("StalledTrainingRule", modes.path(), {{"threshold", "60"}})), (Steps{0}));
}

TEST(TrainingStalledTrainingRule, WhileTrainingRunsTheLastStepIsMeasuredToNow) {
  // No end marker: the evaluator follows the trial and gives up after an idle timeout. The last step
  // was written long ago (wall time 1001 s after the epoch): it fires; written now: it does not.
  evaluate::EvaluatorOptions options;
  options.idle_timeout = std::chrono::milliseconds(300);
  ScratchDir old_run;
  {
    TrainingWriter w(old_run.path(), /*end_marker=*/false);
    w.step().loss(1.0);
    w.now = 1001.0;
    w.step().loss(1.0);
    w.close();
  }
  auto s = training_run("StalledTrainingRule", old_run.path(), {}, options);
  EXPECT_EQ(trigger_steps(s), (Steps{1}));
  EXPECT_TRUE(evidence_at_step(s, 1)["next_step"].is_null());
  EXPECT_GT(evidence_at_step(s, 1)["gap_seconds"].get<double>(), 1e9);
  ScratchDir fresh;
  {
    TrainingWriter w(fresh.path(), /*end_marker=*/false, /*real_clock=*/true);
    w.step().loss(1.0).step().loss(1.0);
    w.close();
  }
  EXPECT_EQ(training_run("StalledTrainingRule", fresh.path(), {}, options).status,
            RuleEvaluationStatus::NoIssuesFound);
}

TEST(TrainingStalledTrainingRule, RelativeThresholdAgainstTheMedianIntervalWithAFloor) {
  // Steps every 0.125 s, and a 20 s gap after step 20 (20 intervals known by then) and one after
  // step 5 (5 intervals: fewer than the 10 the median needs).
  ScratchDir dir;
  {
    TrainingWriter w(dir.path());
    for (int64_t s = 0; s <= 30; ++s) {
      w.step().loss(1.0);
      w.now += (s == 5 || s == 20) ? 20.0 : 0.125;
    }
    w.close();
  }
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path()).status, RuleEvaluationStatus::NoIssuesFound);
  auto s = training_run("StalledTrainingRule", dir.path(), {{"relative_threshold", "100"}});  // 12.5 s
  EXPECT_EQ(trigger_steps(s), (Steps{20}));
  auto e = evidence_at_step(s, 20);
  EXPECT_EQ(e["gap_seconds"], 20.0);
  EXPECT_EQ(e["median_interval_seconds"], 0.125);
  EXPECT_EQ(e["intervals"], 20);  // the one after step 5 is among them
  EXPECT_EQ(e["relative_limit_seconds"], 12.5);
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path(), {{"relative_threshold", "160"}}).status,
            RuleEvaluationStatus::NoIssuesFound);  // exactly 20 s: strict
  EXPECT_EQ(trigger_steps(training_run("StalledTrainingRule", dir.path(), {{"relative_threshold", "159"}})),
            (Steps{20}));
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path(),
                         {{"relative_threshold", "100"}, {"relative_threshold_floor", "30"}})
                .status,
            RuleEvaluationStatus::NoIssuesFound);
  // The absolute threshold still applies, before 10 intervals too.
  EXPECT_EQ(trigger_steps(training_run("StalledTrainingRule", dir.path(),
                                       {{"relative_threshold", "100"}, {"threshold", "19"}})),
            (Steps{5, 20}));
}

TEST(TrainingStalledTrainingRule, FiresFromAWallClockTickWhileTheJobIsStalled) {
  // A live job (no end marker) saves 12 steps in real time and then nothing: in the calibrated
  // profile the stall limit is the 1 s floor (1000 median intervals of a few microseconds), so the
  // evaluator's ticks (ABI 1.2 invoke_at_time) report it at the last step well before the idle timeout.
  ScratchDir dir;
  {
    TrainingWriter w(dir.path(), /*end_marker=*/false, /*real_clock=*/true);
    for (int i = 0; i < 12; ++i) w.step().loss(1.0);
    w.close();
  }
  evaluate::EvaluatorOptions options;
  options.idle_timeout = std::chrono::milliseconds(3000);
  options.tick_interval = std::chrono::milliseconds(100);
  const auto started = std::chrono::steady_clock::now();
  auto s = training_run("StalledTrainingRule", dir.path(), {{"vigil_profile", "calibrated"}}, options);
  EXPECT_EQ(trigger_steps(s), (Steps{11}));  // once, however many ticks saw the stall
  EXPECT_GE(evidence_at_step(s, 11)["gap_seconds"].get<double>(), 1.0);
  EXPECT_TRUE(evidence_at_step(s, 11)["next_step"].is_null());
  EXPECT_EQ(s.profile, "calibrated");
  // The same trial with SageMaker's 1800 s: the ticks find no stall, and the idle timeout ends it.
  options.idle_timeout = std::chrono::milliseconds(1500);
  EXPECT_EQ(training_run("StalledTrainingRule", dir.path(), {}, options).status, RuleEvaluationStatus::NoIssuesFound);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

// ---- the labelled pathology runs, exactly ----

// pathology_test.cpp checks the first trigger of every rule; here every trigger step of this
// family's rules must be the labelled one, for the default parameters, the labels' other
// configurations, the would-fire parameters, and LossNotDecreasing's mode readings (a parameter).
TEST(TrainingPathologyLabels, ExactTriggerStepsOnEveryRun) {
  const fs::path runs = fs::path(VIGIL_SHARED_DIR) / "fixtures" / "pathologies";
  const std::vector<std::string> rules = {"LossNotDecreasing", "Overfit", "Overtraining", "DeadRelu",
                                          "SaturatedActivation", "PoorWeightInitialization", "StalledTrainingRule"};
  auto as_params = [](const nlohmann::json& j) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : j.items()) {
      if (v.is_null()) continue;
      if (v.is_boolean()) out[k] = v.get<bool>() ? "True" : "False";
      else if (v.is_string()) out[k] = v.get<std::string>();
      else out[k] = v.dump();
    }
    return out;
  };
  // A label's verdict: its trigger steps, or (where it lists none) its first, last and count.
  auto matches = [](const Steps& got, const nlohmann::json& j) {
    if (j.contains("trigger_steps") && j["trigger_steps"].is_array()) return got == j["trigger_steps"].get<Steps>();
    if (j.value("expected", "") != "fire") return got.empty();
    return !got.empty() && got.front() == j["first_trigger_step"].get<int64_t>() &&
           got.back() == j["last_trigger_step"].get<int64_t>() && got.size() == j["n_trigger_steps"].get<size_t>();
  };
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(runs)) {
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".label.json")) continue;
    std::ifstream in(entry.path());
    const auto label = nlohmann::json::parse(in);
    const fs::path trial = runs / label["run"].get<std::string>();
    for (const auto& rule : rules) {
      const auto& v = label["rules"][rule];
      const auto base = as_params(v["params"]);
      EXPECT_TRUE(matches(trigger_steps(training_run(rule, trial, base)), v)) << file << " " << rule;
      ++checked;
      if (v.contains("other_configs"))
        for (const auto& [name, oc] : v["other_configs"].items()) {
          auto params = base;
          for (const auto& [k, val] : as_params(oc["params"])) params[k] = val;
          EXPECT_TRUE(matches(trigger_steps(training_run(rule, trial, params)), oc)) << file << " " << rule << " " << name;
          ++checked;
        }
      if (v.contains("would_fire_with") && v["would_fire_with"].is_object()) {
        const auto& wf = v["would_fire_with"];
        auto params = base;
        for (const auto& [k, val] : as_params(wf["params"])) params[k] = val;
        const auto got = trigger_steps(training_run(rule, trial, params));
        ASSERT_FALSE(got.empty()) << file << " " << rule << " would_fire_with";
        EXPECT_EQ(got.front(), wf["first_trigger_step"].get<int64_t>()) << file << " " << rule;
        EXPECT_EQ(got.size(), wf["n_trigger_steps"].get<size_t>()) << file << " " << rule;
        ++checked;
      }
      if (rule == "LossNotDecreasing")
        for (const std::string mode : {"TRAIN", "GLOBAL"}) {
          auto params = base;
          params["mode"] = mode;
          EXPECT_TRUE(matches(trigger_steps(training_run(rule, trial, params)),
                              v["interpretation_variants"]["mode=" + mode]))
              << file << " mode " << mode;
          ++checked;
        }
    }
  }
  EXPECT_EQ(checked, 20 * 7 + 20 + 6 + 40);  // runs x rules, Stalled's threshold=3s, would-fire, modes
}

}  // namespace
}  // namespace vigil
