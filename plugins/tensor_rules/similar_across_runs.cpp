// SimilarAcrossRuns (builtin-rules.md §2.8): a tensor whose value differs from the same tensor at the
// same step of another run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

namespace {

struct Comparison {
  bool compared = false;
  bool different = false;
  std::vector<int64_t> shape, other_shape;
  double max_abs_diff = 0;
};

// Compares one tensor's values in two runs (numpy.allclose with its defaults).
Result<Comparison> compare(const sdk::Tensor& mine, const sdk::Tensor& theirs, vigil_step step,
                           const std::string& worker, const std::string& other_worker) {
  Comparison c;
  auto a = read_values(mine, step, VIGIL_MODE_GLOBAL, worker);
  if (!a) {
    if (is_missing(a.error())) return c;
    return sdk::fail(std::move(a).error());
  }
  auto b = read_values(theirs, step, VIGIL_MODE_GLOBAL, other_worker);
  if (!b) {
    if (is_missing(b.error())) return c;
    return sdk::fail(std::move(b).error());
  }
  if (*a && *b) {
    c.compared = true;
    c.shape = (*a)->shape;
    c.other_shape = (*b)->shape;
    c.different = !allclose(**a, **b, 1e-5, 1e-8, false);
    c.max_abs_diff = c.shape == c.other_shape ? max_abs_diff(**a, **b) : std::numeric_limits<double>::quiet_NaN();
    return c;
  }
  // Not both real-valued: strings compare element by element; anything else (complex) is not judged.
  auto sa = mine.strings(step, VIGIL_MODE_GLOBAL, worker);
  auto sb = theirs.strings(step, VIGIL_MODE_GLOBAL, other_worker);
  if (!sa || !sb) {
    const Error& e = !sa ? sa.error() : sb.error();
    if (is_missing(e) || e.code == VIGIL_E_TYPE_ERROR) return c;
    return sdk::fail(e);
  }
  VIGIL_TRY(c.shape, mine.shape(step, VIGIL_MODE_GLOBAL, worker));
  VIGIL_TRY(c.other_shape, theirs.shape(step, VIGIL_MODE_GLOBAL, other_worker));
  c.compared = true;
  c.different = c.shape != c.other_shape || *sa != *sb;
  c.max_abs_diff = std::numeric_limits<double>::quiet_NaN();
  return c;
}

std::string json_shape(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

}  // namespace

Result<std::unique_ptr<SimilarAcrossRuns>> SimilarAcrossRuns::create(sdk::RuleContext ctx) {
  if (ctx.trials.size() < 2)
    return sdk::fail(Error::invalid_argument(
        fmt::format("Required argument other_trials for {} is missing: give the other run as other_trials or "
                    "other_trial_0",
                    ctx.rule_name)));
  Selection selection = selection_from_params(ctx.params);
  VIGIL_TRY_VOID(check_selection(ctx.trials.front(), selection));
  return std::unique_ptr<SimilarAcrossRuns>(new SimilarAcrossRuns(std::move(ctx), std::move(selection)));
}

Result<bool> SimilarAcrossRuns::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), selection_, step, /*all_if_empty=*/true));
  bool judged = false;
  Hits hits;
  std::optional<sdk::JsonObject> first;
  for (const sdk::Trial& other : other_trials()) {
    const std::string other_name = fmt::format("other_trial_{}", other.index() - 1);
    // Follow the other run to this step, as the host does for the base trial.
    if (auto waited = other.wait_for_steps({step}); !waited) {
      const vigil_status code = waited.error().code;
      if (code == VIGIL_E_STEP_UNAVAILABLE || code == VIGIL_E_NO_MORE_DATA) continue;
      return sdk::fail(std::move(waited).error());
    }
    for (const std::string& name : names) {
      if (is_cancelled()) return sdk::fail(Error::cancelled());
      VIGIL_TRY(const bool there, other.has_tensor(name));
      if (!there) continue;
      const sdk::Tensor mine = base_trial().tensor(name);
      const sdk::Tensor theirs = other.tensor(name);
      VIGIL_TRY(const auto my_workers, workers_at(mine, step));
      VIGIL_TRY(const auto their_workers, workers_at(theirs, step));
      if (my_workers.empty() || their_workers.empty()) continue;
      std::vector<std::pair<std::string, std::string>> pairs;
      for (const auto& w : my_workers)
        if (std::ranges::binary_search(their_workers, w)) pairs.emplace_back(w, w);
      if (pairs.empty()) pairs.emplace_back(my_workers.front(), their_workers.front());
      for (const auto& [worker, other_worker] : pairs) {
        VIGIL_TRY(const Comparison c, compare(mine, theirs, step, worker, other_worker));
        if (!c.compared) continue;
        judged = true;
        if (!c.different) continue;
        sdk::JsonObject object;
        object.add("tensor", name)
            .add("worker", worker)
            .add("other_worker", other_worker)
            .add("other_trial", other_name)
            .add_raw("shape", json_shape(c.shape))
            .add_raw("other_shape", json_shape(c.other_shape))
            .add("max_abs_diff", c.max_abs_diff);
        hits.add(object.str());
        if (!first) first = std::move(object);
      }
    }
  }
  if (!judged)
    return sdk::fail(no_verdict(
        fmt::format("no tensor of {} was saved at this step in this run and another", selection_.describe()), step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(first->add("rtol", 1e-5)
                                     .add("atol", 1e-8)
                                     .add("tensors_different", hits.count())
                                     .add_raw("different", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
