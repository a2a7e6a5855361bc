// The Python rule plugin: serves smdebug-style Python rule files (RuleParameters source_s3_uri +
// rule_to_invoke) through the same C ABI as every other rule plugin.
//
// It embeds CPython: the interpreter starts once, on the first Python rule prepared or created (so
// evaluations without Python rules never start it), and is never finalized (the library is flagged
// VIGIL_PLUGINF_NO_UNLOAD). Rule files run unmodified: `vigil._plugin` installs smdebug's import
// names, and each rule's trials are vigil.trials.Trial objects over this host's vigil_host_api
// (vigil._vigil.ApiTrialCore), so Python rules read the evaluator's shared trial and per-step cache.
//
// A Python exception becomes a status through vigil.exceptions.error_record: smdebug's classes
// their own code (StepUnavailable skips the step, NoMoreData ends the rule, ...), anything else
// VIGIL_E_PLUGIN_FAILURE with the traceback's last line ("ZeroDivisionError: division by zero").
// Every call into Python takes the GIL; none is held between calls.
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <vigil/sdk/error.hpp>
#include <vigil/vigil.h>

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef VIGIL_PYTHON_PLUGIN_VERSION
#define VIGIL_PYTHON_PLUGIN_VERSION "0.0.0"
#endif
#ifndef VIGIL_PYTHON_REL_BUILD
#define VIGIL_PYTHON_REL_BUILD ""
#endif
#ifndef VIGIL_PYTHON_REL_INSTALL
#define VIGIL_PYTHON_REL_INSTALL ""
#endif
#ifndef VIGIL_PYTHON_PROGRAM
#define VIGIL_PYTHON_PROGRAM ""
#endif
#ifndef VIGIL_PYTHON_ABS_BUILD
#define VIGIL_PYTHON_ABS_BUILD ""
#endif

namespace py = pybind11;
namespace fs = std::filesystem;

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::quiet_NaN();

const vigil_param_spec kParams[] = {
    {sizeof(vigil_param_spec), "source_s3_uri", VIGIL_PARAM_STRING, VIGIL_PARAMF_REQUIRED, nullptr, kUnbounded,
     kUnbounded, nullptr, "The Python rule file: a local path (file:// allowed)"},
    {sizeof(vigil_param_spec), "rule_to_invoke", VIGIL_PARAM_STRING, VIGIL_PARAMF_REQUIRED, nullptr, kUnbounded,
     kUnbounded, nullptr, "The rule class in that file (a subclass of smdebug.rules.rule.Rule)"},
};

const vigil_rule_descriptor kRule = {
    sizeof(vigil_rule_descriptor),
    "vigil.python.CustomRule",
    "PythonRule",
    VIGIL_PYTHON_PLUGIN_VERSION,
    "Runs a custom rule class from a Python rule file written against smdebug's Rule API; every other "
    "RuleParameters entry is passed to its constructor as a string keyword argument",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    VIGIL_RULEF_MULTI_TRIAL | VIGIL_RULEF_EXTRA_PARAMS,
};

std::string g_plugin_path;
std::mutex g_python_mu;
bool g_python_ready = false;
std::string g_python_error;  // why the interpreter or vigil._plugin could not start (sticky)

// The GIL for the current thread, whoever holds the interpreter.
class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// ---- errors ----

// Fills the caller's error record as far as its struct_size allows (the SDK's one implementation).
[[nodiscard]] vigil_status report(vigil_error* err, vigil_status code, std::string_view message) {
  vigil::sdk::write_error_record(err, vigil::sdk::ErrorRecord{.code = code, .message = message});
  return code;
}

// What a callee reports on VIGIL_OK (status.h).
[[nodiscard]] vigil_status ok(vigil_error* err) {
  vigil::sdk::write_error_ok(err);
  return VIGIL_OK;
}

// A Python exception (the GIL held) as a status and error record, through vigil.exceptions.
[[nodiscard]] vigil_status report_python(py::error_already_set& e, vigil_error* err) {
  try {
    // (code, flags, mode, step, last_step, tensor, worker, rule, message), as vigil_error holds them.
    py::tuple rec = py::module_::import("vigil.exceptions").attr("error_record")(e.value());
    const auto flags = rec[1].cast<uint32_t>();
    const vigil::sdk::Error error{.code = rec[0].cast<vigil_status>(),
                                  .message = rec[8].cast<std::string>(),
                                  .tensor = rec[5].cast<std::string>(),
                                  .worker = rec[6].cast<std::string>(),
                                  .rule = rec[7].cast<std::string>(),
                                  .step = rec[3].cast<vigil_step>(),
                                  .mode = rec[2].cast<vigil_mode>(),
                                  .last_step = rec[4].cast<vigil_step>(),
                                  .has_reductions = (flags & VIGIL_ERRF_HAS_REDUCTIONS) != 0,
                                  .end_of_rule = (flags & VIGIL_ERRF_END_OF_RULE) != 0};
    error.to_abi(err);
    return error.code;
  } catch (py::error_already_set& inner) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, std::string("vigil.exceptions.error_record failed: ") + inner.what());
  } catch (const std::exception& inner) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, inner.what());
  }
}

// ---- the interpreter ----

// Where the vigil package is: VIGIL_PYTHON_PATH, then next to this library (build tree or install
// prefix), then the build tree this library came from.
std::vector<fs::path> package_dirs() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("VIGIL_PYTHON_PATH"); env && *env) {
    std::string s = env;
    for (size_t start = 0; start <= s.size();) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) out.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  const fs::path dir = fs::path(g_plugin_path).parent_path();
  for (const char* rel : {VIGIL_PYTHON_REL_BUILD, VIGIL_PYTHON_REL_INSTALL})
    if (*rel) out.push_back((dir / rel).lexically_normal());
  if (*VIGIL_PYTHON_ABS_BUILD) out.emplace_back(VIGIL_PYTHON_ABS_BUILD);
  return out;
}

// The interpreter to start as: the virtual environment this plugin was installed into by pip (its
// prefix holds pyvenv.cfg), so that rules see that environment's packages; else the interpreter this
// plugin was built for, not whatever "python3" comes first on PATH.
std::string python_program() {
  std::error_code ec;
  const fs::path prefix = (fs::path(g_plugin_path).parent_path() / VIGIL_PYTHON_REL_PREFIX).lexically_normal();
  for (const char* name : {"python3", "python"}) {
    const fs::path venv_python = prefix / "bin" / name;
    if (fs::exists(prefix / "pyvenv.cfg", ec) && fs::exists(venv_python, ec)) return venv_python.string();
  }
  if (*VIGIL_PYTHON_PROGRAM && fs::exists(VIGIL_PYTHON_PROGRAM, ec)) return VIGIL_PYTHON_PROGRAM;
  return {};
}

bool start_python(std::string* why) {
  std::lock_guard lock(g_python_mu);
  if (g_python_ready) return true;
  if (!g_python_error.empty()) {
    *why = g_python_error;
    return false;
  }
  bool started_here = false;
  if (!Py_IsInitialized()) {
    // This library was loaded RTLD_LOCAL: make libpython's symbols global so that extension modules
    // (numpy, vigil._vigil), which do not link libpython, resolve them.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&Py_IsInitialized), &info) && info.dli_fname)
      (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  // SIGINT/SIGTERM stay the evaluator's
    config.parse_argv = 0;
    PyStatus status = PyStatus_Ok();
    // Python finds its prefix, and a virtual environment's site-packages, from the program.
    const std::string program = python_program();
    if (!program.empty()) status = PyConfig_SetBytesString(&config, &config.program_name, program.c_str());
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
      g_python_error = std::string("cannot start Python: ") + (status.err_msg ? status.err_msg : "unknown error");
      *why = g_python_error;
      return false;
    }
    started_here = true;
  }
  {
    Gil gil;
    try {
      py::list sys_path = py::module_::import("sys").attr("path");
      for (const auto& dir : package_dirs()) {
        std::error_code ec;
        if (fs::exists(dir / "vigil" / "__init__.py", ec)) {
          sys_path.insert(0, py::str(dir.string()));
          break;
        }
      }
      py::module_::import("vigil._plugin");
    } catch (py::error_already_set& e) {
      vigil_error err{};
      err.struct_size = sizeof(err);
      (void)report_python(e, &err);  // only its message is wanted: starting Python fails as a whole
      g_python_error = std::string("cannot import the vigil Python package: ") + err.message;
    }
  }
  if (started_here) PyEval_SaveThread();  // the GIL was held since initialization: let others take it
  if (!g_python_error.empty()) {
    *why = g_python_error;
    return false;
  }
  g_python_ready = true;
  return true;
}

// ---- one rule instance ----

struct PythonRule {
  vigil_rule abi{};
  py::object runner;  // vigil._plugin.RuleRunner
};

PythonRule* rule_of(vigil_rule* r) { return r ? static_cast<PythonRule*>(r->rule_data) : nullptr; }

void VIGIL_CALL rule_destroy(vigil_rule* r) {
  PythonRule* rule = rule_of(r);
  if (!rule) return;
  Gil gil;
  try {
    delete rule;
  } catch (...) {
  }
}

vigil_status VIGIL_CALL rule_required_tensors(vigil_rule* r, vigil_step step, const vigil_required_sink* sink,
                                              vigil_error* err) {
  PythonRule* rule = rule_of(r);
  if (!rule || !sink || !sink->add) return report(err, VIGIL_E_INVALID_ARGUMENT, "required_tensors: NULL argument");
  Gil gil;
  try {
    py::list wanted = rule->runner.attr("required_tensors")(step);
    for (py::handle item : wanted) {
      auto t = item.cast<py::tuple>();
      const auto index = t[0].cast<uint32_t>();
      const auto name = t[1].cast<std::string>();
      const auto is_regex = t[2].cast<bool>();
      const auto steps = t[3].cast<std::vector<vigil_step>>();
      vigil_status s = sink->add(sink->ctx, index, name.c_str(), is_regex, steps.data(), steps.size());
      if (s != VIGIL_OK) return report(err, s, "the host refused a required tensor: " + name);
    }
    return ok(err);
  } catch (py::error_already_set& e) {
    return report_python(e, err);
  } catch (const std::exception& e) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, e.what());
  }
}

vigil_status VIGIL_CALL rule_invoke_at_step(vigil_rule* r, vigil_step step, bool* condition_met, vigil_error* err) {
  if (condition_met) *condition_met = false;
  PythonRule* rule = rule_of(r);
  if (!rule || !condition_met) return report(err, VIGIL_E_INVALID_ARGUMENT, "invoke_at_step: NULL argument");
  Gil gil;
  try {
    rule->runner.attr("invoke")(step);
    return ok(err);
  } catch (py::error_already_set& e) {
    const vigil_status s = report_python(e, err);
    if (s == VIGIL_S_RULE_CONDITION_MET) *condition_met = true;
    return s;
  } catch (const std::exception& e) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, e.what());
  }
}

// ---- the factory ----

template <class Context>
std::string param_text(const Context* ctx, uint32_t index) {
  if (!ctx->params || index >= ctx->param_count) return {};
  const vigil_param_value& v = ctx->params[index];
  return v.is_set && v.text ? std::string(v.text) : std::string();
}

// The preparation (ABI 1.4), before the trials exist: the interpreter, the vigil package and the rule
// file's class, which create_rule then finds ready. Its errors are create_rule's: a failure to start
// Python is sticky (start_python) and a rule file that raised raises the same again
// (vigil._plugin._load_module), so create_rule reports them as it would have without preparation.
[[nodiscard]] vigil_status prepare_rule(const vigil_prepare_context* ctx, vigil_error* err) {
  std::string source = param_text(ctx, 0);
  std::string class_name = param_text(ctx, 1);
  if (source.empty() || class_name.empty())
    return report(err, VIGIL_E_INVALID_ARGUMENT, "a Python rule needs source_s3_uri and rule_to_invoke");
  std::string why;
  if (!start_python(&why)) return report(err, VIGIL_E_PLUGIN_FAILURE, why);
  Gil gil;
  try {
    py::module_::import("vigil._plugin").attr("prepare_rule")(source, class_name);
    return ok(err);
  } catch (py::error_already_set& e) {
    return report_python(e, err);
  } catch (const std::exception& e) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, e.what());
  }
}

[[nodiscard]] vigil_status create_rule(const vigil_rule_context* ctx, vigil_rule** out, vigil_error* err) {
  std::string source = param_text(ctx, 0);
  std::string class_name = param_text(ctx, 1);
  if (source.empty() || class_name.empty())
    return report(err, VIGIL_E_INVALID_ARGUMENT, "a Python rule needs source_s3_uri and rule_to_invoke");
  if (!ctx->host || ctx->trial_count == 0 || !ctx->trials)
    return report(err, VIGIL_E_INVALID_ARGUMENT, "the rule context has no host or no trial");
  std::string why;
  if (!start_python(&why)) return report(err, VIGIL_E_PLUGIN_FAILURE, why);

  const vigil_host_api* host = ctx->host;
  vigil_session* session = ctx->session;
  Gil gil;
  try {
    py::module_ plugin = py::module_::import("vigil._plugin");
    py::capsule host_capsule(static_cast<const void*>(host), "vigil_host_api");
    py::list trials;
    for (uint32_t i = 0; i < ctx->trial_count; ++i)
      trials.append(plugin.attr("host_trial")(host_capsule, py::capsule(static_cast<void*>(ctx->trials[i]), "vigil_trial")));
    py::dict params;
    if (VIGIL_HAS_FIELD(ctx, vigil_rule_context, extra_param_count))
      for (uint32_t i = 0; i < ctx->extra_param_count; ++i)
        if (ctx->extra_param_names && ctx->extra_param_values && ctx->extra_param_names[i])
          params[py::str(ctx->extra_param_names[i])] =
              py::str(ctx->extra_param_values[i] ? ctx->extra_param_values[i] : "");
    py::object log_sink = py::none();
    if (host->log && session)
      log_sink = py::cpp_function([host, session](int level, const std::string& message) {
        host->log(session, static_cast<vigil_log_level>(level), message.c_str());
      });
    py::object evidence_sink = py::none();
    if (host->report_evidence && session)
      evidence_sink = py::cpp_function([host, session](const std::string& json) {
        vigil_error e{};
        e.struct_size = sizeof(e);
        // A refusal reaches the rule as a Python RuntimeError (pybind11 translates the exception).
        if (host->report_evidence(session, json.c_str(), &e) != VIGIL_OK)
          throw std::runtime_error(std::string("the host refused the evidence: ") +
                                   std::string(vigil::sdk::read_error_record(VIGIL_E_INTERNAL, &e).message));
      });
    py::object runner = plugin.attr("create_rule")(source, class_name, trials, params,
                                                   ctx->instance_name ? ctx->instance_name : "", log_sink,
                                                   evidence_sink);
    auto rule = std::make_unique<PythonRule>();
    rule->runner = std::move(runner);
    rule->abi.struct_size = sizeof(vigil_rule);
    rule->abi.rule_data = rule.get();
    rule->abi.destroy = rule_destroy;
    rule->abi.required_tensors = rule_required_tensors;
    rule->abi.invoke_at_step = rule_invoke_at_step;
    rule->abi.get_extension = nullptr;
    *out = &rule.release()->abi;
    return ok(err);
  } catch (py::error_already_set& e) {
    return report_python(e, err);  // a syntax error in the file: PluginFailure "SyntaxError: ..."
  } catch (const std::exception& e) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, e.what());
  }
}

uint32_t VIGIL_CALL factory_count(const vigil_rule_factory*) { return 1; }

const vigil_rule_descriptor* VIGIL_CALL factory_descriptor(const vigil_rule_factory*, uint32_t index) {
  return index == 0 ? &kRule : nullptr;
}

vigil_status VIGIL_CALL factory_create(const vigil_rule_factory*, const char* rule_id, const vigil_rule_context* ctx,
                                       vigil_rule** out, vigil_error* err) {
  if (out) *out = nullptr;
  if (!out || !ctx || !rule_id) return report(err, VIGIL_E_INVALID_ARGUMENT, "create: NULL argument");
  if (std::strcmp(rule_id, kRule.id) != 0)
    return report(err, VIGIL_E_INVALID_ARGUMENT, std::string("unknown rule id ") + rule_id);
  try {
    return create_rule(ctx, out, err);
  } catch (const std::exception& e) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, e.what());
  } catch (...) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, "unknown exception");
  }
}

const vigil_rule_factory kFactory = {sizeof(vigil_rule_factory), factory_count, factory_descriptor, factory_create};

vigil_status VIGIL_CALL preparer_prepare(const vigil_rule_preparer*, const char* rule_id,
                                         const vigil_prepare_context* ctx, vigil_error* err) {
  if (!ctx || !rule_id) return report(err, VIGIL_E_INVALID_ARGUMENT, "prepare: NULL argument");
  if (std::strcmp(rule_id, kRule.id) != 0)
    return report(err, VIGIL_E_INVALID_ARGUMENT, std::string("unknown rule id ") + rule_id);
  try {
    return prepare_rule(ctx, err);
  } catch (const std::exception& e) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, e.what());
  } catch (...) {
    return report(err, VIGIL_E_PLUGIN_FAILURE, "unknown exception");
  }
}

const vigil_rule_preparer kPreparer = {sizeof(vigil_rule_preparer), preparer_prepare};

vigil_status VIGIL_CALL plugin_init(const vigil_host_api* host, const char* plugin_path, vigil_error* err) {
  if (!VIGIL_HAS_FIELD(host, vigil_host_api, collection_tensor_names))
    return report(err, VIGIL_E_VERSION_MISMATCH, "the host's service table is too old for Python rules");
  try {
    g_plugin_path = plugin_path ? plugin_path : "";
  } catch (...) {
    return report(err, VIGIL_E_OUT_OF_MEMORY, "out of memory");
  }
  return ok(err);  // Python itself starts with the first Python rule prepared or created
}

void VIGIL_CALL plugin_deinit(void) {}  // never finalize an embedded interpreter

const void* VIGIL_CALL plugin_get_factory(const char* id) {
  if (!id) return nullptr;
  if (std::strcmp(id, VIGIL_RULE_FACTORY_ID) == 0) return &kFactory;
  if (std::strcmp(id, VIGIL_RULE_PREPARER_ID) == 0) return &kPreparer;
  return nullptr;
}

const vigil_plugin_entry kEntry = {
    sizeof(vigil_plugin_entry),
    {VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, VIGIL_ABI_PATCH},
    VIGIL_PLUGINF_NO_UNLOAD,
    "vigil.python",
    VIGIL_PYTHON_PLUGIN_VERSION,
    "embedded CPython " PY_VERSION ", pybind11",
    plugin_init,
    plugin_deinit,
    plugin_get_factory,
};

}  // namespace

extern "C" VIGIL_EXPORT const vigil_plugin_entry* VIGIL_CALL vigil_plugin_entry_v1(uint32_t, uint32_t) {
  return &kEntry;
}
