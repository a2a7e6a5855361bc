// Helpers shared by the training-family rules: tensor selection, reading values per worker,
// numpy-compatible statistics and small JSON pieces for evidence. SDK only.
#pragma once

#include <vigil/sdk.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::training {

using sdk::Error;
using sdk::Result;

// The tensors of `collections` plus the names matching any of `regexes` (re.search), sorted and
// unique: smdebug's union of collection_names and tensor_regex.
Result<std::vector<std::string>> select_tensors(const sdk::Trial& trial, std::span<const std::string> collections,
                                                std::span<const std::string> regexes);

// The workers that saved `tensor` at `step` (in `mode`); empty when it was not saved there.
Result<std::vector<std::string>> workers_at(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode);

// A value read as doubles, with its shape.
struct Values {
  std::vector<double> data;
  std::vector<int64_t> shape;
};

// The value of `tensor` at `step` for `worker`; nullopt when it has no value there (not saved, or
// only reductions/shape saved), or when its dtype is not numeric (strings): such tensors are skipped.
Result<std::optional<Values>> read_values(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker);

// The single element of a one-element tensor; nullopt when the tensor has no value at the step or
// does not hold exactly one element ("only scalar-valued tensors can be matched").
Result<std::optional<double>> read_scalar(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker);

// numpy.quantile(v, q) with the default "linear" method; NaN when v holds a NaN or is empty.
double quantile(std::vector<double> v, double q);

// numpy.var(v) (population, ddof = 0), computed in double; NaN for an empty v or one holding NaN.
double population_variance(std::span<const double> v);

// A JSON array of already-serialised JSON values.
std::string json_array(std::span<const std::string> items);
// A JSON array of strings.
std::string json_string_array(std::span<const std::string> items);

}  // namespace vigil::training
