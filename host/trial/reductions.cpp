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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Integer min/max/sum/prod: min/max in the input dtype (abs of bool stays bool); sums and products
// accumulated in 64 bits, wrapping on overflow like numpy, int64 (uint64 for unsigned input).
void integer_statistics(const TensorValue& v, ReductionStatistics& s, bool is_unsigned) {
  s.integer = true;
  switch (s.op) {
    case ReductionOp::Min:
    case ReductionOp::Max:
      s.result_dtype = v.dtype();
      detail::for_each_integer(v, [&](auto x) {
        double d = double(x);
        if (s.abs) d = std::abs(d);
        if (!s.has_extreme || (s.op == ReductionOp::Min ? d < s.extreme : d > s.extreme)) s.extreme = d;
        s.has_extreme = true;
      });
      return;
    default:
      s.result_dtype = is_unsigned ? ElementType::UInt64 : ElementType::Int64;
      s.wrapped = s.op == ReductionOp::Sum ? 0 : 1;
      detail::for_each_integer(v, [&](auto x) {
        uint64_t u;
        if constexpr (std::is_signed_v<decltype(x)>) u = uint64_t(s.abs && x < 0 ? -x : x);
        else u = uint64_t(x);
        s.wrapped = s.op == ReductionOp::Sum ? s.wrapped + u : s.wrapped * u;
      });
      return;
  }
}

double integer_result(const ReductionStatistics& s) {
  if (s.op == ReductionOp::Min || s.op == ReductionOp::Max) return s.extreme;
  return s.result_dtype == ElementType::UInt64 ? double(s.wrapped) : double(int64_t(s.wrapped));
}

bool is_integer_type(ElementType t) {
  const NumericKind k = detail::numeric_kind(t);
  return k == NumericKind::Signed || k == NumericKind::Unsigned || k == NumericKind::Bool;
}

}  // namespace

Result<ReductionStatistics> reduction_statistics(const TensorValue& v, ReductionOp op, bool abs) {
  const NumericKind kind = detail::numeric_kind(v.dtype());
  if (kind == NumericKind::String)
    return fail(Error{.code = ErrorCode::TypeError,
                      .message = fmt::format("cannot compute reduction {} of a string tensor", reduction_name(op))});
  if (kind == NumericKind::Complex && !abs)
    return fail(Error::not_supported(
        fmt::format("reduction {} of a complex tensor is only supported with abs=True", reduction_name(op))));
  ReductionStatistics s{.op = op, .abs = abs, .count = v.size()};

  if (is_integer_type(v.dtype()) && (op == ReductionOp::Min || op == ReductionOp::Max || op == ReductionOp::Sum ||
                       op == ReductionOp::Prod)) {
    integer_statistics(v, s, kind == NumericKind::Unsigned);
    return s;
  }

  // Everything else in double precision, the result rounded to the input's float dtype.
  s.result_dtype = (kind == NumericKind::Float) ? v.dtype()
                   : (kind == NumericKind::Complex)
                       ? (v.dtype() == ElementType::Complex64 ? ElementType::Float32 : ElementType::Float64)
                       : ElementType::Float64;
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
      s.has_extreme = s.count > 0;
      s.extreme = nan ? kNaN : best;  // numpy propagates NaN
      break;
    }
    case ReductionOp::Sum:
    case ReductionOp::Mean:
    case ReductionOp::L1:
      s.sum = (abs || op == ReductionOp::L1) ? sum_of(v, [](double x) { return std::abs(x); })
                                             : sum_of(v, [](double x) { return x; });
      break;
    case ReductionOp::Prod:
      detail::for_each_as_double(v, [&](double x) { s.product *= abs ? std::abs(x) : x; });
      break;
    case ReductionOp::L2:
      s.sum = sum_of(v, [](double x) { return x * x; });
      break;
    case ReductionOp::Std:
    case ReductionOp::Variance: {
      // Two passes over the part: its mean, then the squared deviations from it.
      s.sum = abs ? sum_of(v, [](double x) { return std::abs(x); }) : sum_of(v, [](double x) { return x; });
      const double mean = s.count == 0 ? 0 : s.sum.value() / double(s.count);
      s.m2 = (abs ? sum_of(v, [mean](double x) { return (std::abs(x) - mean) * (std::abs(x) - mean); })
                  : sum_of(v, [mean](double x) { return (x - mean) * (x - mean); }))
                 .value();
      break;
    }
  }
  return s;
}

std::optional<ReductionStatistics> reduction_statistics_from_saved(ReductionOp op, bool abs, uint64_t count,
                                                                   const SavedReductionLookup& saved) {
  ReductionStatistics s{.op = op, .abs = abs, .count = count};
  switch (op) {
    case ReductionOp::Min:
    case ReductionOp::Max:
    case ReductionOp::Sum:
    case ReductionOp::Prod:
    case ReductionOp::L1:
    case ReductionOp::L2: {
      auto x = saved(op, abs);
      if (!x) return std::nullopt;
      s.result_dtype = x->second;
      s.integer = op != ReductionOp::L1 && op != ReductionOp::L2 && is_integer_type(s.result_dtype);
      if (op == ReductionOp::Min || op == ReductionOp::Max) {
        s.has_extreme = count > 0;
        s.extreme = x->first;
      } else if (s.integer) {
        s.wrapped = s.result_dtype == ElementType::UInt64 ? uint64_t(x->first) : uint64_t(int64_t(x->first));
      } else if (op == ReductionOp::Prod) {
        s.product = x->first;
      } else {
        s.sum.add(op == ReductionOp::L2 ? x->first * x->first : x->first);
      }
      return s;
    }
    case ReductionOp::Mean:
    case ReductionOp::Std:
    case ReductionOp::Variance: {
      // The part's mean: saved, or its (float) sum over its count.
      std::optional<double> mean;
      if (auto m = saved(ReductionOp::Mean, abs)) {
        mean = m->first;
        s.result_dtype = m->second;
      } else if (auto sum = saved(ReductionOp::Sum, abs); sum && !is_integer_type(sum->second)) {
        mean = count ? sum->first / double(count) : 0.0;
        s.result_dtype = sum->second;
      }
      if (!mean) return std::nullopt;
      s.sum.add(*mean * double(count));
      if (op == ReductionOp::Mean) return s;
      if (auto var = saved(ReductionOp::Variance, abs)) s.m2 = var->first * double(count);
      else if (auto sd = saved(ReductionOp::Std, abs)) s.m2 = sd->first * sd->first * double(count);
      else return std::nullopt;
      return s;
    }
  }
  return std::nullopt;
}

Result<void> merge_reduction_statistics(ReductionStatistics& into, const ReductionStatistics& part) {
  if (into.op != part.op || into.abs != part.abs)
    return fail(Error::internal("merging the statistics of different reductions"));
  if (part.count == 0) return {};  // an empty part (a worker holding none of the tensor) adds nothing
  if (into.count == 0) {
    into = part;
    return {};
  }
  if (into.result_dtype != part.result_dtype || into.integer != part.integer)
    return fail(Error::invalid_argument(fmt::format("the parts of a tensor give {} in different dtypes", reduction_name(into.op))));
  const uint64_t n = into.count + part.count;
  switch (into.op) {
    case ReductionOp::Min:
    case ReductionOp::Max:
      if (std::isnan(into.extreme) || std::isnan(part.extreme)) into.extreme = kNaN;
      else if (into.op == ReductionOp::Min ? part.extreme < into.extreme : part.extreme > into.extreme)
        into.extreme = part.extreme;
      into.has_extreme = into.has_extreme || part.has_extreme;
      break;
    case ReductionOp::Sum:
    case ReductionOp::Prod:
      if (into.integer) into.wrapped = into.op == ReductionOp::Sum ? into.wrapped + part.wrapped : into.wrapped * part.wrapped;
      else if (into.op == ReductionOp::Sum) into.sum.merge(part.sum.sum, part.sum.comp);
      else into.product *= part.product;
      break;
    case ReductionOp::Mean:
    case ReductionOp::L1:
    case ReductionOp::L2:
      into.sum.merge(part.sum.sum, part.sum.comp);
      break;
    case ReductionOp::Std:
    case ReductionOp::Variance: {
      // Chan et al.: M2 = M2_a + M2_b + delta^2 * n_a * n_b / n, delta the difference of the means.
      const double delta = part.sum.value() / double(part.count) - into.sum.value() / double(into.count);
      into.m2 += part.m2 + delta * delta * (double(into.count) * double(part.count) / double(n));
      into.sum.merge(part.sum.sum, part.sum.comp);
      break;
    }
  }
  into.count = n;
  return {};
}

Result<ReductionValue> finish_reduction(const ReductionStatistics& s) {
  const ReductionOp op = s.op;
  if (s.count == 0 && (op == ReductionOp::Min || op == ReductionOp::Max))
    return fail(Error::invalid_argument(
        fmt::format("zero-size array to reduction operation {} which has no identity", reduction_name(op))));
  if (s.integer) return ReductionValue{.value = integer_result(s), .dtype = s.result_dtype, .saved = false};
  const double n = double(s.count);
  double result = 0;
  switch (op) {
    case ReductionOp::Min:
    case ReductionOp::Max: result = s.extreme; break;
    case ReductionOp::Sum:
    case ReductionOp::L1: result = s.sum.value(); break;
    case ReductionOp::Mean: result = s.count == 0 ? kNaN : s.sum.value() / n; break;
    case ReductionOp::Prod: result = s.product; break;
    case ReductionOp::L2: result = std::sqrt(s.sum.value()); break;
    case ReductionOp::Std:
    case ReductionOp::Variance: {
      const double var = s.count == 0 ? kNaN : s.m2 / n;  // population (ddof = 0), as numpy's
      result = op == ReductionOp::Std ? std::sqrt(var) : var;
      break;
    }
  }
  return ReductionValue{.value = detail::round_to_dtype(result, s.result_dtype), .dtype = s.result_dtype, .saved = false};
}

Result<ReductionValue> compute_reduction(const TensorValue& v, ReductionOp op, bool abs) {
  auto s = reduction_statistics(v, op, abs);
  if (!s) return fail(s.error());
  return finish_reduction(*s);
}

}  // namespace vigil
