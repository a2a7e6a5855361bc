// vigil._vigil: the C++ half of the `vigil` Python package (the package's Python files wrap it).
#include "bindings.h"

#ifndef VIGIL_VERSION
#define VIGIL_VERSION "0.0.0"
#endif

PYBIND11_MODULE(_vigil, m) {
  m.doc() = "Vigil's host, for the vigil Python package: trials, values, the writer, plugin rules, the profiler, the uploader";
  m.attr("__version__") = VIGIL_VERSION;
  vigil::python::register_errors(m);
  vigil::python::register_values(m);
  vigil::python::register_trial_core(m);
  vigil::python::register_api_trial_core(m);
  vigil::python::register_writer(m);
  vigil::python::register_hook_writer(m);
  vigil::python::register_plugin_rules(m);
  vigil::python::register_profiler(m);
  vigil::python::register_uploader(m);
  vigil::python::register_sagemaker(m);
}
