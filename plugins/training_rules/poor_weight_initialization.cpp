#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "training_support.h"
#include "training_rules.h"

namespace vigil::training {

PoorWeightInitialization::PoorWeightInitialization(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      regexes_(params().get_list_or("activation_inputs_regex", {})),
      threshold_(params().get_double("threshold")),
      distribution_range_(params().get_double("distribution_range")),
      patience_(params().get_int("patience")),
      steps_(params().get_double("steps")) {}

Result<bool> PoorWeightInitialization::invoke_at_step(vigil_step step) {
  if (static_cast<double>(step) >= steps_) return false;  // only the first steps are judged
  VIGIL_TRY(const auto mm, base_trial().mode_modestep(step));
  const bool training = mm && (mm->first == VIGIL_MODE_TRAIN || mm->first == VIGIL_MODE_GLOBAL);
  std::vector<std::string> fired;

  // 3. Loss stall: TRAIN values since the lowest loss so far.
  if (training) {
    VIGIL_TRY(const auto names, base_trial().collection_tensor_names("losses"));
    for (const std::string& name : names) {
      const sdk::Tensor tensor = base_trial().tensor(name);
      VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
      for (const std::string& worker : workers) {
        VIGIL_TRY(const auto value, read_scalar(tensor, step, VIGIL_MODE_GLOBAL, worker));
        if (!value) continue;
        LossTrack& t = losses_[{name, worker}];
        if (!t.started) {
          t.started = true;
          t.best = std::numeric_limits<double>::infinity();
        }
        if (*value < t.best) {
          t.best = *value;
          t.since_best = 0;
        } else {
          ++t.since_best;
        }
        if (t.since_best >= patience_)
          fired.push_back(sdk::JsonObject()
                              .add("check", "loss_stall")
                              .add("tensor", name)
                              .add("worker", worker)
                              .add("loss", *value)
                              .add("lowest_loss", t.best)
                              .add("steps_without_new_lowest", t.since_best)
                              .add("patience", patience_)
                              .str());
      }
    }
  }

  // 1. Activation inputs: max/min variance across the layers of each worker.
  if (!regexes_.empty()) {
    VIGIL_TRY(const auto names, selected_tensors(base_trial(), {.regexes = regexes_}));
    std::map<std::string, std::vector<std::pair<std::string, double>>> by_worker;
    for (const std::string& name : names) {
      const sdk::Tensor tensor = base_trial().tensor(name);
      VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
      for (const std::string& worker : workers) {
        VIGIL_TRY(const auto values, read_values_if_saved(tensor, step, VIGIL_MODE_GLOBAL, worker));
        if (!values || values->data.empty()) continue;
        by_worker[worker].emplace_back(name, population_variance(values->data));
      }
    }
    for (const auto& [worker, vars] : by_worker) {
      if (vars.size() < 2) continue;
      const std::pair<std::string, double>* lo = &vars.front();
      const std::pair<std::string, double>* hi = &vars.front();
      bool has_nan = false;
      for (const auto& v : vars) {
        has_nan |= std::isnan(v.second);
        if (v.second < lo->second) lo = &v;
        if (v.second > hi->second) hi = &v;
      }
      // numpy: max/min propagate NaN; x/0 is inf for x > 0 and NaN for 0/0.
      double ratio = std::numeric_limits<double>::quiet_NaN();
      if (!has_nan) ratio = lo->second == 0 ? (hi->second > 0 ? std::numeric_limits<double>::infinity() : ratio)
                                            : hi->second / lo->second;
      log(VIGIL_LOG_DEBUG, "step {}: activation variance ratio on {}: {}", step, worker, ratio);
      if (ratio > threshold_)
        fired.push_back(sdk::JsonObject()
                            .add("check", "activation_variance_ratio")
                            .add("worker", worker)
                            .add("ratio", ratio)
                            .add("ratio_is_infinite", std::isinf(ratio))
                            .add("max_variance_tensor", hi->first)
                            .add("max_variance", hi->second)
                            .add("min_variance_tensor", lo->first)
                            .add("min_variance", lo->second)
                            .add("threshold", threshold_)
                            .str());
    }
  }

  // 2. Gradient spread: the smallest p95 - p5 over the gradient tensors.
  {
    VIGIL_TRY(const auto names, base_trial().collection_tensor_names("gradients"));
    std::map<std::string, std::pair<std::string, double>> smallest;  // worker -> (tensor, spread)
    for (const std::string& name : names) {
      if (is_cancelled()) return sdk::fail(Error::cancelled());
      const sdk::Tensor tensor = base_trial().tensor(name);
      VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
      for (const std::string& worker : workers) {
        VIGIL_TRY(const auto values, read_values_if_saved(tensor, step, VIGIL_MODE_GLOBAL, worker));
        if (!values || values->data.empty()) continue;
        const double spread = quantile(values->data, 0.95) - quantile(values->data, 0.05);
        if (std::isnan(spread)) continue;  // comparisons with NaN are false
        auto it = smallest.find(worker);
        if (it == smallest.end() || spread < it->second.second) smallest[worker] = {name, spread};
      }
    }
    for (const auto& [worker, min_spread] : smallest) {
      log(VIGIL_LOG_DEBUG, "step {}: smallest gradient p95-p5 on {}: {} ({})", step, worker, min_spread.second,
          min_spread.first);
      if (min_spread.second < distribution_range_)
        fired.push_back(sdk::JsonObject()
                            .add("check", "gradient_distribution_range")
                            .add("worker", worker)
                            .add("tensor", min_spread.first)
                            .add("p95_minus_p5", min_spread.second)
                            .add("distribution_range", distribution_range_)
                            .str());
    }
  }

  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("step", step).add_raw("checks", json_array(fired)).str()));
  return true;
}

}  // namespace vigil::training
