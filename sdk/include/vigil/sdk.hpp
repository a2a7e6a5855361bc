// Vigil C++ SDK umbrella: everything a rule plugin needs except Eigen access
// (include <vigil/sdk/tensor_eigen.hpp> for TensorView::as_eigen<T>()).
#pragma once

#include "vigil/sdk/version.hpp"
#include "vigil/sdk/error.hpp"
#include "vigil/sdk/exceptions.hpp"
#include "vigil/sdk/host.hpp"
#include "vigil/sdk/tensor.hpp"
#include "vigil/sdk/trial.hpp"
#include "vigil/sdk/params.hpp"
#include "vigil/sdk/json.hpp"
#include "vigil/sdk/rule.hpp"
#include "vigil/sdk/plugin.hpp"
#include "vigil/sdk/profiler.hpp"
