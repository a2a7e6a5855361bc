// ClassImbalance (builtin-rules.md §2.14): per-class label counts and mispredictions, accumulated over
// every step seen; judged once `samples` labels have been seen.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "binomial.h"
#include "data_rules.h"

namespace vigil::builtin::data {

namespace {

// More classes than this: the evidence names only the extreme and the violating classes.
constexpr size_t kMaxClassesInEvidence = 50;

}  // namespace

ClassImbalance::ClassImbalance(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      threshold_imbalance_(params().get_double("threshold_imbalance")),
      threshold_misprediction_(params().get_double("threshold_misprediction")),
      samples_(params().get_int("samples")),
      argmax_(params().get_bool("argmax")),
      interpret_predictions_(params().get_bool("interpret_predictions")),
      underrepresented_only_(params().get_string("misprediction_classes") == "underrepresented"),
      z_(one_sided_z(params().get_double("confidence"))),
      labels_regex_(params().get_string("labels_regex")),
      predictions_regex_(params().get_string("predictions_regex")) {}

sdk::Result<bool> ClassImbalance::invoke_at_step(vigil_step step) {
  VIGIL_TRY(auto label_names, base_trial().tensor_names({.step = step, .regex = {labels_regex_}}));
  VIGIL_TRY(auto prediction_names, base_trial().tensor_names({.step = step, .regex = {predictions_regex_}}));
  if (label_names.empty() || prediction_names.empty())
    return sdk::fail(sdk::Error::tensor_unavailable_for_step(
        label_names.empty() ? labels_regex_ : predictions_regex_, step));

  VIGIL_TRY(auto pairs, read_pairs(base_trial(), std::move(label_names), std::move(prediction_names), step));
  int64_t added = 0;
  std::vector<std::string> used_labels, used_predictions;
  for (const LabelPredictionPair& pair : pairs) {
    VIGIL_TRY(const std::vector<double> predicted,
              predicted_classes(pair.predictions, pair.labels.values.size(), argmax_, interpret_predictions_,
                                pair.prediction_tensor));
    if (predicted.size() != pair.labels.values.size())
      return sdk::fail(sdk::Error::invalid_argument(fmt::format(
          "step {}, worker {}: {} holds {} labels but {} holds {} predictions{}", step, pair.labels.worker,
          pair.label_tensor, pair.labels.values.size(), pair.prediction_tensor, predicted.size(),
          argmax_ ? "" : " (argmax=True takes the argmax of per-class scores)")));
    for (size_t i = 0; i < predicted.size(); ++i) {
      const double label = pair.labels.values[i];
      Counts& c = std::isnan(label) ? nan_class_ : classes_[label];
      ++c.labels;
      if (!(predicted[i] == label)) ++c.mispredicted;  // numpy's !=: true for NaN
    }
    added += static_cast<int64_t>(predicted.size());
    if (std::find(used_labels.begin(), used_labels.end(), pair.label_tensor) == used_labels.end())
      used_labels.push_back(pair.label_tensor);
    if (std::find(used_predictions.begin(), used_predictions.end(), pair.prediction_tensor) == used_predictions.end())
      used_predictions.push_back(pair.prediction_tensor);
  }
  seen_ += added;
  if (seen_ < samples_) {
    not_judged(fmt::format("{} of the {} labels it needs", seen_, samples_));
    return false;
  }

  // Every class seen so far, NaN last.
  std::vector<std::pair<double, Counts>> all(classes_.begin(), classes_.end());
  if (nan_class_.labels > 0) all.emplace_back(std::numeric_limits<double>::quiet_NaN(), nan_class_);
  if (all.empty()) return false;
  auto [min_it, max_it] = std::minmax_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second.labels < b.second.labels;
  });
  const double ratio = static_cast<double>(max_it->second.labels) / static_cast<double>(min_it->second.labels);
  const bool imbalanced = ratio > threshold_imbalance_;
  std::vector<std::pair<double, double>> mispredicted;  // (class, rate) above the threshold
  double worst_rate = -1;
  double worst_class = 0;
  int64_t checked = 0;
  for (const auto& [cls, c] : all) {
    const double rate = static_cast<double>(c.mispredicted) / static_cast<double>(c.labels);
    if (rate > worst_rate) {
      worst_rate = rate;
      worst_class = cls;
    }
    // Underrepresented: fewer labels than half the share each class would have if they were balanced.
    if (underrepresented_only_ && 2 * c.labels * static_cast<int64_t>(all.size()) >= seen_) continue;
    ++checked;
    if (wilson_bounds(c.mispredicted, c.labels, z_).lower > threshold_misprediction_)
      mispredicted.emplace_back(cls, rate);
  }
  if (!imbalanced && mispredicted.empty()) return false;

  sdk::JsonObject counts, rates;
  for (auto it = all.begin(); it != all.end(); ++it)
    if (all.size() <= kMaxClassesInEvidence || it == min_it || it == max_it)
      counts.add(number_text(it->first), it->second.labels);
  for (size_t i = 0; i < mispredicted.size() && i < kMaxClassesInEvidence; ++i)
    rates.add(number_text(mispredicted[i].first), mispredicted[i].second);
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                     .add_raw("label_tensors", json_string_array(used_labels))
                                     .add_raw("prediction_tensors", json_string_array(used_predictions))
                                     .add("labels_seen", seen_)
                                     .add("classes", static_cast<int64_t>(all.size()))
                                     .add_raw("class_counts", counts.str())
                                     .add("imbalance_ratio", ratio)
                                     .add("largest_class", number_text(max_it->first))
                                     .add("smallest_class", number_text(min_it->first))
                                     .add("threshold_imbalance", threshold_imbalance_)
                                     .add("imbalance_exceeded", imbalanced)
                                     .add_raw("misprediction_rate_above_threshold", rates.str())
                                     .add("worst_misprediction_class", number_text(worst_class))
                                     .add("worst_misprediction_rate", worst_rate)
                                     .add("threshold_misprediction", threshold_misprediction_)
                                     .add("classes_checked_for_misprediction", checked)
                                     .add("misprediction_classes", underrepresented_only_ ? "underrepresented" : "all")
                                     .add("confidence", params().get_double("confidence"))
                                     .str()));
  log(VIGIL_LOG_INFO, "step {}: {} labels, class ratio {} (> {}: {}), {} class(es) mispredicted above {}", step,
      seen_, ratio, threshold_imbalance_, imbalanced, mispredicted.size(), threshold_misprediction_);
  return true;
}

}  // namespace vigil::builtin::data
