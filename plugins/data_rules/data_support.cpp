// Helpers of the data rules: every worker's value, label/prediction pairs, evidence numbers.
#include <fmt/format.h>

#include <algorithm>

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
