#include "common.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

namespace vigil::rules::tensor {

std::string Selection::describe() const {
  std::string out;
  if (!collections.empty()) out += fmt::format("collection_names [{}]", fmt::join(collections, ", "));
  if (!regexes.empty()) {
    if (!out.empty()) out += " ∪ ";
    out += fmt::format("tensor_regex [{}]", fmt::join(regexes, ", "));
  }
  return out.empty() ? std::string("all tensors") : out;
}

Selection selection_from_params(const sdk::Params& params) {
  Selection s;
  if (auto c = params.get<std::vector<std::string>>("collection_names")) s.collections = std::move(*c);
  if (auto r = params.get<std::vector<std::string>>("tensor_regex")) s.regexes = std::move(*r);
  return s;
}

Result<void> check_selection(const sdk::Trial& trial, const Selection& selection) {
  if (selection.regexes.empty()) return {};
  // The host compiles the patterns exactly as it will at each step.
  auto names = trial.tensor_names({.regex = selection.regexes});
  if (!names) {
    Error e = std::move(names).error();
    e.message = fmt::format("tensor_regex: {}", e.message);
    return sdk::fail(std::move(e));
  }
  return {};
}

Result<Selection> required_selection(const sdk::RuleContext& ctx) {
  Selection selection = selection_from_params(ctx.params);
  if (selection.empty())
    return sdk::fail(Error::invalid_argument(
        fmt::format("{}: please provide either collection_names or tensor_regex (the rule has no default selection)",
                    ctx.rule_name)));
  VIGIL_TRY_VOID(check_selection(ctx.trials.front(), selection));
  return selection;
}

Result<std::vector<std::string>> selected_at_step(const sdk::Trial& trial, const Selection& selection,
                                                  vigil_step step, bool all_if_empty) {
  std::set<std::string> out;
  if (selection.empty()) {
    if (!all_if_empty) return std::vector<std::string>{};
    VIGIL_TRY(auto names, trial.tensor_names({.step = step}));
    out.insert(names.begin(), names.end());
  }
  for (const auto& c : selection.collections) {
    VIGIL_TRY(auto names, trial.tensor_names({.step = step, .collection = c}));
    out.insert(names.begin(), names.end());
  }
  if (!selection.regexes.empty()) {
    VIGIL_TRY(auto names, trial.tensor_names({.step = step, .regex = selection.regexes}));
    out.insert(names.begin(), names.end());
  }
  return std::vector<std::string>(out.begin(), out.end());
}

bool is_missing(const Error& e) noexcept {
  return e.code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP || e.code == VIGIL_E_TENSOR_UNAVAILABLE ||
         e.code == VIGIL_E_STEP_UNAVAILABLE;
}

Result<std::vector<std::string>> workers_at(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode) {
  auto w = tensor.workers(step, mode);
  if (!w) {
    if (is_missing(w.error())) return std::vector<std::string>{};
    return sdk::fail(std::move(w).error());
  }
  std::sort(w->begin(), w->end());
  return std::move(*w);
}

Result<std::optional<Values>> read_values(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker) {
  auto view = tensor.value(step, mode, worker);
  if (!view) {
    if (view.error().code == VIGIL_E_TYPE_ERROR) return std::optional<Values>{};  // a string tensor
    return sdk::fail(std::move(view).error());
  }
  const DLDataType t = view->dtype();
  if (t.code == kDLComplex || t.code == kDLOpaqueHandle) return std::optional<Values>{};
  auto doubles = view->to_doubles();
  if (!doubles) {
    if (doubles.error().code == VIGIL_E_TYPE_ERROR) return std::optional<Values>{};
    return sdk::fail(std::move(doubles).error());
  }
  Values v;
  v.data = std::move(*doubles);
  v.shape.assign(view->shape().begin(), view->shape().end());
  v.dtype = t;
  return std::optional<Values>(std::move(v));
}

namespace {

// numpy's isclose for one element pair, in the arithmetic type T.
template <class T>
bool isclose(double x, double y, T rtol, T atol, bool equal_nan) {
  if (std::isnan(x) || std::isnan(y)) return equal_nan && std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return x == y;
  const T xs = static_cast<T>(x);
  const T ys = static_cast<T>(y);
  const T diff = std::abs(static_cast<T>(xs - ys));
  const T scaled = static_cast<T>(rtol * std::abs(ys));
  const T tolerance = static_cast<T>(atol + scaled);
  return diff <= tolerance;
}

}  // namespace

bool allclose(const Values& a, const Values& b, double rtol, double atol, bool equal_nan) {
  if (a.shape != b.shape || a.data.size() != b.data.size()) return false;
  // numpy keeps float32 arithmetic for float32 arrays (the Python-float tolerances are cast down).
  const bool f32 = a.is_float32() && b.is_float32();
  for (size_t i = 0; i < a.data.size(); ++i) {
    const bool close = f32 ? isclose<float>(a.data[i], b.data[i], static_cast<float>(rtol), static_cast<float>(atol),
                                            equal_nan)
                           : isclose<double>(a.data[i], b.data[i], rtol, atol, equal_nan);
    if (!close) return false;
  }
  return true;
}

double max_abs_diff(const Values& a, const Values& b) {
  if (a.data.size() != b.data.size()) return std::numeric_limits<double>::quiet_NaN();
  double out = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double d = std::abs(a.data[i] - b.data[i]);
    if (std::isnan(d)) return d;
    out = std::max(out, d);
  }
  return out;
}

std::string reduction_label(vigil_reduction op, bool abs) {
  static constexpr const char* kNames[] = {"min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2"};
  const char* name = op >= VIGIL_RED_MIN && op <= VIGIL_RED_L2 ? kNames[op - VIGIL_RED_MIN] : "unknown";
  return fmt::format("{}{}", abs ? "abs_" : "", name);
}

Result<std::optional<std::vector<SavedReduction>>> saved_reductions(const sdk::Trial& trial, const std::string& name,
                                                                     vigil_step step, vigil_mode mode,
                                                                     std::string_view worker) {
  if (!trial.host().has(&vigil_host_api::saved_reductions)) return std::optional<std::vector<SavedReduction>>{};
  std::vector<SavedReduction> out;
  vigil_reduction_sink sink{&out, [](void* ctx, vigil_reduction op, bool abs, double value) -> vigil_status {
                              try {
                                static_cast<std::vector<SavedReduction>*>(ctx)->push_back({op, abs, value});
                                return VIGIL_OK;
                              } catch (...) {
                                return VIGIL_E_OUT_OF_MEMORY;
                              }
                            }};
  const std::string w(worker);
  vigil_tensor_key key{};
  key.struct_size = sizeof key;
  key.name = name.c_str();
  key.step = step;
  key.mode = mode;
  key.worker = w.empty() ? nullptr : w.c_str();
  VIGIL_TRY_VOID(sdk::detail::call_host(trial.host(), &vigil_host_api::saved_reductions, "saved_reductions",
                                        trial.get(), static_cast<const vigil_tensor_key*>(&key), sink));
  return std::optional<std::vector<SavedReduction>>(std::move(out));
}

Error no_verdict(std::string what, vigil_step step) {
  Error e = Error::tensor_unavailable_for_step(std::move(what), step);
  e.message = fmt::format("no verdict at step {}: {}", step, e.tensor);
  return e;
}

std::string Hits::json_array() const {
  std::string out = "[";
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i) out += ',';
    out += items_[i];
  }
  return out + "]";
}

std::string json_string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += sdk::json_quote(items[i]);
  }
  return out + "]";
}

}  // namespace vigil::rules::tensor
