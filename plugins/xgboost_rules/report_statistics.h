// CreateXgboostReport's analyses, apart from the page that shows them: the task, predicted classes,
// the confusion matrix, histograms, ROC curves and residuals, each matching the numpy/sklearn
// function it stands in for.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "statistics.h"

namespace vigil::builtin::xgboost {

enum class Task { Unknown, Binary, Multiclass, Regression };

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

// np.histogram(v, bins) (plugins/rule_support/statistics.h).
using builtin::histogram;

struct RocCurve {
  std::vector<std::pair<double, double>> points;  // (false positive rate, true positive rate) from (0, 0)
  double auc = 0;
  int64_t positives = 0, negatives = 0;
};
// sklearn's roc_curve/auc: one point per distinct score, trapezoidal area. Pairs with a NaN score
// are left out.
std::optional<RocCurve> roc_curve(const std::vector<double>& labels, const std::vector<double>& scores);

// A label as a class id: the non-negative integral value, else -1.
int64_t class_of_label(double v);

struct Classification {
  std::vector<int64_t> classes;                // every class seen in labels or predictions, ascending
  std::vector<std::vector<int64_t>> matrix;    // [label index][prediction index]
  int64_t total = 0, correct = 0;
};
// The confusion matrix of the predicted classes against the labels (empty when the sizes differ).
Classification classify(const std::vector<double>& labels, const std::vector<double>& predictions,
                        const std::vector<int64_t>& prediction_shape, Task task);

// label - prediction per sample (empty when the sizes differ).
std::vector<double> residuals(const std::vector<double>& labels, const std::vector<double>& predictions);

}  // namespace vigil::builtin::xgboost
