#include "trial/value_summary.h"

#include <cmath>
#include <limits>

#include "common/sha256.h"
#include "trial/compensated_sum.h"
#include "trial/element_access.h"

namespace vigil {

using detail::NumericKind;

nlohmann::ordered_json json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

namespace {

size_t utf8_code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void add_float_fields(nlohmann::ordered_json& out, const TensorValue& v) {
  // numpy semantics in float64: NaN propagates into sum/min/max/mean.
  detail::CompensatedSum sum, sum_abs;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  int64_t n_nan = 0, n_posinf = 0, n_neginf = 0;
  detail::for_each_as_double(v, [&](double x) {
    if (std::isnan(x)) { ++n_nan; return; }
    if (std::isinf(x)) (x > 0 ? n_posinf : n_neginf)++;
    sum.add(x);
    sum_abs.add(std::abs(x));
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  });
  const double n = double(v.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double total = sum.value(), total_abs = sum_abs.value();
  if (n_nan > 0) total = total_abs = mn = mx = nan;
  out["sum"] = json_number(total);
  if (v.size() > 0) {
    out["min"] = json_number(mn);
    out["max"] = json_number(mx);
  }
  out["mean"] = json_number(v.size() ? total / n : nan);
  out["mean_abs"] = json_number(v.size() ? total_abs / n : nan);
  out["n_nan"] = n_nan;
  out["n_posinf"] = n_posinf;
  out["n_neginf"] = n_neginf;
}

void add_integer_fields(nlohmann::ordered_json& out, const TensorValue& v, bool is_unsigned) {
  uint64_t sum = 0;  // numpy wraps 64-bit integer sums
  int64_t smin = std::numeric_limits<int64_t>::max(), smax = std::numeric_limits<int64_t>::min();
  uint64_t umin = std::numeric_limits<uint64_t>::max(), umax = 0;
  long double exact_sum = 0;
  detail::for_each_integer(v, [&](auto x) {
    sum += uint64_t(x);
    exact_sum += (long double)x;
    if constexpr (std::is_signed_v<decltype(x)>) {
      smin = std::min(smin, x);
      smax = std::max(smax, x);
    } else {
      umin = std::min(umin, x);
      umax = std::max(umax, x);
    }
  });
  if (is_unsigned) out["sum"] = sum;
  else out["sum"] = int64_t(sum);
  if (v.size() > 0) {
    if (is_unsigned) { out["min"] = umin; out["max"] = umax; }
    else { out["min"] = smin; out["max"] = smax; }
  }
  out["mean"] = json_number(v.size() ? double(exact_sum / (long double)v.size()) : std::nan(""));
}

nlohmann::ordered_json element_values(const TensorValue& v) {
  auto values = nlohmann::ordered_json::array();
  switch (detail::numeric_kind(v.dtype())) {
    case NumericKind::Float: detail::for_each_as_double(v, [&](double x) { values.push_back(json_number(x)); }); break;
    case NumericKind::Signed:
    case NumericKind::Unsigned: detail::for_each_integer(v, [&](auto x) { values.push_back(x); }); break;
    case NumericKind::Bool: detail::for_each_integer(v, [&](auto x) { values.push_back(x != 0); }); break;
    case NumericKind::String: for (const auto& s : v.string_values()) values.push_back(s); break;
    case NumericKind::Complex: break;
  }
  return values;
}

}  // namespace

nlohmann::ordered_json summarize_value(const TensorValue& v) {
  nlohmann::ordered_json out;
  const auto kind = detail::numeric_kind(v.dtype());
  const auto& info = format::element_type_info(v.dtype());
  Sha256 sha;
  if (kind == NumericKind::String) {
    size_t width = 1;
    for (const auto& s : v.string_values()) {
      width = std::max(width, utf8_code_points(s));
      sha.update(s.data(), s.size());
      const char zero = 0;
      sha.update(&zero, 1);
    }
    out["dtype"] = "str";
    out["dtype_str"] = "<U" + std::to_string(width);
  } else {
    sha.update(v.bytes());
    out["dtype"] = info.numpy_name;
    out["dtype_str"] = info.numpy_str;
  }
  out["shape"] = v.shape();
  out["size"] = v.size();
  out["sha256"] = sha.finish_hex();
  switch (kind) {
    case NumericKind::Float: add_float_fields(out, v); break;
    case NumericKind::Signed: add_integer_fields(out, v, false); break;
    case NumericKind::Unsigned: add_integer_fields(out, v, true); break;
    case NumericKind::Bool: {
      int64_t n_true = 0;
      detail::for_each_integer(v, [&](auto x) { n_true += x != 0; });
      out["n_true"] = n_true;
      break;
    }
    case NumericKind::String:
    case NumericKind::Complex: break;
  }
  if (v.size() <= 16) out["values"] = element_values(v);
  return out;
}

}  // namespace vigil
