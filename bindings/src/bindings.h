// Shared pieces of the `vigil._vigil` extension module: host errors as Python exceptions, host
// buffers as read-only numpy arrays, and the registration function of each part.
#pragma once

#include <chrono>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "format/dtype.h"
#include "trial/tensor_value.h"

namespace vigil::python {

// A wait that Ctrl-C must be able to end runs in slices of this, the GIL taken between them to
// check for a pending signal (the host's waits know nothing of Python).
inline constexpr auto kWaitSlice = std::chrono::milliseconds(200);

namespace py = pybind11;

// ---- errors ----

// Carries a host error out of a binding; the registered translator raises the vigil.exceptions
// class its code stands for (vigil.exceptions.from_status), with smdebug's fields and message.
class HostError : public std::exception {
 public:
  explicit HostError(Error e) : error_(std::move(e)) {}
  const Error& error() const { return error_; }
  const char* what() const noexcept override { return error_.message.c_str(); }

 private:
  Error error_;
};

template <typename T>
T unwrap(Result<T>&& r) {
  if (!r) throw HostError(std::move(r.error()));
  return std::move(*r);
}
inline void unwrap(Result<void>&& r) {
  if (!r) throw HostError(std::move(r.error()));
}

// The Python exception object for a host error (needs the GIL).
py::object exception_for(const Error& e);

// ---- values ----

// A value as the host holds it: the bytes stay where the host put them (zero-copy), kept alive by
// `keepalive`. numpy arrays made from it have it as their base and are read-only.
struct HostBuffer {
  ElementType dtype = ElementType::Float32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<const void> keepalive;
  std::vector<std::string> strings;  // ElementType::String
};

std::shared_ptr<HostBuffer> buffer_of(const TensorValue& value);
// A read-only numpy array over the buffer (strings: a unicode array; bfloat16 and float8: a float32
// copy, exact).
py::object numpy_array(const std::shared_ptr<HostBuffer>& buffer);
// numpy's scalar of `dtype` holding `value` (what smdebug's reductions return).
py::object numpy_scalar(ElementType dtype, double value);
// The element type of a numpy dtype; nullopt when Vigil has none. bfloat16 and float8 are recognised
// by ml_dtypes' names, or on raw bits (uint16, uint8) whose dtype's metadata maps this key to the name.
inline constexpr const char* kElementTypeMetadataKey = "vigil.element_type";
std::optional<ElementType> element_type_of_numpy(const py::dtype& dt);

std::optional<Mode> mode_arg(int mode);
Mode mode_or_global(int mode);

// ---- the GIL ----

// The GIL released for the object's life, except while the interpreter finalizes. Then, a thread
// that gets the GIL is ended on the spot by CPython (pthread_exit), and one ended so inside a C++
// noexcept frame aborts the whole process ("terminate called without an active exception": torch's
// gloo workers do, when a finalizing interpreter lets them in). The destructors of objects that own
// a thread or write files use it: those still alive at exit are destroyed during finalization, and
// what they wait for (their own threads, file writes) never needs the GIL.
class GilReleasedUnlessFinalizing {
 public:
  GilReleasedUnlessFinalizing() {
    if (!interpreter_finalizing()) released_.emplace();
  }

 private:
  static bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
  }
  std::optional<py::gil_scoped_release> released_;
};

// ---- registration ----
void register_errors(py::module_& m);
void register_values(py::module_& m);
void register_trial_core(py::module_& m);
void register_api_trial_core(py::module_& m);
void register_writer(py::module_& m);
void register_hook_writer(py::module_& m);
void register_plugin_rules(py::module_& m);
void register_profiler(py::module_& m);
void register_uploader(py::module_& m);
void register_sagemaker(py::module_& m);

}  // namespace vigil::python
