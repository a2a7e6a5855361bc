// AllZero (builtin-rules.md §2.3): a tensor whose share of zero elements reaches threshold percent.
#include <fmt/format.h>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

Result<std::unique_ptr<AllZero>> AllZero::create(sdk::RuleContext ctx) {
  VIGIL_TRY(Selection selection, required_selection(ctx));
  VIGIL_TRY(const double threshold, ctx.params.get<double>("threshold"));
  return std::unique_ptr<AllZero>(new AllZero(std::move(ctx), std::move(selection), threshold));
}

Result<bool> AllZero::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), selection_, step, false));
  bool judged = false;
  Hits hits;
  sdk::JsonObject top;
  double top_percent = -1;
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step));
    for (const std::string& worker : workers) {
      auto view = tensor.value(step, VIGIL_MODE_GLOBAL, worker);
      if (!view) {
        // Reductions or shape only, or strings: no verdict for this tensor.
        if (is_missing(view.error()) || view.error().code == VIGIL_E_TYPE_ERROR) continue;
        return sdk::fail(std::move(view).error());
      }
      const int64_t size = view->size();
      if (size == 0) continue;
      int64_t zeros = 0;
      VIGIL_TRY(const bool real, for_each_real(*view, [&](double x) { zeros += x == 0 ? 1 : 0; }));
      if (!real) continue;
      judged = true;
      const double percent = 100.0 * static_cast<double>(zeros) / static_cast<double>(size);
      if (!(percent >= threshold_)) continue;
      auto object = [&] {
        return sdk::JsonObject()
            .add("tensor", name)
            .add("worker", worker)
            .add("zero_percent", percent)
            .add("zero_count", zeros)
            .add("size", size);
      };
      hits.add(object().str());
      if (percent > top_percent) {
        top_percent = percent;
        top = object();
      }
    }
  }
  if (!judged)
    return sdk::fail(no_verdict(fmt::format("no tensor of {} has a value at this step", selection_.describe()), step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(top.add("threshold", threshold_)
                                     .add("tensors_at_or_above", hits.count())
                                     .add_raw("at_or_above", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
