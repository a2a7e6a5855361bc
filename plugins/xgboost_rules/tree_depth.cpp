// TreeDepth (builtin-rules.md §2.16): the depth of the tree saved at each step, from its node ids.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "xgboost_rules.h"

namespace vigil::builtin::xgboost {

namespace {
// The hook's tensor of node ids: column Node of trees_to_dataframe() for the round's tree.
constexpr const char* kNodeTensor = "trees/Node";
}  // namespace

TreeDepth::TreeDepth(sdk::RuleContext ctx) : Rule(std::move(ctx)), depth_(params().get_double("depth")) {}

sdk::Result<bool> TreeDepth::invoke_at_step(vigil_step step) {
  const sdk::Tensor nodes = base_trial().tensor(kNodeTensor);
  VIGIL_TRY(const auto workers, nodes.workers(step));
  bool fired = false, judged = false;
  for (const std::string& worker : workers) {
    auto view = nodes.value(step, VIGIL_MODE_GLOBAL, worker);
    if (!view) {
      if (view.error().is_skip()) continue;
      return sdk::fail(std::move(view).error());
    }
    VIGIL_TRY(const auto ids, view->to_doubles());
    if (ids.empty()) continue;  // no node: nothing to judge
    judged = true;
    // np.max: NaN if any id is NaN, and then nothing compares true.
    double largest = -INFINITY;
    for (double id : ids) largest = std::isnan(id) || std::isnan(largest) ? NAN : std::max(largest, id);
    // Node n of a breadth-first numbered binary tree sits at depth floor(log2(n + 1)); the root is 0.
    const double depth = std::floor(std::log2(largest + 1));
    if (!(depth > depth_)) continue;
    fired = true;
    VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                       .add("tensor", kNodeTensor)
                                       .add("worker", worker)
                                       .add("nodes", static_cast<int64_t>(ids.size()))
                                       .add("largest_node_id", largest)
                                       .add("depth", depth)
                                       .add("threshold_depth", depth_)
                                       .str()));
    log(VIGIL_LOG_INFO, "step {}: tree on {} has largest node id {}, depth {} > {}", step, worker, largest, depth,
        depth_);
  }
  if (!judged) return sdk::fail(sdk::Error::tensor_unavailable_for_step(kNodeTensor, step));
  return fired;
}

}  // namespace vigil::builtin::xgboost
