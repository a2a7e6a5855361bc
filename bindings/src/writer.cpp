// _vigil.TrialWriter: vigil::writer::TrialWriter for vigil/writer.py, with numpy arrays in; and
// _vigil.TensorBoardWriter, the hooks' TensorBoard export.
#include "bindings.h"
#include "writer/tensorboard_writer.h"
#include "writer/trial_writer.h"

namespace vigil::python {

namespace {

using writer::TensorBoardWriter;
using writer::TensorData;
using writer::TrialWriter;

// A numpy array (or anything np.asarray takes) as TensorData. `keep` holds the memory the spans
// point into until the write is done.
struct ArrayData {
  TensorData data;
  py::object keep;
  std::vector<std::string> strings;
};

ArrayData array_data(py::handle value) {
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(value);
  ArrayData out;
  auto type = element_type_of_numpy(a.dtype());
  if (!type) throw HostError(Error::not_supported("cannot save numpy dtype " + py::str(a.dtype()).cast<std::string>()));
  out.data.dtype = *type;
  out.data.shape.assign(a.shape(), a.shape() + a.ndim());
  if (*type == ElementType::String) {
    py::list flat = a.attr("ravel")().attr("tolist")();
    for (py::handle item : flat) {
      if (py::isinstance<py::bytes>(item)) out.strings.push_back(item.cast<std::string>());
      else out.strings.push_back(py::str(item).cast<std::string>());
    }
    out.data.strings = out.strings;
    return out;
  }
  // C order, little endian.
  py::dtype le = a.dtype().attr("newbyteorder")("<");
  py::array c = np.attr("ascontiguousarray")(a, py::arg("dtype") = le);
  out.data.bytes = std::span<const std::byte>(static_cast<const std::byte*>(c.data()), static_cast<size_t>(c.nbytes()));
  out.keep = c;
  return out;
}

format::SaveConfigMode save_config_mode(const py::dict& d) {
  format::SaveConfigMode m;
  if (d.contains("save_interval")) m.save_interval = d["save_interval"].cast<int64_t>();
  if (d.contains("save_steps")) m.save_steps = d["save_steps"].cast<std::vector<int64_t>>();
  if (d.contains("start_step")) m.start_step = d["start_step"].cast<int64_t>();
  if (d.contains("end_step") && !d["end_step"].is_none()) m.end_step = d["end_step"].cast<int64_t>();
  return m;
}

// The Python-facing writer: the C++ writer, or nothing once closed or abandoned.
class PyTrialWriter {
 public:
  PyTrialWriter(const std::string& out_dir, const std::string& worker, int64_t num_workers, py::object save_config,
                bool builtin_collections, bool write_end_marker, py::object clock) {
    writer::WriterOptions options;
    options.worker = worker;
    options.num_workers = num_workers;
    if (!save_config.is_none()) {
      auto m = save_config_mode(save_config.cast<py::dict>());
      options.save_config.fill(m);
    }
    options.builtin_collections = builtin_collections;
    options.write_end_marker = write_end_marker;
    if (!clock.is_none()) {
      // Called while writing; the GIL is taken back for it.
      auto fn = std::make_shared<py::object>(clock);
      options.clock = [fn]() {
        py::gil_scoped_acquire gil;
        return (*fn)().cast<double>();
      };
      clock_ = fn;
    }
    Result<std::unique_ptr<TrialWriter>> w = fail(Error::internal("not created"));
    {
      py::gil_scoped_release nogil;
      w = TrialWriter::create(out_dir, std::move(options));
    }
    writer_ = unwrap(std::move(w));
  }

  ~PyTrialWriter() {
    GilReleasedUnlessFinalizing nogil;  // closing may write (without the end marker)
    writer_.reset();
  }

  TrialWriter& w() {
    if (!writer_) throw HostError(Error::internal("the trial writer is closed"));
    return *writer_;
  }

  template <typename F>
  void run(F&& f) {
    TrialWriter& tw = w();
    Result<void> r;
    {
      py::gil_scoped_release nogil;
      r = f(tw);
    }
    unwrap(std::move(r));
  }

  void add_collection(const std::string& name, std::vector<std::string> include_regex,
                      std::vector<std::string> tensor_names, py::object reduction_config, py::object save_config,
                      bool save_histogram) {
    format::CollectionConfig c;
    c.name = name;
    c.include_regex = std::move(include_regex);
    c.tensor_names = std::move(tensor_names);
    c.save_histogram = save_histogram;
    if (!reduction_config.is_none()) {
      auto rc = reduction_config.cast<py::dict>();
      format::ReductionConfig cfg;
      cfg.reductions = unwrap(format::parse_reduction_list(rc["reductions"].cast<std::string>()));
      cfg.save_raw_tensor = rc["save_raw_tensor"].cast<bool>();
      cfg.save_shape = rc["save_shape"].cast<bool>();
      c.reduction_config = std::move(cfg);
    }
    if (!save_config.is_none()) {
      auto m = save_config_mode(save_config.cast<py::dict>());
      std::array<std::optional<format::SaveConfigMode>, 4> modes;
      modes.fill(m);
      c.save_config = modes;
    }
    run([&](TrialWriter& tw) { return tw.add_collection(std::move(c)); });
  }

  void save_tensor(const std::string& name, py::handle value, const std::vector<std::string>& collections) {
    auto d = array_data(value);
    run([&](TrialWriter& tw) { return tw.save_tensor(name, d.data, collections); });
  }

  void write_tensor(const std::string& name, py::handle value) {
    auto d = array_data(value);
    run([&](TrialWriter& tw) { return tw.write_tensor(name, d.data); });
  }

  void write_reduction(const std::string& name, const std::string& op, bool abs, py::handle value) {
    auto d = array_data(value);
    run([&](TrialWriter& tw) { return tw.write_reduction(name, op, abs, d.data); });
  }

  void close() {
    if (!writer_) return;
    run([](TrialWriter& tw) { return tw.close(); });
    py::gil_scoped_release nogil;
    writer_.reset();
  }

  void abandon() {
    py::gil_scoped_release nogil;
    if (writer_) (void)writer_->end_step();
    writer_.reset();
  }

 private:
  std::unique_ptr<TrialWriter> writer_;
  std::shared_ptr<py::object> clock_;
};

class PyTensorBoardWriter {
 public:
  PyTensorBoardWriter(const std::string& tb_dir, int mode, int64_t global_step) {
    Result<std::unique_ptr<TensorBoardWriter>> w = fail(Error::internal("not created"));
    {
      py::gil_scoped_release nogil;
      w = TensorBoardWriter::open(tb_dir, static_cast<Mode>(mode), global_step);  // which checks the mode
    }
    writer_ = unwrap(std::move(w));
  }

  ~PyTensorBoardWriter() {
    GilReleasedUnlessFinalizing nogil;  // closing writes
    writer_.reset();
  }

  template <typename F>
  void run(F&& f) {
    Result<void> r;
    {
      py::gil_scoped_release nogil;
      r = f(*writer_);
    }
    unwrap(std::move(r));
  }

  void add_histogram(const std::string& tag, py::handle values, int64_t step, double wall_time) {
    auto d = array_data(values);  // a view of the array when it is C-contiguous little endian
    const TensorValue value = d.data.dtype == ElementType::String
                                  ? TensorValue::strings(d.data.shape, std::move(d.strings))
                                  : TensorValue::numeric(d.data.dtype, d.data.shape, d.data.bytes, nullptr);
    run([&](TensorBoardWriter& w) { return w.add_histogram(tag, value, step, wall_time); });
  }

  std::string path() const { return writer_->path().string(); }

 private:
  std::unique_ptr<TensorBoardWriter> writer_;
};

}  // namespace

void register_writer(py::module_& m) {
  py::class_<PyTensorBoardWriter>(m, "TensorBoardWriter",
                                  "vigil::writer::TensorBoardWriter: <tb_dir>/<MODE>/<step>_<pid>_<host>.tfevents, "
                                  "written as <path>.tmp and renamed by close().")
      .def(py::init<const std::string&, int, int64_t>(), py::arg("tb_dir"), py::arg("mode"), py::arg("global_step"))
      .def("add_scalar",
           [](PyTensorBoardWriter& self, const std::string& tag, double value, int64_t step, double wall_time) {
             self.run([&](TensorBoardWriter& w) { return w.add_scalar(tag, value, step, wall_time); });
           },
           py::arg("tag"), py::arg("value"), py::arg("step"), py::arg("wall_time"))
      .def("add_histogram", &PyTensorBoardWriter::add_histogram, py::arg("tag"), py::arg("values"), py::arg("step"),
           py::arg("wall_time"))
      .def("flush", [](PyTensorBoardWriter& self) { self.run([](TensorBoardWriter& w) { return w.flush(); }); })
      .def("close", [](PyTensorBoardWriter& self) { self.run([](TensorBoardWriter& w) { return w.close(); }); })
      .def_property_readonly("path", &PyTensorBoardWriter::path);

  py::class_<PyTrialWriter>(m, "TrialWriter", "vigil::writer::TrialWriter (wrapped by vigil.writer.TrialWriter).")
      .def(py::init<const std::string&, const std::string&, int64_t, py::object, bool, bool, py::object>(),
           py::arg("out_dir"), py::arg("worker"), py::arg("num_workers"), py::arg("save_config"),
           py::arg("builtin_collections"), py::arg("write_end_marker"), py::arg("clock"))
      .def("add_collection", &PyTrialWriter::add_collection)
      .def("begin_step",
           [](PyTrialWriter& self, int mode) { self.run([&](writer::TrialWriter& tw) { return tw.begin_step(mode_or_global(mode)); }); })
      .def("begin_step_at",
           [](PyTrialWriter& self, int64_t g, int mode, int64_t s) {
             self.run([&](writer::TrialWriter& tw) { return tw.begin_step_at(g, mode_or_global(mode), s); });
           })
      .def("end_step", [](PyTrialWriter& self) { self.run([](writer::TrialWriter& tw) { return tw.end_step(); }); })
      .def("close", &PyTrialWriter::close)
      .def("abandon", &PyTrialWriter::abandon, "Ends the open step and drops the writer without the end marker.")
      .def("should_save", [](PyTrialWriter& self, const std::string& name) { return self.w().should_save(name); })
      .def("save_tensor", &PyTrialWriter::save_tensor)
      .def("write_tensor", &PyTrialWriter::write_tensor)
      .def("write_reduction", &PyTrialWriter::write_reduction)
      .def("write_shape",
           [](PyTrialWriter& self, const std::string& name, const std::vector<int64_t>& shape) {
             self.run([&](writer::TrialWriter& tw) { return tw.write_shape(name, shape); });
           })
      .def("save_scalar",
           [](PyTrialWriter& self, const std::string& name, double value) {
             self.run([&](writer::TrialWriter& tw) { return tw.save_scalar(name, value); });
           })
      .def("global_step", [](PyTrialWriter& self) { return self.w().global_step(); })
      .def("mode", [](PyTrialWriter& self) { return static_cast<int>(self.w().mode()); })
      .def("mode_step", [](PyTrialWriter& self) { return self.w().mode_step(); });
}

}  // namespace vigil::python
