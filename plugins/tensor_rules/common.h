// Helpers shared by the tensor rules: tensor selection (collection_names ∪ tensor_regex), the
// workers of a tensor at a step, numeric values as doubles, numpy's allclose, and the "no verdict"
// error. Built on the SDK only.
#pragma once

#include <vigil/sdk.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace vigil::rules::tensor {

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

// Reads the `collection_names` and `tensor_regex` parameters (each may be unset).
Selection selection_from_params(const sdk::Params& params);

// The selection of a rule that has no default one: refused when empty (smdebug raised "please
// provide either collection_names or tensor_regex") or when a regex does not compile.
Result<Selection> required_selection(const sdk::RuleContext& ctx);

// Refuses a regex the host cannot compile, before anything runs.
Result<void> check_selection(const sdk::Trial& trial, const Selection& selection);

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

// Calls f(double) for every element of a real-valued view (floats of every width, integers, bool)
// without copying the 32/64-bit ones. Returns false, calling nothing, for strings and complex values.
template <class F>
Result<bool> for_each_real(const sdk::TensorView& view, F&& f) {
  const DLDataType t = view.dtype();
  const auto each = [&]<class T>(std::type_identity<T>) -> Result<bool> {
    VIGIL_TRY(const auto values, view.try_values<T>());
    for (const T& x : values) f(static_cast<double>(x));
    return true;
  };
  if (t.lanes != 1) return false;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return each(std::type_identity<float>{});
      if (t.bits == 64) return each(std::type_identity<double>{});
      break;
    case kDLInt:
      if (t.bits == 8) return each(std::type_identity<int8_t>{});
      if (t.bits == 16) return each(std::type_identity<int16_t>{});
      if (t.bits == 32) return each(std::type_identity<int32_t>{});
      if (t.bits == 64) return each(std::type_identity<int64_t>{});
      break;
    case kDLUInt:
      if (t.bits == 8) return each(std::type_identity<uint8_t>{});
      if (t.bits == 16) return each(std::type_identity<uint16_t>{});
      if (t.bits == 32) return each(std::type_identity<uint32_t>{});
      if (t.bits == 64) return each(std::type_identity<uint64_t>{});
      break;
    case VIGIL_DL_BOOL: return each(std::type_identity<bool>{});
    case kDLComplex:
    case kDLOpaqueHandle: return false;
    default: break;
  }
  // float16, bfloat16 and anything else the SDK converts.
  auto doubles = view.to_doubles();
  if (!doubles) {
    if (doubles.error().code == VIGIL_E_TYPE_ERROR) return false;
    return sdk::fail(std::move(doubles).error());
  }
  for (double x : *doubles) f(x);
  return true;
}

// numpy.allclose(a, b, rtol, atol, equal_nan): |a - b| <= atol + rtol * |b| element-wise, NaN equal
// only with equal_nan, an infinity equal only to the same infinity. Different shapes are never
// close. Two float32 arrays are compared in float32 arithmetic, as numpy does.
bool allclose(const Values& a, const Values& b, double rtol, double atol, bool equal_nan);

// The largest |a - b| over the elements (NaN when any difference is NaN); for evidence.
double max_abs_diff(const Values& a, const Values& b);

// One reduction the hook saved (smdebug's Tensor.reduction_values).
struct SavedReduction {
  vigil_reduction op;
  bool abs;
  double value;
};

// "mean", "abs_l2": the reduction's name as smdebug's reduction_values keys print it.
std::string reduction_label(vigil_reduction op, bool abs);

// The reductions saved for (tensor, step, mode, worker), none computed; nullopt when the host
// predates ABI 1.1's saved_reductions. Missing data comes back as the host's error.
Result<std::optional<std::vector<SavedReduction>>> saved_reductions(const sdk::Trial& trial, const std::string& name,
                                                                     vigil_step step, vigil_mode mode,
                                                                     std::string_view worker);

// The error that makes the host skip a step without a verdict (TensorUnavailableForStep).
Error no_verdict(std::string what, vigil_step step);

// The tensor/worker pairs that met a rule's condition at one step, for its evidence: all counted,
// the first kMax kept (as JSON objects).
class Hits {
 public:
  static constexpr size_t kMax = 10;
  void add(std::string json_object) {
    ++count_;
    if (items_.size() < kMax) items_.push_back(std::move(json_object));
  }
  size_t count() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  std::string json_array() const;

 private:
  size_t count_ = 0;
  std::vector<std::string> items_;
};

// "[a,b]" as a JSON array of strings.
std::string json_string_array(const std::vector<std::string>& items);

}  // namespace vigil::rules::tensor
