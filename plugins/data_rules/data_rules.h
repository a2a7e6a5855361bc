// The "data" family of built-in rules: ClassImbalance, Confusion, CheckInputImages and
// NLPSequenceRatio (shared/spec/builtin-rules.md §2.14, §2.15, §2.18, §2.19). Built with the SDK
// only; registered in plugin.cpp.
#pragma once

#include <vigil/sdk.hpp>

#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace vigil::builtin::data {

namespace sdk = vigil::sdk;

// One worker's saved value, converted to double (exact for the class ids and token ids these rules
// read), with its shape.
struct WorkerValue {
  std::string worker;
  std::vector<double> values;
  std::vector<int64_t> shape;
};

// Every worker's value of `name` at global step `step`, in the host's worker order. Workers whose
// value cannot be read for a "skip" reason (only reductions saved, ...) are left out;
// TensorUnavailableForStep when no worker has a value.
sdk::Result<std::vector<WorkerValue>> read_workers(const sdk::Trial& trial, const std::string& name, vigil_step step);

// One worker's labels and predictions at a step (builtin-rules.md §2.14, §2.15).
struct LabelPredictionPair {
  std::string label_tensor, prediction_tensor;
  WorkerValue labels, predictions;
};

// Pairs label tensors with prediction tensors in name order, as Python's zip (the longer list's
// extra tensors are ignored), and each worker's labels with the same worker's predictions. Pairs
// whose values cannot be read for a "skip" reason are left out; TensorUnavailableForStep when none
// is left.
sdk::Result<std::vector<LabelPredictionPair>> read_pairs(const sdk::Trial& trial, std::vector<std::string> label_names,
                                                         std::vector<std::string> prediction_names, vigil_step step);

// The class each prediction names (builtin-rules.md §2.14, §2.15). With `argmax`, the argmax over
// the last axis (ClassImbalance's SageMaker parameter). With `interpret` (the calibrated profile's
// interpret_predictions), by the tensor's shape and range: a matrix of n rows and k >= 2 columns for
// n labels is argmax'd over its last axis; n values that are not all integral but all lie in [0, 1]
// (one column of probabilities, as binary:logistic gives) are thresholded at 0.5; anything else
// (class indices) is used as it is. Without either, the values as they are.
sdk::Result<std::vector<double>> predicted_classes(const WorkerValue& predictions, size_t label_count, bool argmax,
                                                   bool interpret, const std::string& tensor);

// The description of interpret_predictions, shared by the rules that have it.
inline constexpr char kInterpretPredictionsDoc[] =
    "Read the predictions by their shape and range: argmax over the last axis of an (n, k) matrix, 0.5 "
    "threshold for one column of probabilities, class indices as they are (a Vigil addition).";

using sdk::json_string_array;

// Python's str() of a number as it reads in evidence: "3" for integral values, else the shortest
// round-trip form; "nan", "inf", "-inf" for the rest.
std::string number_text(double v);

// Compiles a parameter's regex as the host does (ECMAScript); SMDebugValueError naming the parameter.
std::regex compile_param_regex(const std::string& param, const std::string& pattern);

// ---------------------------------------------------------------------------------------------
// ClassImbalance (§2.14)

class ClassImbalance final : public sdk::Rule {
 public:
  static constexpr const char* kMispredictionClasses[] = {"all", "underrepresented", nullptr};
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold_imbalance", "10",
                        "Fires when the largest class count divided by the smallest exceeds this.")
          .min(0),
      sdk::param_double("threshold_misprediction", "0.7",
                        "Fires when the share of a class's labels that were mispredicted exceeds this fraction.")
          .range(0, 1),
      sdk::param_int("samples", "500", "Labels to accumulate before the rule judges anything.").min(1),
      sdk::param_bool("argmax", "False", "Take the argmax over the last axis of the predictions first."),
      sdk::param_regex("labels_regex", ".*labels", "Tensors holding the labels (re.search)."),
      sdk::param_regex("predictions_regex", ".*predictions", "Tensors holding the predictions (re.search)."),
      sdk::param_bool("interpret_predictions", "False", kInterpretPredictionsDoc).calibrated("True"),
      sdk::param_enum("misprediction_classes", kMispredictionClasses, "all",
                      "Classes checked against threshold_misprediction: all, or only the underrepresented "
                      "ones (fewer labels than half a balanced share) (a Vigil addition).")
          .calibrated("underrepresented"),
      sdk::param_double("confidence", "0",
                        "One-sided confidence of the Wilson lower bound a misprediction rate must exceed "
                        "threshold_misprediction with; 0: the rate itself (a Vigil addition).")
          .range(0, 0.9999)
          .calibrated("0.95"),
  };

  explicit ClassImbalance(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct Counts {
    int64_t labels = 0;
    int64_t mispredicted = 0;
  };
  double threshold_imbalance_;
  double threshold_misprediction_;
  int64_t samples_;
  bool argmax_;
  bool interpret_predictions_;
  bool underrepresented_only_;
  double z_;  // of `confidence`
  std::string labels_regex_;
  std::string predictions_regex_;
  // Per class (label value); NaN labels are one class of their own (np.unique groups NaNs).
  std::map<double, Counts> classes_;
  Counts nan_class_;
  int64_t seen_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Confusion (§2.15)

class Confusion final : public sdk::Rule {
 public:
  static constexpr const char* kCriteria[] = {"column_shares", "pair_informedness", nullptr};
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_int("category_no", nullptr,
                     "Number of classes; unset: max(max(labels), max(predictions)) + 1 at each step.")
          .min(2),
      sdk::param_string("labels", "labels", "Name of the labels tensor."),
      sdk::param_string("predictions", "predictions", "Name of the predictions tensor."),
      sdk::param_string("labels_collection", "labels",
                        "Collection whose tensors are the labels when no tensor is named `labels`."),
      sdk::param_string("predictions_collection", "predictions",
                        "Collection whose tensors are the predictions when no tensor is named `predictions`."),
      sdk::param_double("min_diag", "0.9", "Fires when a column's diagonal share is below this.").range(0, 1),
      sdk::param_double("max_off_diag", "0.1", "Fires when a column's off-diagonal share exceeds this.").range(0, 1),
      sdk::param_bool("interpret_predictions", "False", kInterpretPredictionsDoc).calibrated("True"),
      sdk::param_enum("criterion", kCriteria, "column_shares",
                      "column_shares: min_diag and max_off_diag per predicted class; pair_informedness: "
                      "max_informedness per pair of classes (a Vigil addition).")
          .calibrated("pair_informedness"),
      sdk::param_double("max_informedness", "0.25",
                        "pair_informedness fires when a pair's informedness (0: chance, 1: perfectly told "
                        "apart) is below this (a Vigil addition).")
          .range(-1, 1),
      sdk::param_int("window", "1", "Evaluations (steps with labels) pooled into the matrix judged (a Vigil addition).")
          .min(1)
          .calibrated("8"),
      sdk::param_int("min_support", "0",
                     "Labels a column (column_shares), or each class of a pair (pair_informedness), needs in "
                     "the pooled matrix to be judged (a Vigil addition).")
          .min(0)
          .calibrated("30"),
      sdk::param_double("confidence", "0",
                        "One-sided confidence of the bounds compared with the thresholds; 0: the point "
                        "estimates (a Vigil addition).")
          .range(0, 0.9999)
          .calibrated("0.95"),
  };

  explicit Confusion(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  // One evaluation's (or the pooled) matrix, keyed (prediction, label) so that each column's cells
  // are adjacent and a large category_no costs nothing.
  struct MatrixCounts {
    std::map<std::pair<int64_t, int64_t>, int64_t> cells;
    int64_t total = 0, correct = 0;
  };
  // Each fills `evidence` with what it found and says whether the rule fires; nullopt when no
  // column or pair had the support to be judged.
  std::optional<bool> judge_columns(vigil_step step, const MatrixCounts& m, sdk::JsonObject& evidence) const;
  std::optional<bool> judge_pairs(vigil_step step, const MatrixCounts& m, sdk::JsonObject& evidence) const;

  // The tensors that play one role at `step`: the named tensor if the trial has it, else the
  // collection's tensors saved at `step`, in name order.
  sdk::Result<std::vector<std::string>> role_tensors(const std::string& name, const std::string& collection,
                                                     vigil_step step) const;

  std::optional<int64_t> category_no_;
  std::string labels_, predictions_, labels_collection_, predictions_collection_;
  double min_diag_, max_off_diag_;
  bool interpret_predictions_;
  bool pair_criterion_;
  double max_informedness_;
  int64_t window_, min_support_;
  double z_;  // of `confidence`
  std::deque<MatrixCounts> recent_;  // the last `window` evaluations, newest last
};

// ---------------------------------------------------------------------------------------------
// CheckInputImages (§2.18)

class CheckInputImages final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold_mean", "0.2", "Fires when the absolute mean of a channel exceeds this.").min(0),
      sdk::param_int("threshold_samples", "500", "Images to accumulate before the rule judges anything.").min(1),
      sdk::param_regex("regex", ".*hybridsequential0_input_0", "Tensors holding the input images (re.search)."),
      sdk::param_int("channel", "1", "Axis of the colour channel (negative counts from the end, as numpy)."),
  };

  explicit CheckInputImages(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct Stream {
    int64_t samples = 0;
    std::vector<double> sums;
    std::vector<int64_t> counts;
  };
  double threshold_mean_;
  int64_t threshold_samples_;
  std::string regex_;
  int64_t channel_;
  std::map<std::string, Stream> streams_;  // per tensor name, all workers pooled
};

// ---------------------------------------------------------------------------------------------
// NLPSequenceRatio (§2.19)

class NLPSequenceRatio final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("tensor_regex", ".*embedding0_input_0",
                             "Tensors holding the token ids (comma-separated regexes, re.search)."),
      sdk::param_string_list("token_values", "0", "Token ids to count (comma-separated numbers)."),
      sdk::param_string_list("token_thresholds_percent", "50",
                             "Per token id, the percentage of a tensor's elements above which the rule fires."),
  };

  explicit NLPSequenceRatio(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  std::vector<std::string> regexes_;
  std::vector<std::pair<double, double>> tokens_;  // (token id, threshold percent)
};

}  // namespace vigil::builtin::data
