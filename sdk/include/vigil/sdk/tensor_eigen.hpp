// Vigil C++ SDK: Eigen access to tensor views. Include this (and link Eigen3::Eigen) only in plugins
// that use Eigen; tensor.hpp itself does not need it. Eigen types never cross the ABI.
#pragma once

#include <Eigen/Core>

#include "vigil/sdk/tensor.hpp"

namespace vigil::sdk::inline v1 {

// A read-only, zero-copy column of a tensor's elements (C order).
template <class T>
using EigenArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

namespace detail {
template <class T>
struct EigenAdapter<T, void> {
  [[nodiscard]] static Result<EigenArrayMap<T>> map(const TensorView& view) {
    auto values = view.try_values<T>();
    if (!values) return fail(std::move(values).error());
    return EigenArrayMap<T>(values->data(), static_cast<Eigen::Index>(values->size()));
  }
};
}  // namespace detail

}  // namespace vigil::sdk::inline v1
