#include "training_support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace vigil::training {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

Result<std::optional<double>> read_scalar(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker) {
  VIGIL_TRY(auto values, builtin::read_values_if_saved(tensor, step, mode, worker));
  if (!values || values->data.size() != 1) return std::optional<double>{};
  return std::optional<double>(values->data.front());
}

double population_variance(std::span<const double> v) {
  if (v.empty()) return kNaN;
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  return sq / static_cast<double>(v.size());
}

}  // namespace vigil::training
