// _vigil.TrialUploader: writer::TrialUploader for the hooks (vigil/capture/upload.py), which write a trial
// bound for a store (s3://) into a local staging folder. Its faults are kept here for Python to
// log (take_messages): the uploader's thread never calls into Python. Also _vigil.list_files and
// _vigil.location_exists, a store's listing (vigil.fleet's s3:// patterns and missing trials).
#include <algorithm>
#include <chrono>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "bindings.h"
#include "storage/object_store.h"
#include "writer/trial_uploader.h"

namespace vigil::python {

namespace {

using writer::TrialUploader;

// The uploader's once-per-fault messages, until Python takes them; shared with its thread, which
// may outlive the uploader when the store hangs.
struct Messages {
  std::mutex mutex;
  std::vector<std::string> pending;
};

std::chrono::milliseconds millis(double seconds, const char* what) {
  if (!(seconds >= 0) || seconds > 1e9)
    throw HostError(Error::invalid_argument(fmt::format("{} must be a number of seconds >= 0, not {}", what, seconds)));
  return std::chrono::milliseconds(int64_t(seconds * 1000));
}

class PyTrialUploader {
 public:
  PyTrialUploader(const std::string& local_dir, const std::string& location, double scan_interval_s)
      : location_(location), messages_(std::make_shared<Messages>()) {
    writer::UploaderOptions options;
    options.scan_interval = std::max(millis(scan_interval_s, "scan_interval_s"), std::chrono::milliseconds(1));
    options.log = [messages = messages_](std::string_view m) {
      std::lock_guard lock(messages->mutex);
      messages->pending.emplace_back(m);
    };
    Result<std::unique_ptr<TrialUploader>> started = fail(Error::internal("not started"));
    {
      py::gil_scoped_release nogil;
      auto store = storage::open_object_store(location, /*create=*/true);
      started = store ? TrialUploader::start(local_dir, std::move(*store), std::move(options))
                      : Result<std::unique_ptr<TrialUploader>>(fail(std::move(store.error())));
    }
    uploader_ = unwrap(std::move(started));
  }

  ~PyTrialUploader() {
    GilReleasedUnlessFinalizing nogil;
    uploader_.reset();
  }

  void scan_now() { uploader_->scan_now(); }

  // {"files_uploaded", "bytes_uploaded", "files_left": [relpath], "error": str or None,
  //  "interrupted": bool}. The wait is in slices with the GIL taken between them: the first Ctrl-C
  // (a pending signal) ends the wait, is consumed, and the files left stay staged.
  py::dict finish(double timeout_s) {
    const auto timeout = millis(timeout_s, "timeout_s");
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    bool interrupted = false;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      bool uploaded;
      {
        py::gil_scoped_release nogil;
        uploaded = uploader_->wait_until_uploaded(std::clamp(left, std::chrono::milliseconds(0), kWaitSlice));
      }
      if (uploaded || left <= kWaitSlice) break;
      if (PyErr_CheckSignals() != 0) {
        PyErr_Clear();
        interrupted = true;
        break;
      }
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    Result<writer::UploadReport> r = fail(Error::internal("not finished"));
    {
      py::gil_scoped_release nogil;
      r = uploader_->finish(std::chrono::milliseconds(0));
    }
    auto report = unwrap(std::move(r));
    py::dict d;
    d["files_uploaded"] = report.files_uploaded;
    d["bytes_uploaded"] = report.bytes_uploaded;
    d["files_left"] = report.files_left;
    d["interrupted"] = interrupted;
    if (interrupted && !report.files_left.empty())
      d["error"] = py::str(fmt::format("interrupted (Ctrl-C) after {} ms of the upload wait", waited.count()));
    else
      d["error"] = report.first_error ? py::object(py::str(report.first_error->message)) : py::object(py::none());
    return d;
  }

  std::vector<std::string> take_messages() {
    std::lock_guard lock(messages_->mutex);
    return std::exchange(messages_->pending, {});
  }

  py::dict counters() const {
    auto c = uploader_->counters();
    py::dict d;
    d["files"] = c.files;
    d["bytes"] = c.bytes;
    d["failures"] = c.failures;
    d["scans"] = c.scans;
    return d;
  }

  std::string local_dir() const { return uploader_->staging().string(); }
  const std::string& location() const { return location_; }

 private:
  std::string location_;
  std::shared_ptr<Messages> messages_;
  std::unique_ptr<TrialUploader> uploader_;
};

}  // namespace

void register_uploader(py::module_& m) {
  // vigil.fleet's s3:// patterns: the trials under a prefix are found by listing it through the
  // project's own store (no second S3 client in Python).
  m.def(
      "list_files",
      [](const std::string& location) {
        std::vector<std::string> out;
        {
          py::gil_scoped_release release;
          auto store = unwrap(storage::open_object_store(location));
          for (auto& info : unwrap(store->list(""))) out.push_back(std::move(info.relpath));
        }
        return out;
      },
      py::arg("location"),
      "The files under a location (a folder or s3://bucket/prefix), at any depth, sorted, relative to it");
  m.def(
      "location_exists",
      [](const std::string& location) {
        py::gil_scoped_release release;
        auto store = storage::open_object_store(location);
        if (!store) return false;  // a local folder that is not there
        return unwrap((*store)->folder_exists(""));
      },
      py::arg("location"),
      "Whether a location holds anything: a folder that exists, an s3:// prefix with an object under it (one request)");
  m.def("needs_staging", &writer::needs_staging, py::arg("location"),
        "Whether a hook stages `location` locally and uploads it (s3://) instead of writing it in place");
  m.def(
      "make_staging_folder", [] { return unwrap(writer::make_staging_folder()).string(); },
      "A fresh staging folder vigil-upload-XXXXXX in $VIGIL_STAGING_DIR, else the temp folder");
  m.def(
      "upload_timeout_from_environment",
      [] { return double(unwrap(writer::upload_timeout_from_environment()).count()) / 1000; },
      "$VIGIL_UPLOAD_TIMEOUT_SECONDS, else 60: seconds a hook's close() waits for the last uploads");
  py::class_<PyTrialUploader>(m, "TrialUploader",
                              "Copies a trial staged in a local folder to its location (s3:// or a folder) on its "
                              "own thread: data files, then index files, the end marker last")
      .def(py::init<const std::string&, const std::string&, double>(), py::arg("local_dir"), py::arg("location"),
           py::arg("scan_interval_s") = 1.0)
      .def("scan_now", &PyTrialUploader::scan_now)
      .def("finish", &PyTrialUploader::finish, py::arg("timeout_s"))
      .def("take_messages", &PyTrialUploader::take_messages)
      .def("counters", &PyTrialUploader::counters)
      .def_property_readonly("local_dir", &PyTrialUploader::local_dir)
      .def_property_readonly("location", &PyTrialUploader::location);
}

}  // namespace vigil::python
