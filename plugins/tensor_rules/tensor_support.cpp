#include "tensor_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

namespace vigil::rules::tensor {

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
  auto push = [&out](vigil_reduction op, bool abs, double value) { out.push_back({op, abs, value}); };
  const vigil_reduction_sink sink = sdk::detail::make_reduction_sink(push);
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

}  // namespace vigil::rules::tensor
