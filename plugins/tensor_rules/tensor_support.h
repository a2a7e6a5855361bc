// Helpers of the tensor rules: numpy's allclose, saved reductions, the "no verdict" error and the
// evidence lists; selection, workers and values come from plugins/rule_support/. SDK only.
#pragma once

#include <vigil/sdk.hpp>

#include "rule_support.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace vigil::rules::tensor {

using sdk::Error;
using sdk::Result;

// Shared with the other families (plugins/rule_support/).
using builtin::is_missing;
using builtin::kRequiredCollectionNames;
using builtin::kRequiredTensorRegex;
using builtin::read_values;
using builtin::required_selection;
using builtin::selected_at_step;
using builtin::Selection;
using builtin::selection_from_params;
using builtin::check_selection;
using builtin::Values;
using builtin::workers_at;

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
  std::string json_array() const { return sdk::json_array(items_); }

 private:
  size_t count_ = 0;
  std::vector<std::string> items_;
};

}  // namespace vigil::rules::tensor
