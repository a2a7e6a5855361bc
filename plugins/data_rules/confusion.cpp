// Confusion (builtin-rules.md §2.15): the confusion matrix of one step's labels and predictions,
// normalised per predicted class (column).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "data_rules.h"

namespace vigil::builtin::data {

namespace {

// Violating columns listed in the evidence (the count is always given).
constexpr size_t kMaxColumnsInEvidence = 20;

// A class index: a finite, non-negative integral value (numpy would fail to index with anything else).
bool is_class_index(double v) { return std::isfinite(v) && v >= 0 && v == std::trunc(v) && v < 9.0e15; }

}  // namespace

Confusion::Confusion(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      labels_(params().get_string("labels")),
      predictions_(params().get_string("predictions")),
      labels_collection_(params().get_string("labels_collection")),
      predictions_collection_(params().get_string("predictions_collection")),
      min_diag_(params().get_double("min_diag")),
      max_off_diag_(params().get_double("max_off_diag")) {
  if (params().is_set("category_no")) category_no_ = params().get_int("category_no");
}

sdk::Result<std::vector<std::string>> Confusion::role_tensors(const std::string& name, const std::string& collection,
                                                              vigil_step step) const {
  VIGIL_TRY(const bool named, base_trial().has_tensor(name));
  if (named) return std::vector<std::string>{name};
  VIGIL_TRY(auto names, base_trial().tensor_names({.step = step, .collection = collection}));
  if (names.empty()) return sdk::fail(sdk::Error::tensor_unavailable_for_step(name, step));
  return names;
}

sdk::Result<bool> Confusion::invoke_at_step(vigil_step step) {
  VIGIL_TRY(auto label_names, role_tensors(labels_, labels_collection_, step));
  VIGIL_TRY(auto prediction_names, role_tensors(predictions_, predictions_collection_, step));
  VIGIL_TRY(const auto pairs, read_pairs(base_trial(), std::move(label_names), std::move(prediction_names), step));

  // Sparse matrix keyed (prediction, label), so that each column's cells are adjacent and a large
  // category_no costs nothing.
  std::map<std::pair<int64_t, int64_t>, int64_t> cells;
  std::map<int64_t, int64_t> column_sums;
  int64_t largest = -1, total = 0, correct = 0;
  std::vector<std::string> used_labels, used_predictions;
  for (const LabelPredictionPair& pair : pairs) {
    const auto& y = pair.labels.values;
    const auto& y_hat = pair.predictions.values;
    if (y.size() != y_hat.size())
      return sdk::fail(sdk::Error::invalid_argument(
          fmt::format("step {}, worker {}: {} holds {} labels but {} holds {} predictions", step, pair.labels.worker,
                      pair.label_tensor, y.size(), pair.prediction_tensor, y_hat.size())));
    for (size_t i = 0; i < y.size(); ++i) {
      for (const auto& [v, tensor] : {std::pair{y[i], &pair.label_tensor}, std::pair{y_hat[i], &pair.prediction_tensor}})
        if (!is_class_index(v) || (category_no_ && v >= static_cast<double>(*category_no_)))
          return sdk::fail(sdk::Error::invalid_argument(fmt::format(
              "step {}, worker {}: {} holds {} at index {}, which is not a class index{}", step, pair.labels.worker,
              *tensor, number_text(v), i,
              category_no_ ? fmt::format(" in [0, {})", *category_no_) : std::string(" (a non-negative integer)"))));
      const auto label = static_cast<int64_t>(y[i]);
      const auto predicted = static_cast<int64_t>(y_hat[i]);
      ++cells[{predicted, label}];
      ++column_sums[predicted];
      largest = std::max({largest, label, predicted});
      correct += label == predicted;
    }
    total += static_cast<int64_t>(y.size());
    if (std::find(used_labels.begin(), used_labels.end(), pair.label_tensor) == used_labels.end())
      used_labels.push_back(pair.label_tensor);
    if (std::find(used_predictions.begin(), used_predictions.end(), pair.prediction_tensor) == used_predictions.end())
      used_predictions.push_back(pair.prediction_tensor);
  }
  if (total == 0) return false;  // empty tensors: an empty matrix has no column to judge
  const int64_t category_no = category_no_.value_or(largest + 1);

  // Columns with S_i = 0 have no entry in column_sums: skipped (NaN shares compare false).
  struct Violation {
    int64_t column, column_sum, diagonal, off_count, off_label;
    double diag_share, off_share;
    bool diag_low, off_high;
  };
  std::vector<Violation> violations;
  auto cell = cells.begin();
  for (const auto& [i, sum] : column_sums) {
    int64_t diagonal = 0, off_count = 0, off_label = -1;
    for (; cell != cells.end() && cell->first.first == i; ++cell) {
      const int64_t label = cell->first.second;
      if (label == i) diagonal = cell->second;
      else if (cell->second > off_count) off_count = cell->second, off_label = label;
    }
    const double diag_share = static_cast<double>(diagonal) / static_cast<double>(sum);
    const double off_share = static_cast<double>(off_count) / static_cast<double>(sum);
    const bool diag_low = diag_share < min_diag_;
    const bool off_high = off_share > max_off_diag_;
    if (diag_low || off_high)
      violations.push_back({i, sum, diagonal, off_count, off_label, diag_share, off_share, diag_low, off_high});
  }
  if (violations.empty()) return false;

  std::string columns = "[";
  for (size_t k = 0; k < violations.size() && k < kMaxColumnsInEvidence; ++k) {
    const Violation& v = violations[k];
    sdk::JsonObject o;
    o.add("predicted_class", v.column)
        .add("column_total", v.column_sum)
        .add("diagonal_count", v.diagonal)
        .add("diagonal_share", v.diag_share)
        .add("below_min_diag", v.diag_low);
    if (v.off_label >= 0)
      o.add("max_off_diagonal_label", v.off_label).add("max_off_diagonal_count", v.off_count);
    o.add("max_off_diagonal_share", v.off_share).add("above_max_off_diag", v.off_high);
    columns += (k ? "," : "") + o.str();
  }
  columns += "]";
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                     .add_raw("label_tensors", json_string_array(used_labels))
                                     .add_raw("prediction_tensors", json_string_array(used_predictions))
                                     .add("pairs", total)
                                     .add("accuracy", static_cast<double>(correct) / static_cast<double>(total))
                                     .add("category_no", category_no)
                                     .add("category_no_inferred", !category_no_.has_value())
                                     .add("violating_columns", static_cast<int64_t>(violations.size()))
                                     .add_raw("columns", columns)
                                     .add("min_diag", min_diag_)
                                     .add("max_off_diag", max_off_diag_)
                                     .str()));
  log(VIGIL_LOG_INFO, "step {}: {} of {} predicted-class columns violate min_diag {} / max_off_diag {}", step,
      violations.size(), column_sums.size(), min_diag_, max_off_diag_);
  return true;
}

}  // namespace vigil::builtin::data
