// The "data" family of built-in rules: ClassImbalance, Confusion, CheckInputImages and
// NLPSequenceRatio (shared/spec/builtin-rules.md §2.14, §2.15, §2.18, §2.19). Built with the SDK
// only; registered in plugin.cpp.
#pragma once

#include <vigil/sdk.hpp>

#include <cmath>
#include <cstdint>
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
  };

  explicit Confusion(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  // The tensors that play one role at `step`: the named tensor if the trial has it, else the
  // collection's tensors saved at `step`, in name order.
  sdk::Result<std::vector<std::string>> role_tensors(const std::string& name, const std::string& collection,
                                                     vigil_step step) const;

  std::optional<int64_t> category_no_;
  std::string labels_, predictions_, labels_collection_, predictions_collection_;
  double min_diag_, max_off_diag_;
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
