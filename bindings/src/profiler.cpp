// The profiler's C++ pieces for Python (vigil/capture/framework_profiler.py captures with them inside the training
// hooks, vigil/profiler.py reads with them): the profiler config and its watcher, profiling windows,
// the system monitor thread, the trace event writer, and the system / framework readers. Host
// errors become vigil.exceptions classes (errors.cpp); calls that wait on threads or do file I/O
// release the GIL, so a training loop's other Python threads keep running.
#include <deque>
#include <mutex>

#include "bindings.h"
#include "profiler/framework_metrics_reader.h"
#include "profiler/node_id.h"
#include "profiler/profiler_config.h"
#include "profiler/profiler_layout.h"
#include "profiler/profiler_trial.h"
#include "profiler/profiling_window.h"
#include "profiler/system_metrics_reader.h"
#include "profiler/system_monitor.h"
#include "profiler/trace_event_writer.h"
#include "profiler/trace_events.h"

namespace vigil::python {

namespace {

using namespace vigil::profiler;

// Trace event args: JSON scalars, lists and dicts (anything else is written as its str()).
nlohmann::ordered_json json_of(py::handle h) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) return h.cast<int64_t>();
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(h)) out[py::str(k).cast<std::string>()] = json_of(v);
    return out;
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (py::handle v : h) out.push_back(json_of(v));
    return out;
  }
  return py::str(h).cast<std::string>();
}

py::object py_of(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& v : j) out.append(py_of(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [k, v] : j.items()) out[py::str(k)] = py_of(v);
      return out;
    }
    default: return py::none();
  }
}

py::dict dict_of(const SystemMetric& m) {
  py::dict d;
  d["Type"] = m.type;
  d["Name"] = m.name;
  d["Dimension"] = m.dimension;
  d["Value"] = m.value;
  d["NodeId"] = m.node_id;
  d["Timestamp"] = m.timestamp_s;
  return d;
}

py::dict dict_of(const TraceEvent& e) {
  py::dict d;
  d["name"] = e.name;
  d["phase"] = e.phase;
  d["start_us"] = e.start_us;
  d["end_us"] = e.end_us;
  d["duration"] = e.end_us - e.start_us;
  d["phase_pid"] = e.phase_pid;
  d["pid"] = e.pid;
  d["tid"] = e.tid;
  d["node_id"] = e.node_id;
  d["args"] = py_of(e.args);
  return d;
}

template <typename T>
py::list list_of(const std::vector<T>& items) {
  py::list out;
  for (const auto& i : items) out.append(dict_of(i));
  return out;
}

// Runs `f` with the GIL released: listing and reading an s3:// prefix wait on the network.
template <typename F>
auto without_gil(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

py::list files_of(const std::vector<TimedFile>& files) {
  py::list out;
  for (const auto& f : files) out.append(py::make_tuple(f.timestamp_us, f.relpath));
  return out;
}

// The monitor logs from its own thread: messages wait here until the hook, on the training thread,
// hands them to Python's logging (no GIL is taken on the monitor thread).
struct MonitorLog {
  std::mutex mutex;
  std::deque<std::string> messages;
};

class PySystemMonitor {
 public:
  explicit PySystemMonitor(SystemMonitorOptions options) : log_(std::make_shared<MonitorLog>()) {
    std::weak_ptr<MonitorLog> weak = log_;
    options.on_log = [weak](const std::string& message) {
      if (auto log = weak.lock()) {
        std::lock_guard lock(log->mutex);
        if (log->messages.size() < 100) log->messages.push_back(message);
      }
    };
    monitor_ = std::make_unique<SystemMonitor>(std::move(options));
  }
  ~PySystemMonitor() {
    GilReleasedUnlessFinalizing nogil;
    monitor_.reset();
  }
  bool start() { return monitor_->start(); }
  void stop() {
    py::gil_scoped_release nogil;
    monitor_->stop();
  }
  uint64_t samples_written() const { return monitor_->samples_written(); }
  bool stepped_aside() const { return monitor_->stepped_aside(); }
  std::vector<std::string> take_messages() {
    std::lock_guard lock(log_->mutex);
    std::vector<std::string> out(log_->messages.begin(), log_->messages.end());
    log_->messages.clear();
    return out;
  }

 private:
  std::shared_ptr<MonitorLog> log_;
  std::unique_ptr<SystemMonitor> monitor_;
};

TraceRecord record_of(std::string phase, std::string name, int64_t start_us, int64_t duration_us, py::handle args,
                      const std::string& ph, const std::string& scope) {
  TraceRecord r;
  r.training_phase = std::move(phase);
  r.name = std::move(name);
  r.ph = ph.empty() ? 'X' : ph[0];
  r.start_us = start_us;
  r.duration_us = duration_us;
  r.scope = scope;
  if (!args.is_none()) r.args = json_of(args);
  return r;
}

}  // namespace

void register_profiler(py::module_& m) {
  py::enum_<TimeUnit>(m, "TimeUnit", "The units of profiler time-range queries (smdebug's TimeUnits)")
      .value("SECONDS", TimeUnit::Seconds)
      .value("MILLISECONDS", TimeUnit::Milliseconds)
      .value("MICROSECONDS", TimeUnit::Microseconds)
      .value("NANOSECONDS", TimeUnit::Nanoseconds);
  m.def("to_microseconds", &to_microseconds, py::arg("value"), py::arg("unit"),
        "A time in `unit` as whole µs since the epoch (truncated, as Python's int()).");

  py::class_<MetricsConfig>(m, "MetricsConfig", "One *ProfilingConfig string of the profiler config, parsed")
      .def_readonly("enabled", &MetricsConfig::enabled)
      .def_readonly("start_step", &MetricsConfig::start_step)
      .def_readonly("num_steps", &MetricsConfig::num_steps)
      .def_readonly("start_time", &MetricsConfig::start_time)
      .def_readonly("duration", &MetricsConfig::duration)
      .def_property_readonly("is_time_range", &MetricsConfig::is_time_range)
      .def_readonly("metrics_regex", &MetricsConfig::metrics_regex)
      .def_readonly("profiler_name", &MetricsConfig::profiler_name)
      .def_readonly("cprofile_timer", &MetricsConfig::cprofile_timer);

  py::class_<ProfilerConfig>(m, "ProfilerConfig", "The profiler config ($SMPROFILER_CONFIG_PATH), parsed")
      .def(py::init<>())
      .def_readonly("file_found", &ProfilerConfig::file_found)
      .def_readonly("disable_profiler", &ProfilerConfig::disable_profiler)
      .def_readonly("has_profiling_parameters", &ProfilerConfig::has_profiling_parameters)
      .def_readonly("profiler_enabled", &ProfilerConfig::profiler_enabled)
      .def_readonly("interval_ms", &ProfilerConfig::interval_ms)
      .def_property_readonly("local_path", [](const ProfilerConfig& c) { return c.local_path.string(); })
      .def_readonly("rotate_max_file_size_bytes", &ProfilerConfig::rotate_max_file_size_bytes)
      .def_readonly("rotate_file_close_interval_s", &ProfilerConfig::rotate_file_close_interval_s)
      .def_readonly("file_open_fail_threshold", &ProfilerConfig::file_open_fail_threshold)
      .def_readonly("detailed", &ProfilerConfig::detailed)
      .def_readonly("dataloader", &ProfilerConfig::dataloader)
      .def_readonly("python", &ProfilerConfig::python)
      .def_readonly("horovod", &ProfilerConfig::horovod)
      .def_readonly("smdataparallel", &ProfilerConfig::smdataparallel)
      .def_readonly("problems", &ProfilerConfig::problems)
      .def_property_readonly("system_monitor_enabled", &ProfilerConfig::system_monitor_enabled)
      .def_property_readonly("framework_profiling_enabled", &ProfilerConfig::framework_profiling_enabled);
  m.def("parse_profiler_config", [](const std::string& text) { return unwrap(parse_profiler_config(text)); },
        py::arg("json_text"), "Parses a profiler config file's text (InvalidArgument names a bad field).");
  m.def("load_profiler_config", [](const std::string& path) { return unwrap(load_profiler_config(path)); },
        py::arg("path"), "Reads a profiler config; a missing file is the default (file_found False).");
  m.def("profiler_config_path_from_environment", [] { return profiler_config_path_from_environment().string(); },
        "$SMPROFILER_CONFIG_PATH, else /opt/ml/input/config/profilerconfig.json.");

  py::class_<ProfilerConfigWatcher>(m, "ProfilerConfigWatcher",
                                    "Re-reads the profiler config whenever the file changes (a cheap stat otherwise)")
      .def(py::init([](const std::string& path) { return std::make_unique<ProfilerConfigWatcher>(path); }),
           py::arg("path"))
      .def(
          "refresh", [](ProfilerConfigWatcher& w) { return unwrap(w.refresh()); },
          "True when the file changed and was loaded; raises when it changed and was refused (the last good "
          "config stays current).")
      .def_property_readonly(
          "current", [](const ProfilerConfigWatcher& w) { return ProfilerConfig(w.current()); },
          "A copy of the config in force")
      .def_property_readonly("path", [](const ProfilerConfigWatcher& w) { return w.path().string(); });

  py::class_<ProfilingWindow>(m, "ProfilingWindow", "Whether a *ProfilingConfig is active at a step (smdebug's rules)")
      .def(py::init<MetricsConfig>(), py::arg("config"))
      .def("is_active", &ProfilingWindow::is_active, py::arg("step"), py::arg("now_s"))
      .def("has_ended", &ProfilingWindow::has_ended, py::arg("step"), py::arg("now_s"))
      .def_property_readonly("config", [](const ProfilingWindow& w) { return MetricsConfig(w.config()); });

  m.def(
      "this_process_node_id", [](std::optional<int64_t> rank) { return this_process_node_id(rank); },
      py::arg("rank") = py::none(), "This process's framework node id (format spec §8.1).");

  m.def(
      "mark_profiler_training_ended",
      [](const std::string& root, const std::string& folder) {
        if (folder != "system" && folder != "framework")
          throw py::value_error("folder must be 'system' or 'framework', not '" + folder + "'");
        unwrap(mark_training_ended(root, folder == "system" ? ProfilerFolder::System : ProfilerFolder::Framework));
      },
      py::arg("root"), py::arg("folder"),
      "Writes <root>/<folder>/training_job_end.ts: the profiler output's end of training (format spec §8.6).");

  py::class_<PySystemMonitor>(m, "SystemMonitor", "The system monitor thread (host metrics every interval)")
      .def(py::init([](const ProfilerConfig& config, std::optional<std::string> root, std::optional<std::string> nvml) {
             SystemMonitorOptions o = system_monitor_options(config);
             if (root) o.root = *root;
             if (nvml) o.nvml_library = *nvml;
             return std::make_unique<PySystemMonitor>(std::move(o));
           }),
           py::arg("config"), py::arg("root") = py::none(), py::arg("nvml_library") = py::none(),
           "A monitor with the config's interval, LocalPath and rotation (root and nvml_library override).")
      .def("start", &PySystemMonitor::start, "Starts the thread; False (and a message) when it could not.")
      .def("stop", &PySystemMonitor::stop, "Stops the thread and publishes the open file (GIL released).")
      .def_property_readonly("samples_written", &PySystemMonitor::samples_written)
      .def_property_readonly("stepped_aside", &PySystemMonitor::stepped_aside)
      .def("take_messages", &PySystemMonitor::take_messages, "The monitor's log messages since the last call.");

  py::class_<TraceEventWriter>(m, "TraceEventWriter", "Framework events as smdebug's Chrome trace files")
      .def(py::init([](const std::string& root, const std::string& node_id, const std::string& suffix,
                       uint64_t rotate_max_file_size, int64_t rotate_close_interval_s, std::optional<int64_t> start_us) {
             TraceWriterOptions o;
             o.root = root;
             o.node_id = node_id;
             o.suffix = suffix;
             o.rotate_max_file_size = rotate_max_file_size;
             o.rotate_close_interval_s = rotate_close_interval_s;
             o.start_time_us = start_us;
             return std::make_unique<TraceEventWriter>(std::move(o));
           }),
           py::arg("root"), py::arg("node_id"), py::arg("suffix") = std::string(kPythonTimelineSuffix),
           py::arg("rotate_max_file_size") = 10485760, py::arg("rotate_close_interval_s") = 60,
           py::arg("start_time_us") = py::none())
      .def(
          "write",
          [](TraceEventWriter& w, std::string phase, std::string name, int64_t start_us, int64_t duration_us,
             py::object args, const std::string& ph, const std::string& scope) {
            TraceRecord r = record_of(std::move(phase), std::move(name), start_us, duration_us, args, ph, scope);
            py::gil_scoped_release nogil;
            unwrap(w.write(r));
          },
          py::arg("training_phase"), py::arg("name"), py::arg("start_us"), py::arg("duration_us") = 0,
          py::arg("args") = py::none(), py::arg("ph") = "X", py::arg("scope") = "")
      .def(
          "write_many",
          [](TraceEventWriter& w, py::iterable records) {
            // (training_phase, name, start_us, duration_us, args): one call per step keeps the
            // training thread's cost per event to a tuple.
            std::vector<TraceRecord> batch;
            for (py::handle h : records) {
              auto t = py::reinterpret_borrow<py::tuple>(h);
              py::object args = t.size() > 4 ? py::object(t[4]) : py::object(py::none());
              batch.push_back(record_of(t[0].cast<std::string>(), t[1].cast<std::string>(), t[2].cast<int64_t>(),
                                        t[3].cast<int64_t>(), args, "X", ""));
            }
            py::gil_scoped_release nogil;
            for (const auto& r : batch) unwrap(w.write(r));
          },
          py::arg("records"), "Writes (training_phase, name, start_us, duration_us, args) tuples as X events.")
      .def(
          "rotate_if_due",
          [](TraceEventWriter& w, int64_t now_us) {
            py::gil_scoped_release nogil;
            unwrap(w.rotate_if_due(now_us));
          },
          py::arg("now_us"))
      .def("close",
           [](TraceEventWriter& w) {
             py::gil_scoped_release nogil;
             unwrap(w.close());
           })
      .def_property_readonly("start_time_us", &TraceEventWriter::start_time_us)
      .def_property_readonly("published", &TraceEventWriter::published);

  m.def(
      "parse_trace_events",
      [](const std::string& text, const std::string& node_id, const std::string& file) {
        return list_of(unwrap(parse_trace_events(text, node_id, file)));
      },
      py::arg("text"), py::arg("node_id"), py::arg("file") = "", "The events of a trace file's text, as dicts.");
  m.def(
      "read_trace_file", [](const std::string& path) { return list_of(unwrap(read_trace_file(path))); },
      py::arg("path"), "The events of one trace file, as dicts.");
  m.def(
      "parse_system_metrics",
      [](const std::string& text, const std::string& file) { return list_of(unwrap(parse_system_metrics(text, file))); },
      py::arg("text"), py::arg("file") = "", "The samples of a system metrics file's text, as dicts.");

  py::class_<SystemMetricsReader>(m, "SystemMetricsReader",
                                  "System metrics by time range over a profiler trial (a folder or an s3:// prefix)")
      .def(py::init([](const std::string& location, int64_t buffer_us) {
             return std::make_unique<SystemMetricsReader>(unwrap(SystemMetricsReader::open(location, buffer_us)));
           }),
           py::arg("location"), py::arg("buffer_us") = kDefaultSelectionBufferUs)
      .def(
          "events",
          [](SystemMetricsReader& r, double start, double end, TimeUnit unit, std::optional<std::string> type) {
            return list_of(unwrap(without_gil([&] { return r.events(start, end, unit, type); })));
          },
          py::arg("start"), py::arg("end"), py::arg("unit") = TimeUnit::Microseconds, py::arg("type") = py::none(),
          "Dicts with Type, Name, Dimension, Value, NodeId, Timestamp.")
      .def(
          "read_file",
          [](const SystemMetricsReader& r, const std::string& relpath) {
            return list_of(unwrap(without_gil([&] { return r.read_file(relpath); })));
          },
          py::arg("relpath"), "Every sample of one listed file, as dicts.")
      .def("refresh", [](SystemMetricsReader& r) { unwrap(without_gil([&] { return r.refresh(); })); })
      .def_property_readonly("files", [](const SystemMetricsReader& r) { return files_of(r.files()); })
      .def_property_readonly("first_timestamp_us", &SystemMetricsReader::first_timestamp_us)
      .def_property_readonly("location", [](const SystemMetricsReader& r) { return r.store().location(); });

  py::class_<FrameworkMetricsReader>(m, "FrameworkMetricsReader",
                                     "Framework events by time range over a profiler trial (a folder or an s3:// prefix)")
      .def(py::init([](const std::string& location, int64_t buffer_us) {
             return std::make_unique<FrameworkMetricsReader>(unwrap(FrameworkMetricsReader::open(location, buffer_us)));
           }),
           py::arg("location"), py::arg("buffer_us") = kDefaultSelectionBufferUs)
      .def(
          "events",
          [](FrameworkMetricsReader& r, double start, double end, TimeUnit unit) {
            return list_of(unwrap(without_gil([&] { return r.events(start, end, unit); })));
          },
          py::arg("start"), py::arg("end"), py::arg("unit") = TimeUnit::Microseconds,
          "Dicts with name, phase, start_us, end_us, duration, phase_pid, pid, tid, node_id, args.")
      .def(
          "read_file",
          [](const FrameworkMetricsReader& r, const std::string& relpath) {
            return list_of(unwrap(without_gil([&] { return r.read_file(relpath); })));
          },
          py::arg("relpath"), "Every event of one listed trace file, as dicts.")
      .def("refresh", [](FrameworkMetricsReader& r) { unwrap(without_gil([&] { return r.refresh(); })); })
      .def_property_readonly("files", [](const FrameworkMetricsReader& r) { return files_of(r.files()); })
      .def_property_readonly("first_timestamp_us", &FrameworkMetricsReader::first_timestamp_us)
      .def_property_readonly("location", [](const FrameworkMetricsReader& r) { return r.store().location(); });

  py::class_<ProfilerTrial>(m, "ProfilerTrial", "A profiler trial (a folder or an s3:// prefix) as one trial")
      .def(py::init([](const std::string& location, int64_t buffer_us) {
             return std::make_unique<ProfilerTrial>(unwrap(ProfilerTrial::open(location, buffer_us)));
           }),
           py::arg("location"), py::arg("buffer_us") = kDefaultSelectionBufferUs)
      .def_property_readonly("system_metrics", &ProfilerTrial::system_metrics, py::return_value_policy::reference_internal)
      .def_property_readonly("framework_metrics", &ProfilerTrial::framework_metrics,
                             py::return_value_policy::reference_internal)
      .def("first_timestamp_us", [](ProfilerTrial& t) { return unwrap(without_gil([&] { return t.first_timestamp_us(); })); })
      .def("job_ended", [](const ProfilerTrial& t) { return without_gil([&] { return t.job_ended(); }); })
      .def_property_readonly("location", &ProfilerTrial::location);
}

}  // namespace vigil::python
