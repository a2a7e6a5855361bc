#include "writer/trial_uploader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/file_read.h"
#include "common/os.h"
#include "format/trial_layout.h"

namespace vigil::writer {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// What identifies one version of a staged file: a file renamed over it has another inode, one
// rewritten in place another size or mtime.
struct Version {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const Version&) const = default;
};

Version version_of(const struct stat& st) {
  return {uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, uint64_t(st.st_ino)};
}

struct Staged {
  std::string relpath;
  Version version;
};

// The files of a listing, and the folders that could not be read (relpath + '/').
struct Listing {
  std::vector<Staged> files;
  std::vector<std::string> unreadable;
  std::optional<Error> error;  // the first folder's
};

// Deep enough for any trial (profiler files are four levels down); stops a pathological tree.
constexpr int kMaxDepth = 32;

// Regular files under `staging/rel_dir`, without following symlinks (a symlink, to a file or a
// folder, is never uploaded: it could lead out of the folder) and without "<name>.tmp" files
// (still being written). `skip_top`: names left out at the top level (listed separately).
void walk(const fs::path& staging, const std::string& rel_dir, int depth, std::span<const std::string_view> skip_top,
          Listing& out) {
  std::error_code ec;
  fs::directory_iterator it(staging / rel_dir, ec);
  auto unreadable = [&](const std::error_code& e) {
    if (e == std::errc::no_such_file_or_directory) return;  // removed while listed: nothing to upload
    out.unreadable.push_back(rel_dir + "/");
    if (!out.error) out.error = Error::io((staging / rel_dir).string(), e.message());
  };
  if (ec) return unreadable(ec);
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (rel_dir.empty() && std::find(skip_top.begin(), skip_top.end(), name) != skip_top.end()) continue;
    std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
    struct stat st {};
    if (::lstat((staging / rel).c_str(), &st) != 0) continue;  // gone since listed
    if (S_ISDIR(st.st_mode)) {
      if (depth < kMaxDepth) walk(staging, rel, depth + 1, {}, out);
    } else if (S_ISREG(st.st_mode) && !name.ends_with(format::kTmpSuffix)) {
      out.files.push_back({std::move(rel), version_of(st)});
    }
  }
  if (ec) unreadable(ec);
}

void sort_by_relpath(std::vector<Staged>& files) {
  std::sort(files.begin(), files.end(), [](const Staged& a, const Staged& b) { return a.relpath < b.relpath; });
}

// The event file an index file describes: "index/000000000/000000000007_w.json" ->
// "events/000000000007/000000000007_w.tfevents" (format spec §1: both name the step and the worker
// the same way). nullopt for a name that is not an index file's.
std::optional<std::string> event_file_of_index(std::string_view relpath) {
  const std::string_view base = relpath.substr(relpath.rfind('/') + 1);
  constexpr size_t kStepDigits = 12;
  if (!base.ends_with(".json") || base.size() <= kStepDigits + 1 + 5 || base[kStepDigits] != '_') return std::nullopt;
  if (!std::all_of(base.begin(), base.begin() + kStepDigits, [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const std::string_view stem = base.substr(0, base.size() - 5);
  return fmt::format("events/{}/{}.tfevents", base.substr(0, kStepDigits), stem);
}

// The end-of-training markers, each uploaded only after a scan in which every other file made it:
// the trial's (format spec §1) and the profiler output's, in its system/ and framework/ folders
// (§8.6), so that a profiler output uploaded as a whole has its markers last too.
const std::vector<std::string>& end_markers() {
  static const std::vector<std::string> markers = {std::string(format::kEndOfTrainingMarker),
                                                   fmt::format("system/{}", format::kEndOfTrainingMarker),
                                                   fmt::format("framework/{}", format::kEndOfTrainingMarker)};
  return markers;
}

bool is_end_marker(std::string_view relpath) {
  const auto& markers = end_markers();
  return std::find(markers.begin(), markers.end(), relpath) != markers.end();
}

void log_to_stderr(std::string_view message) {
  std::fprintf(stderr, "vigil: %.*s\n", int(message.size()), message.data());
}

}  // namespace

struct TrialUploader::State {
  State(fs::path staging_, format::TrialRoot root_, std::shared_ptr<storage::ObjectStore> dest_, UploaderOptions options_)
      : staging(std::move(staging_)), root(std::move(root_)), dest(std::move(dest_)), options(std::move(options_)) {
    if (!options.log) options.log = log_to_stderr;
  }

  const fs::path staging;
  const format::TrialRoot root;  // files are opened through it: never outside the staging folder
  const std::shared_ptr<storage::ObjectStore> dest;
  UploaderOptions options;

  mutable std::mutex mutex;
  std::condition_variable wake;      // the thread waits on it between scans
  std::condition_variable progress;  // finish() waits on it for the thread to end
  bool scan_requested = false;
  bool finishing = false;
  bool stop = false;
  bool thread_done = false;
  std::map<std::string, Version, std::less<>> uploaded;
  std::set<std::string, std::less<>> logged_kinds;
  UploaderCounters counters;
  std::optional<Error> last_scan_error;  // the first error of the last scan that left something
  std::string current;                   // the file being written to the store, for the timeout message
  std::optional<Result<UploadReport>> report;  // finish()'s, once

  void log_once(std::string_view kind, const Error& e) {
    {
      std::lock_guard lock(mutex);
      ++counters.failures;
      if (!logged_kinds.emplace(kind).second) return;
    }
    try {
      options.log(fmt::format("uploading {} to {}: {} (failed files are retried at every scan; further {} faults "
                              "are not logged)",
                              staging.string(), dest->location(), e.message, kind));
    } catch (...) {
      // A logger that throws loses its message, nothing else.
    }
  }

  bool needs_upload(const Staged& f) const {
    std::lock_guard lock(mutex);
    auto it = uploaded.find(f.relpath);
    return it == uploaded.end() || !(it->second == f.version);
  }

  bool stopping() const {
    std::lock_guard lock(mutex);
    return stop;
  }

  // One file into the store; false (and the fault noted) when it could not be read or written.
  bool upload(const Staged& f, std::optional<Error>& first) {
    auto note = [&](std::string_view kind, Error e) {
      log_once(kind, e);
      if (!first) first = std::move(e);
      return false;
    };
    auto opened = root.open_file(f.relpath);
    if (!opened) {
      struct stat st {};
      if (::lstat((staging / f.relpath).c_str(), &st) != 0) return true;  // removed since listed: nothing to upload
      return note("read", std::move(opened.error()));
    }
    struct stat st {};
    const bool stat_ok = ::fstat(opened->fd.get(), &st) == 0;
    auto bytes = read_all(opened->fd.get(), (staging / f.relpath).string(), opened->size);
    opened->fd.reset();
    if (!stat_ok) return note("read", Error::io((staging / f.relpath).string(), "cannot stat it"));
    if (!bytes) return note("read", std::move(bytes.error()));
    {
      std::lock_guard lock(mutex);
      current = f.relpath;
    }
    auto written = dest->write(f.relpath, *bytes);
    {
      std::lock_guard lock(mutex);
      current.clear();
      if (written) {
        // The version read: a file replaced since it was listed is listed with this version next time.
        uploaded[f.relpath] = version_of(st);
        ++counters.files;
        counters.bytes += bytes->size();
        return true;
      }
    }
    return note("write", std::move(written.error()));
  }

  // Lists the markers, then index/, then the rest: the writer publishes in the opposite order, so a
  // file one listing sees has its predecessors in the listings after it.
  struct ScanListing {
    std::vector<Staged> markers;
    Listing index;
    Listing data;
  };
  ScanListing list() const {
    ScanListing out;
    for (const std::string& marker : end_markers()) {
      struct stat st {};
      if (::lstat((staging / marker).c_str(), &st) == 0 && S_ISREG(st.st_mode))
        out.markers.push_back(Staged{marker, version_of(st)});
    }
    walk(staging, "index", 1, {}, out.index);
    const std::string_view skip[] = {"index", format::kEndOfTrainingMarker};
    walk(staging, "", 0, skip, out.data);
    std::erase_if(out.data.files, [](const Staged& f) { return is_end_marker(f.relpath); });
    sort_by_relpath(out.index.files);
    sort_by_relpath(out.data.files);
    return out;
  }

  struct ScanResult {
    bool clean = true;     // everything listed, the marker included, is in the store
    bool uploaded = false;  // something was
  };
  ScanResult scan() {
    std::optional<Error> first;
    bool clean = true;
    const uint64_t files_before = counters_files();
    ScanListing listing = list();
    for (Listing* l : {&listing.index, &listing.data}) {
      if (l->error) {
        log_once("list", *l->error);
        if (!first) first = *l->error;
        clean = false;
      }
    }
    std::set<std::string, std::less<>> failed_data;
    for (const Staged& f : listing.data.files) {
      if (stopping()) return {false, true};
      if (needs_upload(f) && !upload(f, first)) {
        failed_data.insert(f.relpath);
        clean = false;
      }
    }
    // An index reaches the store only after its event file; when a data folder could not be
    // listed, its event file may be among those unseen.
    const bool data_listed = !listing.data.error;
    for (const Staged& f : listing.index.files) {
      if (stopping()) return {false, true};
      if (!needs_upload(f)) continue;
      const auto event = event_file_of_index(f.relpath);
      if (!data_listed || (event && failed_data.contains(*event))) {
        clean = false;
        continue;
      }
      if (!upload(f, first)) clean = false;
    }
    for (const Staged& marker : listing.markers) {
      if (!needs_upload(marker)) continue;
      if (!clean || stopping() || !upload(marker, first)) clean = false;
    }
    std::lock_guard lock(mutex);
    ++counters.scans;
    if (!clean) last_scan_error = first;
    return {clean, counters.files != files_before};
  }

  uint64_t counters_files() const {
    std::lock_guard lock(mutex);
    return counters.files;
  }

  // The thread: a scan at once, then one each interval (or when asked); once finishing, scans
  // again after a short pause until one finds nothing left and nothing new (a file published
  // while the last one ran).
  static void run(std::shared_ptr<State> s) noexcept {
    os::block_sigpipe_on_this_thread();
    os::name_this_thread("vigil-upload");
    try {
      const auto retry = std::min(s->options.scan_interval, std::chrono::milliseconds(200));
      for (;;) {
        bool finishing;
        {
          std::lock_guard lock(s->mutex);
          if (s->stop) break;
          finishing = s->finishing;
          s->scan_requested = false;
        }
        ScanResult result{false, true};
        try {
          result = s->scan();
        } catch (const std::exception& e) {
          s->log_once("internal", Error::internal(e.what()));
        } catch (...) {
          s->log_once("internal", Error::internal("unknown exception"));
        }
        if (finishing && result.clean) {
          if (!result.uploaded) break;
          continue;  // the check for files published meanwhile need not wait
        }
        std::unique_lock lock(s->mutex);
        s->wake.wait_for(lock, s->finishing ? retry : s->options.scan_interval,
                         [&] { return s->stop || s->scan_requested; });
      }
    } catch (...) {
      // Locking failed: nothing safe is left to do but end.
    }
    try {
      std::lock_guard lock(s->mutex);
      s->thread_done = true;
      s->progress.notify_all();
    } catch (...) {
    }
  }

  // What is staged and not in the store, listed now (the thread may still be stuck in a write).
  Result<UploadReport> report_now(std::chrono::milliseconds timeout) const {
    ScanListing listing = list();
    UploadReport r;
    std::lock_guard lock(mutex);
    r.files_uploaded = counters.files;
    r.bytes_uploaded = counters.bytes;
    auto add = [&](const Staged& f) {
      auto it = uploaded.find(f.relpath);
      if (it == uploaded.end() || !(it->second == f.version)) r.files_left.push_back(f.relpath);
    };
    for (const Staged& marker : listing.markers) add(marker);
    for (const Listing* l : {&listing.index, &listing.data}) {
      for (const Staged& f : l->files) add(f);
      r.files_left.insert(r.files_left.end(), l->unreadable.begin(), l->unreadable.end());
    }
    std::sort(r.files_left.begin(), r.files_left.end());
    if (r.files_left.empty()) return r;
    if (listing.data.error && listing.data.unreadable.size() == 1 && listing.data.unreadable[0] == "/")
      return fail(*listing.data.error);  // the staging folder itself
    // An answered failure (AccessDenied) says more than the retry the deadline cut short: which of the
    // two came last is a matter of timing.
    if (last_scan_error)
      r.first_error = last_scan_error;
    else if (!current.empty())
      r.first_error = Error::io_write(dest->describe(current), fmt::format("no answer within {} ms", timeout.count()));
    else
      r.first_error = Error::io_write(dest->location(), fmt::format("not all uploaded within {} ms", timeout.count()));
    return r;
  }
};

bool needs_staging(std::string_view location) { return location.starts_with("s3://"); }

Result<fs::path> make_staging_folder() {
  try {
    std::error_code ec;
    fs::path parent;
    if (const char* env = std::getenv("VIGIL_STAGING_DIR"); env && *env) {
      parent = env;
      fs::create_directories(parent, ec);
      if (ec) return fail(Error::io_write(parent.string(), ec.message()));
    } else {
      parent = fs::temp_directory_path(ec);
      if (ec) return fail(Error::io_write("the temp folder", ec.message()));
    }
    std::string name = (parent / "vigil-upload-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr) return fail(Error::io_write(name, std::strerror(errno)));
    return fs::path(name);
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("cannot make a staging folder: {}", e.what())));
  }
}

Result<std::chrono::milliseconds> upload_timeout_from_environment() {
  const char* env = std::getenv("VIGIL_UPLOAD_TIMEOUT_SECONDS");
  if (env == nullptr) return std::chrono::milliseconds(60'000);
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(env, &end);
  if (end == env || *end != '\0' || errno != 0 || !(seconds >= 0) || seconds > 1e9)
    return fail(Error::invalid_argument(
        fmt::format("VIGIL_UPLOAD_TIMEOUT_SECONDS must be a number of seconds >= 0, not '{}'", env)));
  return std::chrono::milliseconds(int64_t(seconds * 1000));
}

TrialUploader::TrialUploader(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<TrialUploader>> TrialUploader::start(fs::path staging, std::shared_ptr<storage::ObjectStore> destination,
                                                            UploaderOptions options) {
  try {
    if (!destination) return fail(Error::invalid_argument("TrialUploader: no destination store"));
    if (options.scan_interval <= std::chrono::milliseconds(0))
      return fail(Error::invalid_argument("TrialUploader: the scan interval must be positive"));
    auto root = format::TrialRoot::open(staging);
    if (!root) return fail(root.error());
    fs::path canonical = root->canonical();
    auto state = std::make_shared<State>(std::move(canonical), std::move(*root), std::move(destination),
                                         std::move(options));
    std::unique_ptr<TrialUploader> uploader(new TrialUploader(state));
    uploader->thread_ = std::thread(&State::run, state);
    return uploader;
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("TrialUploader: cannot start: {}", e.what())));
  }
}

TrialUploader::~TrialUploader() {
  try {
    (void)finish(kDestructorTimeout);
  } catch (...) {
  }
}

void TrialUploader::scan_now() noexcept {
  try {
    std::lock_guard lock(state_->mutex);
    state_->scan_requested = true;
    state_->wake.notify_all();
  } catch (...) {
  }
}

bool TrialUploader::wait_until_uploaded(std::chrono::milliseconds wait) noexcept {
  State& s = *state_;
  try {
    std::unique_lock lock(s.mutex);
    if (s.report) return s.report->has_value() && (*s.report)->files_left.empty();
    if (!s.finishing) {
      s.finishing = true;
      s.scan_requested = true;
      s.wake.notify_all();
    }
    return s.progress.wait_until(lock, Clock::now() + wait, [&] { return s.thread_done; });
  } catch (...) {
    return false;
  }
}

Result<UploadReport> TrialUploader::finish(std::chrono::milliseconds timeout) noexcept {
  State& s = *state_;
  try {
    (void)wait_until_uploaded(timeout);
    {
      std::unique_lock lock(s.mutex);
      if (s.report) return *s.report;
      s.stop = true;  // a thread still in a write ends after it, with nothing more to do
      s.wake.notify_all();
    }
    if (thread_.joinable()) {
      bool done;
      {
        std::lock_guard lock(s.mutex);
        done = s.thread_done;
      }
      // A thread stuck in the store keeps `state_` alive and ends when the store answers.
      done ? thread_.join() : thread_.detach();
    }
    auto report = s.report_now(timeout);
    std::lock_guard lock(s.mutex);
    s.report = report;
    return report;
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("TrialUploader::finish: {}", e.what())));
  } catch (...) {
    return fail(Error::internal("TrialUploader::finish: unknown exception"));
  }
}

UploaderCounters TrialUploader::counters() const noexcept {
  try {
    std::lock_guard lock(state_->mutex);
    return state_->counters;
  } catch (...) {
    return {};
  }
}

const fs::path& TrialUploader::staging() const noexcept { return state_->staging; }

const storage::ObjectStore& TrialUploader::destination() const noexcept { return *state_->dest; }

}  // namespace vigil::writer
