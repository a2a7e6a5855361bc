// numpy/scipy-compatible statistics the built-in rule families share (builtin-rules §1.3, §1.4):
// quantiles, mean and population deviation, histograms, box statistics and scipy's entropy. One
// copy for every family; header-only users link vigil_builtin_rule_support.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace vigil::builtin {

// numpy.quantile(v, q) with the default "linear" method; NaN when v holds a NaN or is empty.
double quantile(std::vector<double> v, double q);
// The same on values already sorted ascending and free of NaN (no copy): for several quantiles of
// one list.
double quantile_sorted(std::span<const double> sorted, double q);

// numpy.mean / numpy.std (population, ddof = 0); NaN for an empty v.
double mean(std::span<const double> v);
double population_std(std::span<const double> v);

// np.histogram(v, bins): counts over `bins` equal-width bins of [min, max] (last bin closed; a single
// value v gives [v - 0.5, v + 0.5]); non-finite values are left out. Returns (edges, counts).
std::pair<std::vector<double>, std::vector<int64_t>> histogram(const std::vector<double>& values, int bins);
// np.histogram(v, bins=edges): the bin of `value` among explicit ascending edges (half-open bins,
// the last closed), or -1 when it lies outside [edges.front(), edges.back()] (numpy drops it).
int64_t histogram_bin(std::span<const double> edges, double value);

// Box-plot statistics of a list (builtin-rules §1.4): quantiles over all values, IQR = p75 - p25,
// upper = min(p75 + 1.5 IQR, max), lower = max(p25 - 1.5 IQR, min). All NaN for an empty list.
struct BoxStats {
  double min = 0, p05 = 0, p25 = 0, p50 = 0, p75 = 0, p95 = 0, p99 = 0, max = 0, upper = 0, lower = 0;
};
BoxStats box_statistics(std::vector<double> values);

// scipy.stats.entropy(p, q) (natural log): both normalised to sum 1; p_i = 0 terms add 0; q_i = 0 < p_i
// gives +inf; NaN when either sums to 0 (scipy's 0/0).
double relative_entropy(std::span<const double> p, std::span<const double> q);
// The Jensen-Shannon distance sqrt(KL(p||m)/2 + KL(q||m)/2), m = (p + q)/2, of two normalised
// histograms (scipy.spatial.distance.jensenshannon with the natural log); NaN when either is empty.
double jensen_shannon_distance(std::span<const double> p, std::span<const double> q);

}  // namespace vigil::builtin
