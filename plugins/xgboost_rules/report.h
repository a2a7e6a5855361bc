// CreateXgboostReport's model: what the rule collects from the trial, the analyses it derives, and
// the self-contained HTML page (inline SVG plots, no script, no external resource) it renders.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil::builtin::xgboost {

enum class Task { Unknown, Binary, Multiclass, Regression };

// What the rule has collected so far.
struct ReportData {
  std::string configuration_name;
  std::vector<int64_t> steps;  // steps with any data, ascending
  // hyperparameters/<name> -> value as text (the latest saved).
  std::map<std::string, std::string> hyperparameters;
  // metric name (train-rmse, validation-auc, ...) -> (step, value).
  std::map<std::string, std::vector<std::pair<int64_t, double>>> metrics;
  // feature_importance/<type>/<feature>: type -> feature -> value, at importance_step (the latest).
  int64_t importance_step = -1;
  std::map<std::string, std::map<std::string, double>> importance;
  // The latest step's validation labels and predictions.
  int64_t lp_step = -1;
  std::vector<double> labels;
  std::vector<double> predictions;
  std::vector<int64_t> prediction_shape;
  // Classification: class -> (step, share of that class's labels predicted right).
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> class_accuracy;
};

struct TaskInfo {
  Task task = Task::Unknown;
  std::string reason;  // "objective binary:logistic", "inferred: ..."
};

// From hyperparameters/objective when saved, else from the labels and predictions.
TaskInfo detect_task(const std::map<std::string, std::string>& hyperparameters, const std::vector<double>& labels,
                     const std::vector<double>& predictions, const std::vector<int64_t>& prediction_shape);

// Classification: one predicted class per label (argmax of per-class scores; p > 0.5 for binary
// probabilities; the value itself for class ids); -1 where no class can be read (NaN).
std::vector<int64_t> predicted_classes(Task task, const std::vector<double>& predictions,
                                       const std::vector<int64_t>& prediction_shape, size_t count);

// Binary classification: the score of class 1 per label (the value, or column 1 of two columns).
std::vector<double> positive_scores(const std::vector<double>& predictions, const std::vector<int64_t>& prediction_shape,
                                    size_t count);

// np.histogram(v, bins): counts over `bins` equal-width bins of [min, max] (last bin closed; a single
// value v gives [v - 0.5, v + 0.5]); non-finite values are left out. Returns (edges, counts).
std::pair<std::vector<double>, std::vector<int64_t>> histogram(const std::vector<double>& values, int bins);

struct RocCurve {
  std::vector<std::pair<double, double>> points;  // (false positive rate, true positive rate) from (0, 0)
  double auc = 0;
  int64_t positives = 0, negatives = 0;
};
// sklearn's roc_curve/auc: one point per distinct score, trapezoidal area. Pairs with a NaN score
// are left out.
std::optional<RocCurve> roc_curve(const std::vector<double>& labels, const std::vector<double>& scores);

// The whole page.
std::string render_report(const ReportData& data);

// Text helpers shared with the charts.
std::string html_escape(const std::string& text);
std::string format_number(double v);  // 6 significant digits, "nan"/"inf" as such

}  // namespace vigil::builtin::xgboost
