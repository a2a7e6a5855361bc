// What the built-in rule families share, on the SDK alone: smdebug's tensor selection
// (`collection_names` ∪ `tensor_regex`), the workers of a tensor at a step, and values read as
// doubles. One copy for every family (plugins/<family>/ link vigil_builtin_rule_support).
#pragma once

#include <vigil/sdk.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::builtin {

using sdk::Error;
using sdk::Result;

// The tensors a rule reads: smdebug's `collection_names` and `tensor_regex` (both comma-separated
// lists; a tensor is selected when it belongs to any collection or matches any regex with
// re.search semantics).
struct Selection {
  std::vector<std::string> collections;
  std::vector<std::string> regexes;

  bool empty() const noexcept { return collections.empty() && regexes.empty(); }
  // "collection_names [a, b] ∪ tensor_regex [.*x]" for messages and evidence.
  std::string describe() const;
};

// The two parameters of a rule whose selection is required (see required_selection).
inline constexpr sdk::ParamSpec kRequiredCollectionNames =
    sdk::param_string_list("collection_names", nullptr,
                           "Collections whose tensors are inspected (comma-separated). This or tensor_regex is "
                           "required; with both, the union.");
inline constexpr sdk::ParamSpec kRequiredTensorRegex = sdk::param_string_list(
    "tensor_regex", nullptr, "Regexes (comma-separated, matched anywhere in the name) of tensors to inspect.");

// Reads the `collection_names` and `tensor_regex` parameters (each may be unset).
Selection selection_from_params(const sdk::Params& params);

// The selection of a rule that has no default one: refused when empty (smdebug raised "please
// provide either collection_names or tensor_regex") or when a regex does not compile.
Result<Selection> required_selection(const sdk::RuleContext& ctx);

// Refuses a regex the host cannot compile, before anything runs.
Result<void> check_selection(const sdk::Trial& trial, const Selection& selection);

// The selected tensors of the whole trial (sorted, unique).
Result<std::vector<std::string>> selected_tensors(const sdk::Trial& trial, const Selection& selection);

// The names of the selected tensors saved at global `step` (sorted, unique). An empty selection
// selects every tensor of the trial when `all_if_empty`, none otherwise.
Result<std::vector<std::string>> selected_at_step(const sdk::Trial& trial, const Selection& selection,
                                                  vigil_step step, bool all_if_empty);

// True for the errors that mean "this tensor has no data here" (smdebug's TensorUnavailableForStep,
// TensorUnavailable, StepUnavailable): the tensor gives no verdict at the step.
bool is_missing(const Error& e) noexcept;

// The workers that saved `tensor` at `step` (sorted; empty when none did).
Result<std::vector<std::string>> workers_at(const sdk::Tensor& tensor, vigil_step step,
                                            vigil_mode mode = VIGIL_MODE_GLOBAL);

// A real-valued tensor read as doubles (exact for every float dtype; bool as 0/1).
struct Values {
  std::vector<double> data;
  std::vector<int64_t> shape;
  DLDataType dtype{};
  bool is_float32() const noexcept { return dtype.code == kDLFloat && dtype.bits == 32 && dtype.lanes == 1; }
};

// The value of (tensor, step, mode, worker) as doubles; nullopt when the tensor is not real-valued
// (strings, complex). Missing data comes back as the host's error (see is_missing).
Result<std::optional<Values>> read_values(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker);

// read_values, with missing data (not saved there, or only reductions or the shape saved) as
// nullopt too: for rules that skip such tensors.
Result<std::optional<Values>> read_values_if_saved(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                                   std::string_view worker);

}  // namespace vigil::builtin
