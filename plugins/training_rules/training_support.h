// Helpers of the training-family rules: scalars per worker and numpy-compatible statistics;
// selection, workers and values come from plugins/rule_support/ (the header of the same name there).
// SDK only.
#pragma once

#include <vigil/sdk.hpp>

#include "rule_support.h"
#include "statistics.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::training {

using sdk::Error;
using sdk::Result;

// Shared with the other families (plugins/rule_support/).
using builtin::Selection;
using builtin::selected_tensors;
using builtin::read_values_if_saved;
using builtin::Values;
using builtin::workers_at;
using sdk::json_array;
using sdk::json_string_array;

// The single element of a one-element tensor; nullopt when the tensor has no value at the step or
// does not hold exactly one element ("only scalar-valued tensors can be matched").
Result<std::optional<double>> read_scalar(const sdk::Tensor& tensor, vigil_step step, vigil_mode mode,
                                          std::string_view worker);

// numpy.quantile (plugins/rule_support/statistics.h).
using builtin::quantile;

// numpy.var(v) (population, ddof = 0), computed in double; NaN for an empty v or one holding NaN.
double population_variance(std::span<const double> v);

}  // namespace vigil::training
