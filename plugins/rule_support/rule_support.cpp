#include "rule_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

namespace vigil::builtin {

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

Result<std::vector<std::string>> selected_tensors(const sdk::Trial& trial, const Selection& selection) {
  std::set<std::string> out;
  for (const std::string& c : selection.collections) {
    VIGIL_TRY(auto names, trial.collection_tensor_names(c));
    out.insert(names.begin(), names.end());
  }
  if (!selection.regexes.empty()) {
    VIGIL_TRY(auto names, trial.tensor_names({.regex = selection.regexes}));
    out.insert(names.begin(), names.end());
  }
  return std::vector<std::string>(out.begin(), out.end());
}

Result<std::vector<std::string>> selected_at_step(const sdk::Trial& trial, const Selection& selection,
                                                  vigil_step step, bool all_if_empty) {
  // Called at every step: the answers are gathered in one vector (the first taken whole), then
  // sorted and made unique, with no set built per step.
  std::vector<std::string> out;
  auto add = [&out](std::vector<std::string> names) {
    if (out.empty()) out = std::move(names);
    else out.insert(out.end(), std::make_move_iterator(names.begin()), std::make_move_iterator(names.end()));
  };
  if (selection.empty()) {
    if (!all_if_empty) return out;
    VIGIL_TRY(auto names, trial.tensor_names({.step = step}));
    add(std::move(names));
  }
  for (const auto& c : selection.collections) {
    VIGIL_TRY(auto names, trial.tensor_names({.step = step, .collection = c}));
    add(std::move(names));
  }
  if (!selection.regexes.empty()) {
    VIGIL_TRY(auto names, trial.tensor_names({.step = step, .regex = selection.regexes}));
    add(std::move(names));
  }
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
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

Result<std::optional<Values>> read_values_if_saved(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                                   std::string_view worker) {
  auto values = read_values(tensor, step, mode, worker);
  if (!values && is_missing(values.error())) return std::optional<Values>{};
  return values;
}

}  // namespace vigil::builtin
