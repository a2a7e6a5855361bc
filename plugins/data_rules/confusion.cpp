// Confusion (builtin-rules.md §2.15): the confusion matrix of the last `window` evaluations' labels
// and predictions (one step's in SageMaker's reading), judged per predicted class (column shares) or
// per pair of classes (pair informedness).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "binomial.h"
#include "data_rules.h"

namespace vigil::builtin::data {

namespace {

// Violating columns or pairs listed in the evidence (the count is always given).
constexpr size_t kMaxInEvidence = 20;

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
      max_off_diag_(params().get_double("max_off_diag")),
      interpret_predictions_(params().get_bool("interpret_predictions")),
      pair_criterion_(params().get_string("criterion") == "pair_informedness"),
      max_informedness_(params().get_double("max_informedness")),
      window_(params().get_int("window")),
      min_support_(params().get_int("min_support")),
      z_(one_sided_z(params().get_double("confidence"))) {
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

  MatrixCounts now;
  int64_t largest = -1;
  std::vector<std::string> used_labels, used_predictions;
  for (const LabelPredictionPair& pair : pairs) {
    const auto& y = pair.labels.values;
    VIGIL_TRY(const std::vector<double> y_hat, predicted_classes(pair.predictions, y.size(), /*argmax=*/false,
                                                                  interpret_predictions_, pair.prediction_tensor));
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
      ++now.cells[{predicted, label}];
      largest = std::max({largest, label, predicted});
      now.correct += label == predicted;
    }
    now.total += static_cast<int64_t>(y.size());
    if (std::find(used_labels.begin(), used_labels.end(), pair.label_tensor) == used_labels.end())
      used_labels.push_back(pair.label_tensor);
    if (std::find(used_predictions.begin(), used_predictions.end(), pair.prediction_tensor) == used_predictions.end())
      used_predictions.push_back(pair.prediction_tensor);
  }
  if (now.total == 0) {  // empty tensors: an empty matrix has nothing to judge
    not_judged("no labels at this step");
    return false;
  }
  const int64_t category_no = category_no_.value_or(largest + 1);

  recent_.push_back(std::move(now));
  if (recent_.size() > static_cast<size_t>(window_)) recent_.pop_front();
  if (recent_.size() < static_cast<size_t>(window_)) {
    not_judged(fmt::format("{} of the {} evaluations pooled", recent_.size(), window_));
    return false;
  }
  MatrixCounts pooled;
  for (const MatrixCounts& m : recent_) {
    for (const auto& [cell, count] : m.cells) pooled.cells[cell] += count;
    pooled.total += m.total;
    pooled.correct += m.correct;
  }

  sdk::JsonObject evidence;
  evidence.add_raw("label_tensors", json_string_array(used_labels))
      .add_raw("prediction_tensors", json_string_array(used_predictions))
      .add("pairs", pooled.total)
      .add("accuracy", static_cast<double>(pooled.correct) / static_cast<double>(pooled.total))
      .add("category_no", category_no)
      .add("category_no_inferred", !category_no_.has_value())
      .add("window", window_)
      .add("min_support", min_support_)
      .add("confidence", params().get_double("confidence"));
  const std::optional<bool> fired =
      pair_criterion_ ? judge_pairs(step, pooled, evidence) : judge_columns(step, pooled, evidence);
  if (!fired) {
    not_judged(fmt::format("no {} with {} labels", pair_criterion_ ? "pair of classes" : "predicted class",
                           std::max<int64_t>(min_support_, 1)));
    return false;
  }
  if (!*fired) return false;
  VIGIL_TRY_VOID(report_evidence(evidence.str()));
  return true;
}

std::optional<bool> Confusion::judge_columns(vigil_step step, const MatrixCounts& m, sdk::JsonObject& evidence) const {
  // Columns without predictions have no entry: skipped (NaN shares compare false).
  std::map<int64_t, int64_t> column_sums;
  for (const auto& [cell, count] : m.cells) column_sums[cell.first] += count;
  struct Violation {
    int64_t column, column_sum, diagonal, off_count, off_label;
    double diag_share, off_share;
    bool diag_low, off_high;
  };
  std::vector<Violation> violations;
  bool judged = false;
  auto cell = m.cells.begin();
  for (const auto& [i, sum] : column_sums) {
    int64_t diagonal = 0, off_count = 0, off_label = -1;
    for (; cell != m.cells.end() && cell->first.first == i; ++cell) {
      const int64_t label = cell->first.second;
      if (label == i) diagonal = cell->second;
      else if (cell->second > off_count) off_count = cell->second, off_label = label;
    }
    if (sum < min_support_) continue;
    judged = true;
    const double diag_share = static_cast<double>(diagonal) / static_cast<double>(sum);
    const double off_share = static_cast<double>(off_count) / static_cast<double>(sum);
    // With confidence, the diagonal share must be surely low and the off-diagonal one surely high.
    const bool diag_low = wilson_bounds(diagonal, sum, z_).upper < min_diag_;
    const bool off_high = wilson_bounds(off_count, sum, z_).lower > max_off_diag_;
    if (diag_low || off_high)
      violations.push_back({i, sum, diagonal, off_count, off_label, diag_share, off_share, diag_low, off_high});
  }
  if (!judged) return std::nullopt;
  if (violations.empty()) return false;

  std::vector<std::string> columns;
  for (size_t k = 0; k < violations.size() && k < kMaxInEvidence; ++k) {
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
    columns.push_back(o.str());
  }
  evidence.add("violating_columns", static_cast<int64_t>(violations.size()))
      .add_raw("columns", sdk::json_array(columns))
      .add("min_diag", min_diag_)
      .add("max_off_diag", max_off_diag_);
  log(VIGIL_LOG_INFO, "step {}: {} of {} predicted-class columns violate min_diag {} / max_off_diag {}", step,
      violations.size(), column_sums.size(), min_diag_, max_off_diag_);
  return true;
}

std::optional<bool> Confusion::judge_pairs(vigil_step step, const MatrixCounts& m, sdk::JsonObject& evidence) const {
  const auto count = [&m](int64_t label, int64_t predicted) {
    const auto it = m.cells.find({predicted, label});
    return it == m.cells.end() ? int64_t{0} : it->second;
  };
  // A pair the classifier never mixes up has informedness 1 and cannot fire: only the pairs of an
  // off-diagonal cell are candidates.
  std::set<std::pair<int64_t, int64_t>> candidates;
  for (const auto& [cell, n] : m.cells)
    if (cell.first != cell.second) candidates.insert(std::minmax(cell.first, cell.second));
  // The other pairs are judged too where they have support (each class's diagonal count then).
  const int64_t need = std::max<int64_t>(min_support_, 1);
  int64_t supported_diagonals = 0;
  for (const auto& [cell, n] : m.cells) supported_diagonals += cell.first == cell.second && n >= need;
  bool judged = supported_diagonals >= 2;

  std::vector<std::string> confused;
  int64_t confused_count = 0;
  double lowest = 2;
  for (const auto& [i, j] : candidates) {
    // Between i and j only: how often an i is called i (p1) against how often a j is called i (p2).
    const int64_t ii = count(i, i), ij = count(i, j), ji = count(j, i), jj = count(j, j);
    const int64_t ni = ii + ij, nj = ji + jj;
    if (ni < need || nj < need) continue;
    judged = true;
    const double informedness =
        static_cast<double>(ii) / static_cast<double>(ni) - static_cast<double>(ji) / static_cast<double>(nj);
    const double bound = difference_upper_bound(ii, ni, ji, nj, z_);
    lowest = std::min(lowest, bound);
    if (!(bound < max_informedness_)) continue;
    ++confused_count;
    if (confused.size() < kMaxInEvidence)
      confused.push_back(sdk::JsonObject()
                             .add_raw("classes", fmt::format("[{},{}]", i, j))
                             .add("labels_of_first", ni)
                             .add("labels_of_second", nj)
                             .add("first_called_first", ii)
                             .add("first_called_second", ij)
                             .add("second_called_first", ji)
                             .add("second_called_second", jj)
                             .add("informedness", informedness)
                             .add("informedness_upper_bound", bound)
                             .str());
  }
  if (!judged) return std::nullopt;
  if (confused.empty()) return false;
  evidence.add("confused_pairs", confused_count)
      .add_raw("pairs_confused", sdk::json_array(confused))
      .add("max_informedness", max_informedness_);
  log(VIGIL_LOG_INFO, "step {}: {} pair(s) of classes below informedness {} (lowest bound {})", step,
      confused_count, max_informedness_, lowest);
  return true;
}

}  // namespace vigil::builtin::data
