// _vigil.QueuedWriter: vigil::writer::QueuedWriter for the training hooks (vigil/capture/hook.py). The
// training thread hands over numpy arrays (zero-copy views of the framework's CPU tensors); each is
// copied once into the queue and everything else happens on the writer thread. Nothing raises
// into the training loop: failures are reported by error() and close().
#include <limits>

#include "bindings.h"
#include "format/collections_json.h"
#include "writer/capture_policy.h"
#include "writer/queued_writer.h"

namespace vigil::python {

namespace {

using writer::QueuedWriter;
using writer::TensorData;

class PyQueuedWriter {
 public:
  PyQueuedWriter(const std::string& out_dir, const std::string& worker, int64_t num_workers, uint64_t max_queue_bytes,
                 bool resume) {
    writer::QueuedWriterOptions options;
    options.writer.worker = worker;
    options.writer.num_workers = num_workers;
    options.writer.builtin_collections = false;
    options.writer.write_collections = false;  // the hook publishes smdebug's Collection objects
    options.max_queue_bytes = max_queue_bytes;
    options.resume = resume;
    Result<std::unique_ptr<QueuedWriter>> w = fail(Error::internal("not created"));
    {
      py::gil_scoped_release nogil;
      w = QueuedWriter::create(out_dir, std::move(options));
    }
    writer_ = unwrap(std::move(w));
  }

  ~PyQueuedWriter() {
    GilReleasedUnlessFinalizing nogil;
    writer_.reset();
  }

  bool begin_step(int64_t global_step, int mode, int64_t mode_step, uint64_t expected_bytes) {
    return writer_->begin_step(global_step, mode_or_global(mode), mode_step, expected_bytes);
  }

  // `value`: a numpy array (C-contiguous views are read in place); bfloat16 and float8 values come as
  // ml_dtypes arrays or as raw bits tagged in their dtype's metadata (element_type_of_numpy).
  void write(const std::string& name, py::array value, bool save_shape,
             const std::vector<std::pair<std::string, bool>>& reductions, bool save_raw,
             std::optional<double> wall_time) {
    writer::TensorRequest request{name, save_shape, {}, save_raw, wall_time};
    for (const auto& [op, abs] : reductions) request.reductions.push_back({op, abs});
    TensorData data;
    const std::optional<ElementType> type = element_type_of_numpy(value.dtype());
    if (!type) throw HostError(Error::not_supported("cannot save numpy dtype " + py::str(value.dtype()).cast<std::string>()));
    data.dtype = *type;
    data.shape.assign(value.shape(), value.shape() + value.ndim());
    std::vector<std::string> strings;
    py::array contiguous = value;
    if (*type == ElementType::String) {
      py::list flat = value.attr("ravel")().attr("tolist")();
      for (py::handle item : flat)
        strings.push_back(py::isinstance<py::bytes>(item) ? item.cast<std::string>() : py::str(item).cast<std::string>());
      data.strings = strings;
    } else {
      if (!(value.flags() & py::array::c_style) || value.dtype().byteorder() == '>')
        contiguous = py::module_::import("numpy").attr("ascontiguousarray")(
            value, py::arg("dtype") = value.dtype().attr("newbyteorder")("<"));
      data.bytes = std::span<const std::byte>(static_cast<const std::byte*>(contiguous.data()),
                                              static_cast<size_t>(contiguous.nbytes()));
    }
    writer_->write(request, data);  // copies into the queue
  }

  // The same for a value the caller holds at `address` in C order (a CPU tensor of the PyTorch hook:
  // its data pointer, shape and numpy dtype): no numpy view is made per value. Like write(), a value
  // of no elements writes its shape only, when asked. The address is trusted as a view's would be:
  // the caller's own tensor, alive for the call.
  void write_address(const std::string& name, uintptr_t address, const std::vector<int64_t>& shape, const py::dtype& dtype,
                     bool save_shape, const std::vector<std::pair<std::string, bool>>& reductions, bool save_raw) {
    const std::optional<ElementType> type = element_type_of_numpy(dtype);
    const auto item = size_t(dtype.itemsize());
    if (!type || *type == ElementType::String || item == 0)
      throw HostError(Error::not_supported("cannot save numpy dtype " + py::str(py::handle(dtype)).cast<std::string>()));
    size_t count = 1;
    for (const int64_t d : shape) {
      if (d < 0) throw HostError(Error::invalid_argument("a negative dimension"));
      if (d != 0 && count > std::numeric_limits<size_t>::max() / size_t(d))
        throw HostError(Error::invalid_argument("a value larger than the address space"));
      count *= size_t(d);
    }
    if (count > std::numeric_limits<size_t>::max() / item)
      throw HostError(Error::invalid_argument("a value larger than the address space"));
    if (count == 0 && !save_shape) return;  // as write(): nothing for a value of no elements
    writer::TensorRequest request{name, save_shape, {}, save_raw && count > 0, std::nullopt};
    if (count > 0)
      for (const auto& [op, abs] : reductions) request.reductions.push_back({op, abs});
    TensorData data;
    data.dtype = *type;
    data.shape = shape;
    if (count > 0) data.bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(address), count * item);
    writer_->write(request, data);  // copies into the queue
  }

  void end_step() { writer_->end_step(); }
  void publish_collections(std::string json) { writer_->publish_collections(std::move(json)); }

  // None, or the message of the first error (the trial is then left as it was).
  std::optional<std::string> close(bool end_marker) {
    Result<void> r;
    {
      py::gil_scoped_release nogil;
      r = writer_->close(end_marker);
    }
    if (!r) return r.error().message;
    return std::nullopt;
  }

  std::optional<std::string> error() const {
    auto e = writer_->error();
    if (e) return e->message;
    return std::nullopt;
  }

  py::dict stats() const {
    auto s = writer_->stats();
    py::dict d;
    d["queued_bytes"] = s.queued_bytes;
    d["peak_queued_bytes"] = s.peak_queued_bytes;
    d["written_steps"] = s.written_steps;
    d["dropped_steps"] = s.dropped_steps;
    return d;
  }

 private:
  std::unique_ptr<QueuedWriter> writer_;
};

// _vigil.CapturePolicy: the capture core (writer/capture_policy.h) for the Python hooks, which keep
// smdebug's Collection objects and hand their configuration over once, as a collections file.
class PyCapturePolicy {
 public:
  // `collections_json`: a collections file (§1.4) whose null reduction_config / save_config modes
  // take the hook's; `defaults_json`: {"reduction_config": ..., "save_config": ...}, the hook's.
  PyCapturePolicy(const std::string& collections_json, std::vector<std::string> include, const std::string& defaults_json,
                  int64_t init_step) {
    auto collections = unwrap(format::parse_collections_json(collections_json, "the hook's collections"));
    auto defaults_file = unwrap(format::parse_collections_json(
        R"({"_meta": {"num_workers": 1}, "collections": {"defaults": )" + defaults_json + "}}", "the hook's save and reduction configuration"));
    writer::CaptureDefaults defaults;
    const auto& d = defaults_file.collections.at(0);
    if (d.reduction_config) defaults.reduction_config = *d.reduction_config;
    if (d.save_config)
      for (size_t i = 0; i < defaults.save_config.size(); ++i)
        if ((*d.save_config)[i]) defaults.save_config[i] = *(*d.save_config)[i];
    policy_ = unwrap(writer::CapturePolicy::create(std::move(collections.collections), std::move(include),
                                                   std::move(defaults), init_step));
  }

  // None when nothing of `name` is saved now; else (collections, save_raw, save_shape, reductions
  // [(op, abs)], histogram collection or None, scalar_summary).
  py::object plan(const std::string& name, bool check_due) {
    const writer::CapturePlan p = policy_.plan(name, {}, check_due);
    if (p.empty()) return py::none();
    std::vector<std::pair<std::string, bool>> reductions;
    for (const auto& r : p.reductions) reductions.emplace_back(r.op, r.abs);
    return py::make_tuple(p.collections, p.save_raw, p.save_shape, reductions, p.histogram_collection, p.scalar_summary);
  }

  std::string collections_json(int64_t num_workers) const {
    return format::serialize_collections_json(policy_.collections_file(num_workers));
  }

  writer::CapturePolicy policy_;
};

// A step's due collections as the tuple the hook keeps (its plans are keyed by it).
py::tuple due_tuple(const std::vector<std::string>& due) {
  py::tuple out(due.size());
  for (size_t i = 0; i < due.size(); ++i) out[i] = py::str(due[i]);
  return out;
}

}  // namespace

void register_hook_writer(py::module_& m) {
  m.def(
      "pytorch_builtin_collections",
      [] {
        py::list out;
        for (const auto& b : writer::kPyTorchCollections)
          out.append(py::make_tuple(std::string(b.name), std::string(b.regex)));
        return out;
      },
      "[(name, include_regex or '')]: smdebug PyTorch's built-in collections, the host's one table");
  m.def(
      "scalar_collections",
      [] {
        std::vector<std::string> out;
        for (auto name : writer::kScalarCollections) out.emplace_back(name);
        return out;
      },
      "The collections of scalars (never reduced or histogrammed), the host's one table");
  py::class_<PyCapturePolicy>(m, "CapturePolicy",
                              "smdebug's hook policy (host/writer/capture_policy.h): steps, due collections, plans")
      .def(py::init<const std::string&, std::vector<std::string>, const std::string&, int64_t>(),
           py::arg("collections_json"), py::arg("include"), py::arg("defaults_json"), py::arg("init_step") = -1)
      .def("set_mode", [](PyCapturePolicy& p, int mode) { p.policy_.set_mode(mode_or_global(mode)); }, py::arg("mode"))
      .def("begin_step", [](PyCapturePolicy& p) {
             p.policy_.begin_step();
             return due_tuple(p.policy_.due_collections());
           }, "Begins the next step; the included collections due at it, by name (one call a step)")
      .def("set_step", [](PyCapturePolicy& p, int64_t global_step, int64_t mode_step) { p.policy_.set_step(global_step, mode_step); },
           py::arg("global_step"), py::arg("mode_step"))
      .def_property_readonly("step", [](const PyCapturePolicy& p) { return p.policy_.global_step(); })
      .def("mode_step", [](const PyCapturePolicy& p, int mode) { return p.policy_.mode_step(mode_or_global(mode)); },
           py::arg("mode"))
      .def("due_collections", [](PyCapturePolicy& p) { return due_tuple(p.policy_.due_collections()); },
           "The included collections due at the current step, by name")
      .def("plan", &PyCapturePolicy::plan, py::arg("name"), py::arg("check_due") = true)
      .def("join", [](PyCapturePolicy& p, const std::string& name, const std::vector<std::string>& collections) {
             return p.policy_.join(name, collections);
           }, py::arg("name"), py::arg("collections"), "smdebug's save_tensor: True when one of them saves the raw value")
      .def("collections_json", &PyCapturePolicy::collections_json, py::arg("num_workers"),
           "The collections as configured and completed, with the names recorded so far");
  py::class_<PyQueuedWriter>(m, "QueuedWriter", "A trial writer with its own thread and a bounded queue (hooks)")
      .def(py::init<const std::string&, const std::string&, int64_t, uint64_t, bool>(), py::arg("out_dir"),
           py::arg("worker"), py::arg("num_workers"), py::arg("max_queue_bytes"), py::arg("resume") = false)
      .def("begin_step", &PyQueuedWriter::begin_step, py::arg("global_step"), py::arg("mode"), py::arg("mode_step"),
           py::arg("expected_bytes") = 0)
      .def("write", &PyQueuedWriter::write, py::arg("name"), py::arg("value"), py::arg("save_shape"),
           py::arg("reductions"), py::arg("save_raw"), py::arg("wall_time") = py::none())
      .def("write_address", &PyQueuedWriter::write_address, py::arg("name"), py::arg("address"), py::arg("shape"),
           py::arg("dtype"), py::arg("save_shape"), py::arg("reductions"), py::arg("save_raw"),
           "write() of a C-order value at `address` (the PyTorch hook's CPU tensors: no numpy view per value)")
      .def("end_step", &PyQueuedWriter::end_step)
      .def("publish_collections", &PyQueuedWriter::publish_collections)
      .def("close", &PyQueuedWriter::close, py::arg("end_marker"))
      .def("error", &PyQueuedWriter::error)
      .def("stats", &PyQueuedWriter::stats);
}

}  // namespace vigil::python
