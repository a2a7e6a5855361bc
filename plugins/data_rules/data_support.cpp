// Helpers of the data rules: every worker's value, label/prediction pairs, evidence numbers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "data_rules.h"

namespace vigil::builtin::data {

sdk::Result<std::vector<WorkerValue>> read_workers(const sdk::Trial& trial, const std::string& name,
                                                   vigil_step step) {
  const sdk::Tensor tensor = trial.tensor(name);
  VIGIL_TRY(const auto workers, tensor.workers(step));
  std::vector<WorkerValue> out;
  for (const std::string& worker : workers) {
    auto view = tensor.value(step, VIGIL_MODE_GLOBAL, worker);
    if (!view) {
      if (view.error().is_skip()) continue;
      return sdk::fail(std::move(view).error());
    }
    VIGIL_TRY(auto values, view->to_doubles());
    const auto shape = view->shape();
    out.push_back(WorkerValue{worker, std::move(values), std::vector<int64_t>(shape.begin(), shape.end())});
  }
  if (out.empty()) return sdk::fail(sdk::Error::tensor_unavailable_for_step(name, step));
  return out;
}

sdk::Result<std::vector<LabelPredictionPair>> read_pairs(const sdk::Trial& trial, std::vector<std::string> label_names,
                                                         std::vector<std::string> prediction_names, vigil_step step) {
  std::sort(label_names.begin(), label_names.end());
  std::sort(prediction_names.begin(), prediction_names.end());
  std::vector<LabelPredictionPair> out;
  const size_t n = std::min(label_names.size(), prediction_names.size());
  for (size_t p = 0; p < n; ++p) {
    auto labels = read_workers(trial, label_names[p], step);
    if (!labels) {
      if (labels.error().is_skip()) continue;
      return sdk::fail(std::move(labels).error());
    }
    auto predictions = read_workers(trial, prediction_names[p], step);
    if (!predictions) {
      if (predictions.error().is_skip()) continue;
      return sdk::fail(std::move(predictions).error());
    }
    for (WorkerValue& l : *labels)
      for (WorkerValue& pr : *predictions)
        if (pr.worker == l.worker)
          out.push_back(LabelPredictionPair{label_names[p], prediction_names[p], std::move(l), std::move(pr)});
  }
  if (out.empty())
    return sdk::fail(sdk::Error::tensor_unavailable_for_step(
        label_names.empty() ? std::string("labels") : label_names.front(), step));
  return out;
}

namespace {

// np.argmax over the last axis: the first maximum of each row; a NaN wins (numpy treats it as the
// maximum and stops at the first one).
sdk::Result<std::vector<double>> argmax_last_axis(const WorkerValue& v, const std::string& tensor) {
  const int64_t k = v.shape.empty() ? 1 : v.shape.back();
  if (k <= 0) return sdk::fail(sdk::Error::invalid_argument(fmt::format("argmax of {}: the last axis is empty", tensor)));
  std::vector<double> out;
  out.reserve(v.values.size() / static_cast<size_t>(k));
  for (size_t row = 0; row + static_cast<size_t>(k) <= v.values.size(); row += static_cast<size_t>(k)) {
    size_t best = 0;
    for (size_t j = 0; j < static_cast<size_t>(k); ++j) {
      const double x = v.values[row + j];
      if (std::isnan(x)) {
        best = j;
        break;
      }
      if (x > v.values[row + best]) best = j;
    }
    out.push_back(static_cast<double>(best));
  }
  return out;
}

}  // namespace

sdk::Result<std::vector<double>> predicted_classes(const WorkerValue& predictions, size_t label_count, bool argmax,
                                                   bool interpret, const std::string& tensor) {
  if (argmax) return argmax_last_axis(predictions, tensor);
  if (!interpret) return predictions.values;
  const int64_t columns = predictions.shape.size() >= 2 ? predictions.shape.back() : 1;
  if (columns >= 2 && predictions.values.size() == label_count * static_cast<size_t>(columns))
    return argmax_last_axis(predictions, tensor);  // per-class scores or probabilities
  if (predictions.values.size() != label_count) return predictions.values;  // the caller reports the mismatch
  bool integral = true, probabilities = true;
  for (double p : predictions.values) {
    if (std::isnan(p)) continue;  // stays NaN: never a class
    integral = integral && p == std::trunc(p);
    probabilities = probabilities && p >= 0 && p <= 1;
  }
  if (integral || !probabilities) return predictions.values;
  std::vector<double> out;
  out.reserve(predictions.values.size());
  for (double p : predictions.values) out.push_back(std::isnan(p) ? p : (p > 0.5 ? 1.0 : 0.0));
  return out;
}

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::regex compile_param_regex(const std::string& param, const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw sdk::SMDebugValueError(fmt::format("parameter {}: '{}' is not a valid regular expression ({})", param,
                                             pattern, e.what()));
  }
}

}  // namespace vigil::builtin::data
