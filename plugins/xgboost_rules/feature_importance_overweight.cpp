// FeatureImportanceOverweight (builtin-rules.md §2.17): the share of the model's importance held by
// its top features, per step and worker.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "xgboost_rules.h"

namespace vigil::builtin::xgboost {

namespace {
// The summed features listed in the evidence (the sum always covers all nfeatures).
constexpr size_t kMaxListed = 20;
}  // namespace

FeatureImportanceOverweight::FeatureImportanceOverweight(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      threshold_(params().get_double("threshold")),
      nfeatures_(params().get_int("nfeatures")),
      regexes_(params().get_list("tensor_regex")) {
  if (regexes_.empty()) throw sdk::SMDebugValueError("parameter tensor_regex: give at least one regex");
  for (const auto& r : regexes_) {
    try {
      (void)std::regex(r, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw sdk::SMDebugValueError(
          fmt::format("parameter tensor_regex: '{}' is not a valid regular expression ({})", r, e.what()));
    }
  }
}

sdk::Result<bool> FeatureImportanceOverweight::invoke_at_step(vigil_step step) {
  VIGIL_TRY(auto names, base_trial().tensor_names({.step = step, .regex = regexes_}));
  std::sort(names.begin(), names.end());
  std::map<std::string, std::vector<std::pair<std::string, double>>> per_worker;
  for (const std::string& name : names) {
    const sdk::Tensor tensor = base_trial().tensor(name);
    auto workers = tensor.workers(step);
    if (!workers) {
      if (workers.error().is_skip()) continue;
      return sdk::fail(std::move(workers).error());
    }
    for (const std::string& worker : *workers) {
      auto view = tensor.value(step, VIGIL_MODE_GLOBAL, worker);
      if (!view) {
        if (view.error().is_skip()) continue;
        return sdk::fail(std::move(view).error());
      }
      VIGIL_TRY(const auto values, view->to_doubles());
      if (values.size() != 1)
        return sdk::fail(sdk::Error::invalid_argument(
            fmt::format("step {}: {} holds {} values; feature importances are scalars (check tensor_regex)", step,
                        name, values.size())));
      per_worker[worker].emplace_back(name, values.front());
    }
  }
  if (per_worker.empty())
    return sdk::fail(sdk::Error::tensor_unavailable_for_step(names.empty() ? regexes_.front() : names.front(), step));

  bool fired = false;
  for (auto& [worker, features] : per_worker) {
    // Descending, NaN last (a NaN among the top n makes the sum NaN, which never fires).
    std::stable_sort(features.begin(), features.end(), [](const auto& a, const auto& b) {
      if (std::isnan(a.second)) return false;
      if (std::isnan(b.second)) return true;
      return a.second > b.second;
    });
    const size_t top = std::min(features.size(), static_cast<size_t>(nfeatures_));
    double sum = 0;
    for (size_t i = 0; i < top; ++i) sum += features[i].second;
    if (!(sum > threshold_)) continue;
    fired = true;
    std::string listed = "[";
    for (size_t i = 0; i < top && i < kMaxListed; ++i)
      listed += (i ? "," : "") + sdk::JsonObject().add("tensor", features[i].first).add("value", features[i].second).str();
    listed += "]";
    VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                       .add("worker", worker)
                                       .add("features", static_cast<int64_t>(features.size()))
                                       .add("nfeatures", nfeatures_)
                                       .add_raw("top_features", listed)
                                       .add("top_sum", sum)
                                       .add("threshold", threshold_)
                                       .str()));
    log(VIGIL_LOG_INFO, "step {}: the top {} of {} feature importances on {} sum to {} > {}", step, top,
        features.size(), worker, sum, threshold_);
  }
  return fired;
}

}  // namespace vigil::builtin::xgboost
