// ExplodingTensor (builtin-rules.md §2.2): a NaN (or ±Inf) in any inspected tensor.
#include <fmt/format.h>

#include <cmath>
#include <complex>

#include "tensor_rules.h"

namespace vigil::rules::tensor {

namespace {

struct NonFinite {
  int64_t nan = 0;
  int64_t inf = 0;
};

void count(NonFinite& n, double x) {
  if (std::isnan(x)) ++n.nan;
  else if (std::isinf(x)) ++n.inf;
}

// The NaN and ±Inf elements of a floating value; nullopt for dtypes that cannot hold them (integers,
// bool) so they are read no further.
Result<std::optional<NonFinite>> non_finite(const sdk::TensorView& view) {
  const DLDataType t = view.dtype();
  NonFinite n;
  if (t.lanes == 1 && t.code == kDLComplex && (t.bits == 64 || t.bits == 128)) {
    const auto scan = [&]<class T>(std::type_identity<T>) -> Result<void> {
      VIGIL_TRY(const auto values, view.try_values<std::complex<T>>());
      for (const auto& z : values) {
        // A complex element is NaN when either part is, else infinite when either part is (numpy).
        if (std::isnan(z.real()) || std::isnan(z.imag())) ++n.nan;
        else if (std::isinf(z.real()) || std::isinf(z.imag())) ++n.inf;
      }
      return {};
    };
    if (t.bits == 64) VIGIL_TRY_VOID(scan(std::type_identity<float>{}));
    else VIGIL_TRY_VOID(scan(std::type_identity<double>{}));
    return std::optional<NonFinite>(n);
  }
  if (t.code != kDLFloat && t.code != kDLBfloat) return std::optional<NonFinite>{};
  VIGIL_TRY(const bool real, for_each_real(view, [&](double x) { count(n, x); }));
  if (!real) return std::optional<NonFinite>{};
  return std::optional<NonFinite>(n);
}

}  // namespace

Result<std::unique_ptr<ExplodingTensor>> ExplodingTensor::create(sdk::RuleContext ctx) {
  Selection selection = selection_from_params(ctx.params);
  VIGIL_TRY(const bool only_nan, ctx.params.get<bool>("only_nan"));
  VIGIL_TRY_VOID(check_selection(ctx.trials.front(), selection));
  return std::unique_ptr<ExplodingTensor>(new ExplodingTensor(std::move(ctx), std::move(selection), only_nan));
}

Result<bool> ExplodingTensor::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto names, selected_at_step(base_trial(), selection_, step, /*all_if_empty=*/true));
  bool judged = false;
  Hits hits;
  std::optional<sdk::JsonObject> first;
  const auto hit = [&](sdk::JsonObject object) {
    hits.add(object.str());
    if (!first) first = std::move(object);
  };
  for (const std::string& name : names) {
    if (is_cancelled()) return sdk::fail(Error::cancelled());
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step));
    for (const std::string& worker : workers) {
      bool value_has_reductions = false;
      auto view = tensor.value(step, VIGIL_MODE_GLOBAL, worker);
      if (view) {
        judged = true;
        VIGIL_TRY(const auto n, non_finite(*view));
        if (n && (n->nan > 0 || (!only_nan_ && n->inf > 0)))
          hit(sdk::JsonObject()
                  .add("tensor", name)
                  .add("worker", worker)
                  .add("what", "value")
                  .add("nan_count", n->nan)
                  .add("inf_count", n->inf));
        view->reset();  // release the host's view before reading more
      } else if (view.error().code == VIGIL_E_TYPE_ERROR) {
        judged = true;  // strings: no NaN possible
      } else if (view.error().code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP) {
        value_has_reductions = view.error().has_reductions;  // reductions or shape only
      } else if (!is_missing(view.error())) {
        return sdk::fail(std::move(view).error());
      }

      // The reductions the hook saved, whether or not it saved the value too.
      const auto check = [&](vigil_reduction op, bool abs, double r) {
        judged = true;
        if (std::isnan(r) || (!only_nan_ && std::isinf(r)))
          hit(sdk::JsonObject()
                  .add("tensor", name)
                  .add("worker", worker)
                  .add("what", "reduction:" + reduction_label(op, abs))
                  .add("value", std::isnan(r) ? "NaN" : (r > 0 ? "Infinity" : "-Infinity")));
      };
      auto saved = saved_reductions(base_trial(), name, step, VIGIL_MODE_GLOBAL, worker);
      if (!saved) {
        if (is_missing(saved.error())) continue;
        return sdk::fail(std::move(saved).error());
      }
      if (*saved) {
        for (const auto& r : **saved) check(r.op, r.abs, r.value);
        continue;
      }
      // A host before ABI 1.1 cannot list them: without a value, every reduction it can return was saved.
      if (!value_has_reductions) continue;
      for (vigil_reduction op = VIGIL_RED_MIN; op <= VIGIL_RED_L2; ++op)
        for (const bool abs : {false, true}) {
          auto r = tensor.reduction_value(step, static_cast<sdk::ReductionOp>(op), abs, VIGIL_MODE_GLOBAL, worker);
          if (!r) {
            if (is_missing(r.error())) continue;
            return sdk::fail(std::move(r).error());
          }
          check(op, abs, *r);
        }
    }
  }
  if (!judged) return sdk::fail(no_verdict(fmt::format("no tensor of {} has data at this step", selection_.describe()), step));
  if (hits.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(first->add("only_nan", only_nan_)
                                     .add("nonfinite_count", hits.count())
                                     .add_raw("nonfinite", hits.json_array())
                                     .str()));
  return true;
}

}  // namespace vigil::rules::tensor
