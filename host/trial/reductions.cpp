#include "trial/reductions.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "trial/compensated_sum.h"
#include "trial/element_access.h"

namespace vigil {

using detail::NumericKind;

std::string_view reduction_name(ReductionOp op) {
  switch (op) {
    case ReductionOp::Min: return "min";
    case ReductionOp::Max: return "max";
    case ReductionOp::Mean: return "mean";
    case ReductionOp::Std: return "std";
    case ReductionOp::Variance: return "variance";
    case ReductionOp::Sum: return "sum";
    case ReductionOp::Prod: return "prod";
    case ReductionOp::L1: return "l1";
    case ReductionOp::L2: return "l2";
  }
  return "?";
}

std::optional<ReductionOp> parse_reduction_name(std::string_view name) {
  for (ReductionOp op : kAllReductionOps)
    if (reduction_name(op) == name) return op;
  return std::nullopt;
}

namespace {

using detail::CompensatedSum;

// The sum of f(x) over every element, in eight independent lanes that the compiler vectorises,
// then combined. float64 data gets a compensated sum in each lane. float32 data is summed in plain
// double: its rounding error (about n * 2^-53 relative) is far below float32's resolution (2^-24),
// where the result is rounded, so compensation would only cost time.
template <typename T, typename F>
CompensatedSum lane_sum(const T* p, size_t n, F f) {
  constexpr size_t kLanes = 8;
  constexpr bool kCompensate = sizeof(T) > sizeof(float);
  double sum[kLanes] = {}, comp[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) {
      const double x = f(double(p[i + l]));
      if constexpr (kCompensate) {
        const double t = sum[l] + x;
        comp[l] += std::abs(sum[l]) >= std::abs(x) ? (sum[l] - t) + x : (x - t) + sum[l];
        sum[l] = t;
      } else {
        sum[l] += x;
      }
    }
  CompensatedSum s;
  for (size_t l = 0; l < kLanes; ++l) s.merge(sum[l], comp[l]);
  for (; i < n; ++i) s.add(f(double(p[i])));
  return s;
}

template <typename F>
CompensatedSum sum_of(const TensorValue& v, F f) {
  const auto* data = v.bytes().data();
  if (v.dtype() == ElementType::Float32 && reinterpret_cast<uintptr_t>(data) % alignof(float) == 0)
    return lane_sum(v.as<float>().data(), v.size(), f);
  if (v.dtype() == ElementType::Float64 && reinterpret_cast<uintptr_t>(data) % alignof(double) == 0)
    return lane_sum(v.as<double>().data(), v.size(), f);
  CompensatedSum s;
  detail::for_each_as_double(v, [&](double x) { s.add(f(x)); });
  return s;
}

[[nodiscard]] Result<ReductionValue> integer_reduction(const TensorValue& v, ReductionOp op, bool abs, NumericKind kind) {
  const bool is_unsigned = kind == NumericKind::Unsigned;
  ReductionValue r;
  switch (op) {
    case ReductionOp::Min:
    case ReductionOp::Max: {
      // Kept in the input dtype (abs of bool stays bool).
      double best = 0;
      bool first = true;
      auto take = [&](auto x) {
        double d = double(x);
        if (abs) d = std::abs(d);
        if (first || (op == ReductionOp::Min ? d < best : d > best)) best = d;
        first = false;
      };
      detail::for_each_integer(v, take);
      r.value = best;
      r.dtype = v.dtype();
      return r;
    }
    case ReductionOp::Sum:
    case ReductionOp::Prod: {
      // numpy accumulates integers in 64 bits, wrapping on overflow.
      uint64_t acc = op == ReductionOp::Sum ? 0 : 1;
      auto take = [&](auto x) {
        uint64_t u;
        if constexpr (std::is_signed_v<decltype(x)>) u = uint64_t(abs && x < 0 ? -x : x);
        else u = uint64_t(x);
        acc = op == ReductionOp::Sum ? acc + u : acc * u;
      };
      detail::for_each_integer(v, take);
      r.value = is_unsigned ? double(acc) : double(int64_t(acc));
      r.dtype = is_unsigned ? ElementType::UInt64 : ElementType::Int64;
      return r;
    }
    default: break;
  }
  return fail(Error::internal("integer_reduction called for a float reduction"));
}

}  // namespace

Result<ReductionValue> compute_reduction(const TensorValue& v, ReductionOp op, bool abs) {
  const NumericKind kind = detail::numeric_kind(v.dtype());
  if (kind == NumericKind::String)
    return fail(Error{.code = ErrorCode::TypeError,
                      .message = fmt::format("cannot compute reduction {} of a string tensor", reduction_name(op))});
  if (kind == NumericKind::Complex && !abs)
    return fail(Error::not_supported(
        fmt::format("reduction {} of a complex tensor is only supported with abs=True", reduction_name(op))));
  const size_t n = v.size();
  if (n == 0 && (op == ReductionOp::Min || op == ReductionOp::Max))
    return fail(Error::invalid_argument(
        fmt::format("zero-size array to reduction operation {} which has no identity", reduction_name(op))));

  const bool integer_like = kind == NumericKind::Signed || kind == NumericKind::Unsigned || kind == NumericKind::Bool;
  if (integer_like && (op == ReductionOp::Min || op == ReductionOp::Max || op == ReductionOp::Sum ||
                       op == ReductionOp::Prod))
    return integer_reduction(v, op, abs, kind);

  // Everything else in double precision, the result rounded to the input's float dtype.
  const ElementType result_type =
      (kind == NumericKind::Float) ? v.dtype()
      : (kind == NumericKind::Complex) ? (v.dtype() == ElementType::Complex64 ? ElementType::Float32 : ElementType::Float64)
                                       : ElementType::Float64;
  double result = 0;
  switch (op) {
    case ReductionOp::Min:
    case ReductionOp::Max: {
      double best = op == ReductionOp::Min ? std::numeric_limits<double>::infinity()
                                           : -std::numeric_limits<double>::infinity();
      bool nan = false;
      detail::for_each_as_double(v, [&](double x) {
        if (abs) x = std::abs(x);
        if (std::isnan(x)) nan = true;
        else if (op == ReductionOp::Min ? x < best : x > best) best = x;
      });
      result = nan ? std::numeric_limits<double>::quiet_NaN() : best;  // numpy propagates NaN
      break;
    }
    case ReductionOp::Sum:
    case ReductionOp::Mean:
    case ReductionOp::L1: {
      const CompensatedSum s = (abs || op == ReductionOp::L1) ? sum_of(v, [](double x) { return std::abs(x); })
                                                              : sum_of(v, [](double x) { return x; });
      result = s.value();
      if (op == ReductionOp::Mean) result = n == 0 ? std::numeric_limits<double>::quiet_NaN() : result / double(n);
      break;
    }
    case ReductionOp::Prod: {
      double p = 1;
      detail::for_each_as_double(v, [&](double x) { p *= abs ? std::abs(x) : x; });
      result = p;
      break;
    }
    case ReductionOp::L2: {
      result = std::sqrt(sum_of(v, [](double x) { return x * x; }).value());
      break;
    }
    case ReductionOp::Std:
    case ReductionOp::Variance: {
      // Two passes: population variance (ddof = 0), as numpy's reader-side reductions.
      const CompensatedSum s = abs ? sum_of(v, [](double x) { return std::abs(x); }) : sum_of(v, [](double x) { return x; });
      const double mean = n == 0 ? 0 : s.value() / double(n);
      const CompensatedSum sq = abs ? sum_of(v, [mean](double x) { return (std::abs(x) - mean) * (std::abs(x) - mean); })
                                    : sum_of(v, [mean](double x) { return (x - mean) * (x - mean); });
      double var = n == 0 ? std::numeric_limits<double>::quiet_NaN() : sq.value() / double(n);
      result = op == ReductionOp::Std ? std::sqrt(var) : var;
      break;
    }
  }
  return ReductionValue{.value = detail::round_to_dtype(result, result_type), .dtype = result_type, .saved = false};
}

}  // namespace vigil
