#include "report_statistics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <vigil/sdk/text.hpp>

namespace vigil::builtin::xgboost {

namespace {

using sdk::lower;

bool is_integral(double v) { return std::isfinite(v) && v == std::trunc(v); }

}  // namespace

int64_t class_of_label(double v) { return is_integral(v) && v >= 0 ? static_cast<int64_t>(v) : -1; }

TaskInfo detect_task(const std::map<std::string, std::string>& hyperparameters, const std::vector<double>& labels,
                     const std::vector<double>& predictions, const std::vector<int64_t>& prediction_shape) {
  if (auto it = hyperparameters.find("objective"); it != hyperparameters.end()) {
    std::string o = lower(it->second);
    o.erase(std::remove_if(o.begin(), o.end(), [](char c) { return c == '"' || c == '\'' || std::isspace(static_cast<unsigned char>(c)); }),
            o.end());
    const std::string reason = "objective " + it->second;
    if (o.starts_with("binary:")) return {Task::Binary, reason};
    if (o.starts_with("multi:")) return {Task::Multiclass, reason};
    if (o.starts_with("reg:") || o.starts_with("count:") || o.starts_with("survival:") || o.starts_with("rank:"))
      return {Task::Regression, reason};
  }
  if (labels.empty() || predictions.empty()) return {Task::Unknown, "no labels and predictions saved"};
  if (prediction_shape.size() == 2 && prediction_shape[1] > 1)
    return {Task::Multiclass, "inferred: the predictions hold per-class scores"};
  const bool class_labels = std::all_of(labels.begin(), labels.end(), [](double v) { return is_integral(v) && v >= 0; });
  if (class_labels) {
    const bool binary_labels = std::all_of(labels.begin(), labels.end(), [](double v) { return v == 0 || v == 1; });
    const bool probabilities =
        std::all_of(predictions.begin(), predictions.end(), [](double v) { return !std::isfinite(v) || (v >= 0 && v <= 1); });
    if (binary_labels && probabilities) return {Task::Binary, "inferred: 0/1 labels and predictions in [0, 1]"};
    const bool class_predictions = std::all_of(predictions.begin(), predictions.end(),
                                               [](double v) { return !std::isfinite(v) || (is_integral(v) && v >= 0); });
    if (class_predictions) return {Task::Multiclass, "inferred: class ids in labels and predictions"};
  }
  return {Task::Regression, "inferred: continuous labels or predictions"};
}

std::vector<int64_t> predicted_classes(Task task, const std::vector<double>& predictions,
                                       const std::vector<int64_t>& prediction_shape, size_t count) {
  std::vector<int64_t> out;
  if (prediction_shape.size() == 2 && prediction_shape[1] > 1) {
    const auto k = static_cast<size_t>(prediction_shape[1]);
    if (predictions.size() != count * k) return {};
    for (size_t row = 0; row < count; ++row) {
      int64_t best = 0;
      for (size_t j = 0; j < k; ++j) {
        const double v = predictions[row * k + j];
        if (std::isnan(v)) {
          best = -1;
          break;
        }
        if (v > predictions[row * k + static_cast<size_t>(best)]) best = static_cast<int64_t>(j);
      }
      out.push_back(best);
    }
    return out;
  }
  if (predictions.size() != count) return {};
  for (double v : predictions) {
    if (task == Task::Binary) out.push_back(std::isnan(v) ? -1 : v > 0.5 ? 1 : 0);
    else out.push_back(class_of_label(v));
  }
  return out;
}

std::vector<double> positive_scores(const std::vector<double>& predictions, const std::vector<int64_t>& prediction_shape,
                                    size_t count) {
  if (prediction_shape.size() == 2 && prediction_shape[1] == 2 && predictions.size() == 2 * count) {
    std::vector<double> out;
    for (size_t i = 0; i < count; ++i) out.push_back(predictions[2 * i + 1]);
    return out;
  }
  if (prediction_shape.size() <= 1 && predictions.size() == count) return predictions;
  return {};
}

std::optional<RocCurve> roc_curve(const std::vector<double>& labels, const std::vector<double>& scores) {
  std::vector<std::pair<double, bool>> pairs;  // (score, positive)
  for (size_t i = 0; i < labels.size() && i < scores.size(); ++i) {
    if (std::isnan(scores[i]) || !(labels[i] == 0 || labels[i] == 1)) continue;
    pairs.emplace_back(scores[i], labels[i] == 1);
  }
  RocCurve roc;
  for (const auto& [s, positive] : pairs) (positive ? roc.positives : roc.negatives) += 1;
  if (roc.positives == 0 || roc.negatives == 0) return std::nullopt;
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  int64_t tp = 0, fp = 0;
  roc.points.emplace_back(0.0, 0.0);
  for (size_t i = 0; i < pairs.size(); ++i) {
    (pairs[i].second ? tp : fp) += 1;
    if (i + 1 < pairs.size() && pairs[i + 1].first == pairs[i].first) continue;  // one point per distinct score
    roc.points.emplace_back(static_cast<double>(fp) / static_cast<double>(roc.negatives),
                            static_cast<double>(tp) / static_cast<double>(roc.positives));
  }
  for (size_t i = 1; i < roc.points.size(); ++i)
    roc.auc += (roc.points[i].first - roc.points[i - 1].first) * (roc.points[i].second + roc.points[i - 1].second) / 2;
  return roc;
}

Classification classify(const std::vector<double>& labels, const std::vector<double>& predictions,
                        const std::vector<int64_t>& prediction_shape, Task task) {
  Classification c;
  const auto predicted = predicted_classes(task, predictions, prediction_shape, labels.size());
  if (predicted.size() != labels.size()) return c;
  std::set<int64_t> seen;
  for (size_t i = 0; i < labels.size(); ++i) seen.insert(class_of_label(labels[i])), seen.insert(predicted[i]);
  c.classes.assign(seen.begin(), seen.end());
  const auto index = [&](int64_t cls) {
    return static_cast<size_t>(std::lower_bound(c.classes.begin(), c.classes.end(), cls) - c.classes.begin());
  };
  c.matrix.assign(c.classes.size(), std::vector<int64_t>(c.classes.size(), 0));
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t y = class_of_label(labels[i]);
    ++c.matrix[index(y)][index(predicted[i])];
    c.correct += y >= 0 && y == predicted[i];
  }
  c.total = static_cast<int64_t>(labels.size());
  return c;
}

std::vector<double> residuals(const std::vector<double>& labels, const std::vector<double>& predictions) {
  std::vector<double> r;
  if (predictions.size() != labels.size()) return r;
  for (size_t i = 0; i < labels.size(); ++i) r.push_back(labels[i] - predictions[i]);
  return r;
}

}  // namespace vigil::builtin::xgboost
