#include <vigil/status.h>

#include "bindings.h"

namespace vigil::python {

py::object exception_for(const Error& e) {
  py::object from_status = py::module_::import("vigil.exceptions").attr("from_status");
  py::object file = e.file.empty() ? py::none() : py::object(py::str(e.file));
  py::object offset = e.offset ? py::object(py::int_(*e.offset)) : py::none();
  return from_status(static_cast<int>(e.code), py::str(e.message), e.step, static_cast<int>(e.mode),
                     py::str(e.tensor), py::str(e.worker), py::str(e.rule), e.last_step, e.has_reductions, false,
                     file, offset);
}

void register_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const HostError& he) {
      try {
        py::object exc = exception_for(he.error());
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
      } catch (py::error_already_set& failed) {
        failed.restore();  // vigil.exceptions itself failed: report that
      }
    }
  });

  // The one status table (status.h's VIGIL_STATUS_LIST): every failure or signal code, with the class
  // name it stands for.
  m.def(
      "status_classes",
      [] {
        py::dict out;
#define VIGIL_PY_STATUS_CLASS_(name, cpp_name, value, cls, exception, origin) \
  if (name != VIGIL_OK) out[py::int_(int(name))] = py::str(std::string(smdebug_class_name(ErrorCode::cpp_name)));
        VIGIL_STATUS_LIST(VIGIL_PY_STATUS_CLASS_)
#undef VIGIL_PY_STATUS_CLASS_
        return out;
      },
      "{status code: exception class name} for every host status code but VIGIL_OK (vigil::smdebug_class_name).");
  m.def(
      "status_class_abi",
      [](int code) -> py::object {
        const char* c = vigil_status_smdebug_class(code);
        return c ? py::object(py::str(c)) : py::none();
      },
      "The smdebug class the C ABI names for a status code (vigil_status_smdebug_class), or None.");
  m.def(
      "status_classify", [](int code) { return static_cast<int>(vigil_status_classify(code)); },
      "How the invoke loop treats a status: 0 OK, 1 skip, 2 wait, 3 stop, 4 signal, 5 failure.");
  m.def(
      "_raise_host_error",
      [](int code, const std::string& message, int64_t step, int mode, const std::string& tensor) {
        Error e;
        e.code = static_cast<ErrorCode>(code);
        e.message = message;
        e.step = step;
        e.mode = mode_or_global(mode);
        e.tensor = tensor;
        throw HostError(std::move(e));
      },
      py::arg("code"), py::arg("message"), py::arg("step") = 0, py::arg("mode") = 4, py::arg("tensor") = "",
      "Test hook: raises the exception a host error with these fields becomes.");
}

}  // namespace vigil::python
