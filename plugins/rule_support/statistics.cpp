#include "statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vigil::builtin {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double quantile_sorted(std::span<const double> v, double q) {
  if (v.empty()) return kNaN;
  const double h = static_cast<double>(v.size() - 1) * q;
  const auto lo = static_cast<size_t>(std::floor(h));
  const auto hi = static_cast<size_t>(std::ceil(h));
  if (lo == hi) return v[lo];
  // numpy's _lerp, bit for bit: a + (b-a)*t, but b - (b-a)*(1-t) when t >= 0.5.
  const double a = v[lo], b = v[hi], t = h - static_cast<double>(lo);
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  for (double x : v)
    if (std::isnan(x)) return kNaN;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, q);
}

double mean(std::span<const double> v) {
  if (v.empty()) return kNaN;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double population_std(std::span<const double> v) {
  if (v.empty()) return kNaN;
  const double m = mean(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

std::pair<std::vector<double>, std::vector<int64_t>> histogram(const std::vector<double>& values, int bins) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo) || bins < 1) return {};
  if (lo == hi) lo -= 0.5, hi += 0.5;
  std::vector<double> edges(static_cast<size_t>(bins) + 1);
  const double width = (hi - lo) / bins;  // np.linspace: start + i * step
  for (int i = 0; i <= bins; ++i) edges[static_cast<size_t>(i)] = lo + i * width;
  edges.back() = hi;
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    auto b = static_cast<size_t>(std::clamp((v - lo) / (hi - lo) * bins, 0.0, double(bins - 1)));
    // Half-open bins [a, b), the last one closed, decided against the edges themselves.
    while (b > 0 && v < edges[b]) --b;
    while (b + 1 < counts.size() && v >= edges[b + 1]) ++b;
    ++counts[b];
  }
  return {edges, counts};
}

int64_t histogram_bin(std::span<const double> edges, double value) {
  if (edges.size() < 2 || !(value >= edges.front() && value <= edges.back())) return -1;
  if (value == edges.back()) return static_cast<int64_t>(edges.size()) - 2;  // the last bin is closed
  const auto it = std::upper_bound(edges.begin(), edges.end(), value);
  return static_cast<int64_t>(it - edges.begin()) - 1;
}

BoxStats box_statistics(std::vector<double> values) {
  BoxStats b;
  std::erase_if(values, [](double x) { return std::isnan(x); });
  if (values.empty()) return BoxStats{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  std::sort(values.begin(), values.end());
  b.min = values.front();
  b.max = values.back();
  b.p05 = quantile_sorted(values, 0.05);
  b.p25 = quantile_sorted(values, 0.25);
  b.p50 = quantile_sorted(values, 0.50);
  b.p75 = quantile_sorted(values, 0.75);
  b.p95 = quantile_sorted(values, 0.95);
  b.p99 = quantile_sorted(values, 0.99);
  const double iqr = b.p75 - b.p25;
  b.upper = std::min(b.p75 + 1.5 * iqr, b.max);
  b.lower = std::max(b.p25 - 1.5 * iqr, b.min);
  return b;
}

double relative_entropy(std::span<const double> p, std::span<const double> q) {
  if (p.size() != q.size() || p.empty()) return kNaN;
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) sp += p[i], sq += q[i];
  if (!(sp > 0) || !(sq > 0)) return kNaN;
  double out = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i] / sp, qi = q[i] / sq;
    if (pi == 0) continue;
    if (qi == 0) return INFINITY;
    out += pi * std::log(pi / qi);
  }
  return out;
}

double jensen_shannon_distance(std::span<const double> p, std::span<const double> q) {
  if (p.size() != q.size() || p.empty()) return kNaN;
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) sp += p[i], sq += q[i];
  if (!(sp > 0) || !(sq > 0)) return kNaN;
  std::vector<double> pn(p.size()), qn(q.size()), m(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    pn[i] = p[i] / sp;
    qn[i] = q[i] / sq;
    m[i] = (pn[i] + qn[i]) / 2;
  }
  const double js = relative_entropy(pn, m) / 2 + relative_entropy(qn, m) / 2;
  return std::sqrt(std::max(js, 0.0));  // rounding can leave a tiny negative
}

}  // namespace vigil::builtin
