// DeadRelu and SaturatedActivation: the share of a layer's units that are (nearly) never in the
// useful range across the samples of one saved batch.
#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "training_support.h"
#include "training_rules.h"
#include <vigil/sdk/text.hpp>

namespace vigil::training {

namespace {

using sdk::lower;

struct LayerCount {
  int64_t batch = 0;
  int64_t units = 0;
  int64_t inactive = 0;  // units active in less than threshold_inactivity % of the batch
  double percent = 0;    // 100 * inactive / units
};

// Axis 0 is the batch (rank 0 or 1: one sample); every other position is a unit. `active(x)` says
// whether a sample's value counts as activity. nullopt for an empty tensor.
template <class Active>
std::optional<LayerCount> count_inactive(const Values& v, double threshold_inactivity, Active active) {
  const auto n = static_cast<int64_t>(v.data.size());
  LayerCount c;
  c.batch = v.shape.size() >= 2 ? v.shape.front() : 1;
  if (n == 0 || c.batch <= 0) return std::nullopt;
  c.units = n / c.batch;
  for (int64_t u = 0; u < c.units; ++u) {
    int64_t hits = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      if (active(v.data[static_cast<size_t>(b * c.units + u)])) ++hits;
    if (100.0 * static_cast<double>(hits) / static_cast<double>(c.batch) < threshold_inactivity) ++c.inactive;
  }
  c.percent = 100.0 * static_cast<double>(c.inactive) / static_cast<double>(c.units);
  return c;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

DeadRelu::DeadRelu(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      regexes_(params().get_list_or("tensor_regex", {})),
      threshold_inactivity_(params().get_double("threshold_inactivity")),
      threshold_layer_(params().get_double("threshold_layer")) {}

Result<bool> DeadRelu::invoke_at_step(vigil_step step) {
  if (regexes_.empty()) return false;
  VIGIL_TRY(const auto names, selected_tensors(base_trial(), {.regexes = regexes_}));
  std::vector<std::string> fired;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
    for (const std::string& worker : workers) {
      VIGIL_TRY(const auto values, read_values_if_saved(tensor, step, VIGIL_MODE_GLOBAL, worker));
      if (!values) continue;
      const auto c = count_inactive(*values, threshold_inactivity_, [](double x) { return x > 0; });
      if (!c) continue;
      log(VIGIL_LOG_DEBUG, "step {}: {} on {}: {}% dead ({} of {} units)", step, name, worker, c->percent, c->inactive,
          c->units);
      if (c->percent > threshold_layer_)
        fired.push_back(sdk::JsonObject()
                            .add("tensor", name)
                            .add("worker", worker)
                            .add("dead_percent", c->percent)
                            .add("dead_units", c->inactive)
                            .add("units", c->units)
                            .add("batch", c->batch)
                            .add("threshold_inactivity", threshold_inactivity_)
                            .add("threshold_layer", threshold_layer_)
                            .str());
    }
  }
  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("step", step).add_raw("layers", json_array(fired)).str()));
  return true;
}

// ---------------------------------------------------------------------------------------------

SaturatedActivation::SaturatedActivation(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      collections_(params().get_list_or("collection_names", {})),
      regexes_(params().get_list_or("tensor_regex", {})),
      tanh_min_(params().get_double("threshold_tanh_min")),
      tanh_max_(params().get_double("threshold_tanh_max")),
      sigmoid_min_(params().get_double("threshold_sigmoid_min")),
      sigmoid_max_(params().get_double("threshold_sigmoid_max")),
      threshold_inactivity_(params().get_double("threshold_inactivity")),
      threshold_layer_(params().get_double("threshold_layer")) {}

Result<bool> SaturatedActivation::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, selected_tensors(base_trial(), {.collections = collections_, .regexes = regexes_}));
  std::vector<std::string> fired;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const std::string lname = lower(name);
    const bool is_tanh = lname.find("tanh") != std::string::npos;
    if (!is_tanh && lname.find("sigmoid") == std::string::npos) {
      log(VIGIL_LOG_DEBUG, "{}: neither tanh nor sigmoid in the name, skipped", name);
      continue;
    }
    const double lo = is_tanh ? tanh_min_ : sigmoid_min_;
    const double hi = is_tanh ? tanh_max_ : sigmoid_max_;
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
    for (const std::string& worker : workers) {
      VIGIL_TRY(const auto values, read_values_if_saved(tensor, step, VIGIL_MODE_GLOBAL, worker));
      if (!values) continue;
      const auto c = count_inactive(*values, threshold_inactivity_, [lo, hi](double x) { return lo < x && x < hi; });
      if (!c) continue;
      log(VIGIL_LOG_DEBUG, "step {}: {} on {}: {}% saturated ({} of {} units)", step, name, worker, c->percent,
          c->inactive, c->units);
      if (c->percent > threshold_layer_)
        fired.push_back(sdk::JsonObject()
                            .add("tensor", name)
                            .add("worker", worker)
                            .add("function", is_tanh ? "tanh" : "sigmoid")
                            .add("range_min", lo)
                            .add("range_max", hi)
                            .add("saturated_percent", c->percent)
                            .add("saturated_units", c->inactive)
                            .add("units", c->units)
                            .add("batch", c->batch)
                            .add("threshold_inactivity", threshold_inactivity_)
                            .add("threshold_layer", threshold_layer_)
                            .str());
    }
  }
  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("step", step).add_raw("layers", json_array(fired)).str()));
  return true;
}

}  // namespace vigil::training
