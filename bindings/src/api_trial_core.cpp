// _vigil.ApiTrialCore: the Python Trial/Tensor interface over the plugin ABI's host table
// (vigil_host_api). Inside `vigil evaluate` the Python rule plugin gives each Python rule trials of
// this kind, so a rule reads through the evaluator's host (its shared trial, its per-step value
// cache, its cancellation) instead of opening a second reader.
//
// Values: with copy_values (the plugin's mode) each value is copied into memory Python owns and
// the host's view is released at once, so no view outlives invoke_at_step. Without it (tests),
// the numpy array keeps the view and releases it when the array goes.
#include <vigil/vigil.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "bindings.h"
#include "plugin_host/host_services.h"
#include "trial/reductions.h"
#include "trial/trial.h"
#include "trial_core.h"

namespace vigil::python {

namespace {

constexpr int64_t kWaitSliceMs = 200;

[[nodiscard]] vigil_status push_string(void* ctx, const char* utf8, size_t len) {
  try {
    static_cast<std::vector<std::string>*>(ctx)->emplace_back(utf8, len);
  } catch (...) {
    return VIGIL_E_OUT_OF_MEMORY;
  }
  return VIGIL_OK;
}

[[nodiscard]] vigil_status push_i64(void* ctx, const int64_t* values, size_t count) {
  try {
    auto* out = static_cast<std::vector<int64_t>*>(ctx);
    out->insert(out->end(), values, values + count);
  } catch (...) {
    return VIGIL_E_OUT_OF_MEMORY;
  }
  return VIGIL_OK;
}

std::optional<ElementType> element_type_of_dl(DLDataType t) {
  using ET = ElementType;
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return ET::Float16;
      if (t.bits == 32) return ET::Float32;
      if (t.bits == 64) return ET::Float64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return ET::BFloat16;
      break;
    case kDLInt:
      if (t.bits == 8) return ET::Int8;
      if (t.bits == 16) return ET::Int16;
      if (t.bits == 32) return ET::Int32;
      if (t.bits == 64) return ET::Int64;
      break;
    case kDLUInt:
      if (t.bits == 8) return ET::UInt8;
      if (t.bits == 16) return ET::UInt16;
      if (t.bits == 32) return ET::UInt32;
      if (t.bits == 64) return ET::UInt64;
      break;
    case VIGIL_DL_BOOL:
      if (t.bits == 8) return ET::Bool;
      break;
    case kDLComplex:
      if (t.bits == 64) return ET::Complex64;
      if (t.bits == 128) return ET::Complex128;
      break;
    default: break;
  }
  return std::nullopt;
}

}  // namespace

class ApiTrialCore {
 public:
  ApiTrialCore(const vigil_host_api* host, vigil_trial* trial, bool copy_values)
      : host_(host), trial_(trial), copy_values_(copy_values) {
    if (!host_ || !trial_) throw py::value_error("ApiTrialCore needs a host table and a trial handle");
  }

  // Test helper: a trial opened here, served through this process's own host table.
  static std::unique_ptr<ApiTrialCore> open_local(const std::string& path, bool copy_values, bool with_cache) {
    auto trial = open_trial_interruptible(path, std::nullopt, std::nullopt);
    auto session = std::make_unique<vigil_session>();
    session->rule_name = "python";
    if (with_cache) session->cache = std::make_shared<plugin_host::StepValueCache>();
    auto handle = std::make_unique<vigil_trial>(vigil_trial{trial, session.get()});
    auto core = std::make_unique<ApiTrialCore>(plugin_host::host_api(), handle.get(), copy_values);
    core->path_ = path;
    core->owned_trial_ = std::move(trial);
    core->owned_session_ = std::move(session);
    core->owned_handle_ = std::move(handle);
    return core;
  }

  std::string path() const { return path_; }
  bool copy_values() const { return copy_values_; }

  int64_t outstanding_views() const {
    return owned_session_ ? owned_session_->outstanding_views->load() : -1;
  }
  size_t cached_values() const {
    return owned_session_ && owned_session_->cache ? owned_session_->cache->size() : 0;
  }
  void hold_refresh() {
    if (owned_trial_) owned_trial_->hold_refresh();  // inside the evaluator the host already holds it
  }
  void release_refresh() {
    if (owned_trial_) owned_trial_->release_refresh();
  }

  // ---- trial ----
  std::vector<std::string> tensor_names(std::optional<int64_t> step, int mode,
                                        std::optional<std::vector<std::string>> regex,
                                        std::optional<std::string> collection) {
    std::vector<const char*> patterns;
    if (regex)
      for (const auto& r : *regex) patterns.push_back(r.c_str());
    vigil_name_query q{};
    q.struct_size = sizeof(q);
    q.has_step = step.has_value();
    q.step = step.value_or(0);
    q.mode = mode;
    q.regex = patterns.empty() ? nullptr : patterns.data();
    q.regex_count = patterns.size();
    q.collection = collection ? collection->c_str() : nullptr;
    std::vector<std::string> out;
    call([&](vigil_error* err) { return host_->tensor_names(trial_, &q, {&out, push_string}, err); });
    return out;
  }

  bool has_tensor(const std::string& name) {
    bool out = false;
    call([&](vigil_error* err) { return host_->has_tensor(trial_, name.c_str(), &out, err); });
    return out;
  }

  std::vector<int64_t> steps(int mode, bool incomplete) {
    std::vector<int64_t> out;
    call([&](vigil_error* err) { return host_->steps(trial_, mode, incomplete, {&out, push_i64}, err); });
    return out;
  }

  std::vector<int64_t> modes() {
    std::vector<int64_t> out;
    call([&](vigil_error* err) { return host_->modes(trial_, {&out, push_i64}, err); });
    return out;
  }

  std::optional<std::pair<int, int64_t>> mode_modestep(int64_t g) {
    bool found = false;
    vigil_mode m = VIGIL_MODE_GLOBAL;
    vigil_step s = 0;
    call([&](vigil_error* err) { return host_->mode_modestep(trial_, g, &found, &m, &s, err); });
    if (!found) return std::nullopt;
    return std::make_pair(static_cast<int>(m), s);
  }

  std::optional<int64_t> global_step(int mode, int64_t s) {
    bool found = false;
    vigil_step out = 0;
    call([&](vigil_error* err) { return host_->global_step(trial_, mode, s, &found, &out, err); });
    if (!found) return std::nullopt;
    return out;
  }

  std::vector<std::string> workers() {
    std::vector<std::string> out;
    call([&](vigil_error* err) { return host_->workers(trial_, {&out, push_string}, err); });
    return out;
  }

  // The ABI has collection names and their tensors; regexes and configurations stay host-side.
  py::list collections() {
    std::vector<std::string> names;
    call([&](vigil_error* err) { return host_->collection_names(trial_, {&names, push_string}, err); });
    py::list out;
    for (const auto& n : names) {
      std::vector<std::string> tensors;
      call([&](vigil_error* err) {
        return host_->collection_tensor_names(trial_, n.c_str(), {&tensors, push_string}, err);
      });
      py::dict d;
      d["name"] = n;
      d["include_regex"] = py::list();
      d["tensor_names"] = tensors;
      d["reduction_config"] = py::none();
      d["save_config"] = py::none();
      d["save_histogram"] = true;
      out.append(d);
    }
    return out;
  }

  int has_passed_step(int64_t step, int mode) {
    vigil_step_state out = VIGIL_STEP_UNAVAILABLE;
    call([&](vigil_error* err) { return host_->has_passed_step(trial_, step, mode, &out, err); });
    return out;
  }

  void wait_for_steps(const std::vector<int64_t>& wanted, int mode) {
    while (true) {
      vigil_error err = new_error();
      vigil_status st;
      {
        py::gil_scoped_release nogil;
        st = host_->wait_for_steps(trial_, wanted.data(), wanted.size(), mode, kWaitSliceMs, &err);
      }
      if (st == VIGIL_OK) return;
      if (st != VIGIL_E_TIMEOUT) throw HostError(plugin_host::error_from_abi(st, err));
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  int64_t last_complete_step() {
    vigil_step out = -1;
    call([&](vigil_error* err) { return host_->last_complete_step(trial_, &out, err); });
    return out;
  }

  bool training_ended() {
    bool out = false;
    call([&](vigil_error* err) { return host_->training_ended(trial_, &out, err); });
    return out;
  }

  int64_t num_workers() { return static_cast<int64_t>(workers().size()); }

  // ---- tensor ----
  std::vector<int64_t> tensor_steps(const std::string& name, int mode, bool incomplete) {
    std::vector<int64_t> out;
    call([&](vigil_error* err) {
      return host_->tensor_steps(trial_, name.c_str(), mode, incomplete, {&out, push_i64}, err);
    });
    return out;
  }

  std::vector<std::string> tensor_workers(const std::string& name, int64_t step, int mode) {
    std::vector<std::string> out;
    call([&](vigil_error* err) {
      return host_->tensor_workers(trial_, name.c_str(), step, mode, {&out, push_string}, err);
    });
    return out;
  }

  std::vector<int64_t> shape(const std::string& name, int64_t step, int mode, const std::optional<std::string>& worker) {
    const vigil_tensor_key key = make_key(name, step, mode, worker);
    std::vector<int64_t> out;
    call([&](vigil_error* err) { return host_->tensor_shape(trial_, &key, {&out, push_i64}, err); });
    return out;
  }

  std::shared_ptr<HostBuffer> buffer(const std::string& name, int64_t step, int mode,
                                     const std::optional<std::string>& worker) {
    const vigil_tensor_key key = make_key(name, step, mode, worker);
    vigil_tensor* view = nullptr;
    vigil_error err = new_error();
    vigil_status st;
    {
      py::gil_scoped_release nogil;
      st = host_->tensor_value(trial_, &key, &view, &err);
    }
    if (st == VIGIL_E_TYPE_ERROR) return string_buffer(key);
    if (st != VIGIL_OK) throw HostError(plugin_host::error_from_abi(st, err));
    if (!view) throw HostError(Error::internal("tensor_value returned no view"));
    std::shared_ptr<vigil_tensor> owned(view, [](vigil_tensor* v) {
      if (v && v->deleter) v->deleter(v);
    });
    const DLTensor& t = view->dl_tensor;
    auto type = element_type_of_dl(t.dtype);
    if (!type) throw HostError(Error::not_supported(fmt::format("unsupported DLPack dtype code {} bits {}", t.dtype.code, t.dtype.bits)));
    auto b = std::make_shared<HostBuffer>();
    b->dtype = *type;
    b->shape.assign(t.shape, t.shape + t.ndim);
    size_t n = 1;
    for (int64_t d : b->shape) n *= static_cast<size_t>(d);
    b->nbytes = n * format::element_type_info(*type).item_size;
    const auto* src = static_cast<const std::byte*>(t.data) + t.byte_offset;
    if (copy_values_) {
      auto copy = std::make_shared<AlignedBuffer>(b->nbytes);
      if (b->nbytes) std::memcpy(copy->data(), src, b->nbytes);
      b->data = copy->data();
      b->keepalive = std::move(copy);
      owned.reset();  // the host's view goes now: nothing outlives the call
    } else {
      b->data = src;
      b->keepalive = std::move(owned);
    }
    return b;
  }

  py::object value(const std::string& name, int64_t step, int mode, const std::optional<std::string>& worker) {
    return numpy_array(buffer(name, step, mode, worker));
  }

  py::object reduction_value(const std::string& name, int64_t step, const std::string& op, bool abs, int mode,
                             const std::optional<std::string>& worker) {
    auto parsed = parse_reduction_name(op);
    if (!parsed) throw HostError(Error::invalid_argument(fmt::format("Invalid reduction type {}", op)));
    const auto red = static_cast<vigil_reduction>(static_cast<int>(*parsed) + VIGIL_RED_MIN);
    const vigil_tensor_key key = make_key(name, step, mode, worker);
    double out = 0;
    call([&](vigil_error* err) { return host_->reduction_value(trial_, &key, red, abs, &out, err); });
    return numpy_scalar(ElementType::Float64, out);
  }

  // The saved reductions only (host function saved_reductions, ABI 1.1).
  py::list reduction_values(const std::string& name, int64_t step, int mode, const std::optional<std::string>& worker) {
    if (!VIGIL_HAS_FIELD(host_, vigil_host_api, saved_reductions) || !host_->saved_reductions)
      throw HostError(Error::not_supported("the host has no saved_reductions (it speaks ABI 1.0)"));
    const vigil_tensor_key key = make_key(name, step, mode, worker);
    std::vector<std::tuple<vigil_reduction, bool, double>> saved;
    vigil_reduction_sink sink{&saved, [](void* ctx, vigil_reduction r, bool abs, double v) -> vigil_status {
                                static_cast<std::vector<std::tuple<vigil_reduction, bool, double>>*>(ctx)->emplace_back(r, abs, v);
                                return VIGIL_OK;
                              }};
    call([&](vigil_error* err) { return host_->saved_reductions(trial_, &key, sink, err); });
    py::list out;
    py::object np = py::module_::import("numpy");
    for (const auto& [r, abs, v] : saved)
      out.append(py::make_tuple(std::string(reduction_name(kAllReductionOps[r - VIGIL_RED_MIN])), abs, np.attr("array")(v)));
    return out;
  }

 private:
  static vigil_error new_error() {
    vigil_error err{};
    err.struct_size = sizeof(err);
    return err;
  }

  static vigil_tensor_key make_key(const std::string& name, int64_t step, int mode,
                                   const std::optional<std::string>& worker) {
    vigil_tensor_key key{};
    key.struct_size = sizeof(key);
    key.name = name.c_str();
    key.step = step;
    key.mode = mode;
    key.worker = worker ? worker->c_str() : nullptr;
    return key;
  }

  // Runs one host call with the GIL released; a failure becomes the matching Python exception.
  template <typename F>
  void call(F&& f) {
    vigil_error err = new_error();
    vigil_status st;
    {
      py::gil_scoped_release nogil;
      st = f(&err);
    }
    if (st != VIGIL_OK) throw HostError(plugin_host::error_from_abi(st, err));
  }

  std::shared_ptr<HostBuffer> string_buffer(const vigil_tensor_key& key) {
    auto b = std::make_shared<HostBuffer>();
    b->dtype = ElementType::String;
    call([&](vigil_error* err) { return host_->tensor_strings(trial_, &key, {&b->strings, push_string}, err); });
    call([&](vigil_error* err) { return host_->tensor_shape(trial_, &key, {&b->shape, push_i64}, err); });
    return b;
  }

  const vigil_host_api* host_;
  vigil_trial* trial_;
  bool copy_values_;
  std::string path_;
  std::shared_ptr<Trial> owned_trial_;
  std::unique_ptr<vigil_session> owned_session_;
  std::unique_ptr<vigil_trial> owned_handle_;
};

void register_api_trial_core(py::module_& m) {
  py::class_<ApiTrialCore>(m, "ApiTrialCore",
                           "A trial served by a host through the plugin ABI (vigil_host_api); wrapped by vigil.trials.Trial.")
      .def(py::init([](py::capsule host, py::capsule trial, bool copy_values) {
             auto* h = static_cast<const vigil_host_api*>(PyCapsule_GetPointer(host.ptr(), "vigil_host_api"));
             if (!h) throw py::error_already_set();
             auto* t = static_cast<vigil_trial*>(PyCapsule_GetPointer(trial.ptr(), "vigil_trial"));
             if (!t) throw py::error_already_set();
             return std::make_unique<ApiTrialCore>(h, t, copy_values);
           }),
           py::arg("host"), py::arg("trial"), py::arg("copy_values") = true,
           "From capsules named \"vigil_host_api\" and \"vigil_trial\" (what the Python rule plugin passes).")
      .def_property_readonly("path", &ApiTrialCore::path)
      .def_property_readonly("copy_values", &ApiTrialCore::copy_values)
      .def("outstanding_views", &ApiTrialCore::outstanding_views, "Views the host handed out and not yet released (test helper cores only).")
      .def("cached_values", &ApiTrialCore::cached_values)
      .def("tensor_names", &ApiTrialCore::tensor_names, py::arg("step"), py::arg("mode"), py::arg("regex"),
           py::arg("collection"))
      .def("has_tensor", &ApiTrialCore::has_tensor)
      .def("steps", &ApiTrialCore::steps)
      .def("modes", &ApiTrialCore::modes)
      .def("mode_modestep", &ApiTrialCore::mode_modestep)
      .def("global_step", &ApiTrialCore::global_step)
      .def("workers", &ApiTrialCore::workers)
      .def("collections", &ApiTrialCore::collections)
      .def("has_passed_step", &ApiTrialCore::has_passed_step)
      .def("wait_for_steps", &ApiTrialCore::wait_for_steps)
      .def("refresh", [](ApiTrialCore&) {})  // the host refreshes on every query
      .def("hold_refresh", &ApiTrialCore::hold_refresh)
      .def("release_refresh", &ApiTrialCore::release_refresh)
      .def("last_complete_step", &ApiTrialCore::last_complete_step)
      .def("loaded_all_steps", &ApiTrialCore::training_ended)
      .def("training_ended", &ApiTrialCore::training_ended)
      .def("num_workers", &ApiTrialCore::num_workers)
      .def("tensor_steps", &ApiTrialCore::tensor_steps)
      .def("tensor_workers", &ApiTrialCore::tensor_workers)
      .def("shape", &ApiTrialCore::shape, py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def("buffer", &ApiTrialCore::buffer, py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def("value", &ApiTrialCore::value, py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def("reduction_value", &ApiTrialCore::reduction_value, py::arg("name"), py::arg("step"), py::arg("reduction"),
           py::arg("abs"), py::arg("mode"), py::arg("worker"))
      .def("reduction_values", &ApiTrialCore::reduction_values, py::arg("name"), py::arg("step"), py::arg("mode"),
           py::arg("worker"));

  m.def("open_api_trial", &ApiTrialCore::open_local, py::arg("path"), py::arg("copy_values") = false,
        py::arg("with_cache") = false,
        "Test helper: opens a trial here and serves it through this process's own vigil_host_api table.");
}

}  // namespace vigil::python
