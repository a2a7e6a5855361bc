#include "rule_support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace vigil::training {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "No value at this step": the tensor was not saved there, or not as a value.
bool is_missing(const Error& e) {
  return e.code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP || e.code == VIGIL_E_TENSOR_UNAVAILABLE;
}

}  // namespace

Result<std::vector<std::string>> select_tensors(const sdk::Trial& trial, std::span<const std::string> collections,
                                                std::span<const std::string> regexes) {
  std::vector<std::string> names;
  for (const std::string& c : collections) {
    VIGIL_TRY(auto in_collection, trial.collection_tensor_names(c));
    names.insert(names.end(), in_collection.begin(), in_collection.end());
  }
  if (!regexes.empty()) {
    sdk::NameQuery q;
    q.regex.assign(regexes.begin(), regexes.end());
    VIGIL_TRY(auto matched, trial.tensor_names(q));
    names.insert(names.end(), matched.begin(), matched.end());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<std::vector<std::string>> workers_at(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode) {
  auto workers = tensor.workers(step, mode);
  if (!workers) {
    if (is_missing(workers.error())) return std::vector<std::string>{};
    return sdk::fail(std::move(workers).error());
  }
  std::sort(workers->begin(), workers->end());
  return std::move(*workers);
}

Result<std::optional<Values>> read_values(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker) {
  auto view = tensor.value(step, mode, worker);
  if (!view) {
    if (is_missing(view.error()) || view.error().code == VIGIL_E_TYPE_ERROR) return std::optional<Values>{};
    return sdk::fail(std::move(view).error());
  }
  auto data = view->to_doubles();
  if (!data) {
    if (data.error().code == VIGIL_E_TYPE_ERROR) return std::optional<Values>{};  // e.g. complex
    return sdk::fail(std::move(data).error());
  }
  Values out;
  out.data = std::move(*data);
  out.shape.assign(view->shape().begin(), view->shape().end());
  return std::optional<Values>(std::move(out));
}

Result<std::optional<double>> read_scalar(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker) {
  VIGIL_TRY(auto values, read_values(tensor, step, mode, worker));
  if (!values || values->data.size() != 1) return std::optional<double>{};
  return std::optional<double>(values->data.front());
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  for (double x : v)
    if (std::isnan(x)) return kNaN;
  std::sort(v.begin(), v.end());
  const double h = static_cast<double>(v.size() - 1) * q;
  const auto lo = static_cast<size_t>(std::floor(h));
  const auto hi = static_cast<size_t>(std::ceil(h));
  if (lo == hi) return v[lo];
  // numpy's _lerp, bit for bit: a + (b-a)*t, but b - (b-a)*(1-t) when t >= 0.5.
  const double a = v[lo], b = v[hi], t = h - static_cast<double>(lo);
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
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

std::string json_array(std::span<const std::string> items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  out += ']';
  return out;
}

std::string json_string_array(std::span<const std::string> items) {
  std::vector<std::string> quoted;
  quoted.reserve(items.size());
  for (const auto& s : items) quoted.push_back(sdk::json_quote(s));
  return json_array(quoted);
}

}  // namespace vigil::training
