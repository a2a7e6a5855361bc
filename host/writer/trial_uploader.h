// TrialUploader: copies a trial that hooks write to a local staging folder into its destination
// store (an S3 prefix), on its own thread, so the hooks keep writing files exactly as they do
// locally (published through "<name>.tmp", then renamed).
//
// Readers of the destination must only ever see a consistent trial, so each scan lists the end
// markers, then index/, then everything else (the writer publishes an event file before its index
// and both before the marker, so whatever the first listing sees has its predecessors in the later
// ones), and uploads in the opposite order: data files (events/, collections/, framework/, system/,
// tensorboard files, anything else), then index files in sorted order (each only once its own event
// file is uploaded), then the end markers — training_job_end.ts, and a profiler output's
// system/training_job_end.ts and framework/training_job_end.ts — only after a scan in which every
// other file made it.
//
// It never harms training: no method throws or blocks past its timeout, faults are logged once per
// kind and the failed files retried at the next scan.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/object_store.h"

namespace vigil::writer {

// A location the hooks cannot write in place, so they stage it locally and upload it: "s3://...".
bool needs_staging(std::string_view location);
// A fresh staging folder "vigil-upload-XXXXXX" in $VIGIL_STAGING_DIR (created if missing), else in
// the system's temp folder.
[[nodiscard]] Result<std::filesystem::path> make_staging_folder();
// $VIGIL_UPLOAD_TIMEOUT_SECONDS (seconds >= 0), else 60 s: how long a hook's close() waits for the
// last uploads. InvalidArgument for anything else.
[[nodiscard]] Result<std::chrono::milliseconds> upload_timeout_from_environment();

struct UploaderOptions {
  std::chrono::milliseconds scan_interval{1000};
  // Receives the first message of each kind of fault (listing, reading, writing, internal). May run
  // on the uploader's thread, also after finish() gave up on a hung store. Empty: stderr, "vigil: ".
  std::function<void(std::string_view)> log;
};

struct UploadReport {
  uint64_t files_uploaded = 0;  // uploads since start (a file rewritten and uploaded again counts twice)
  uint64_t bytes_uploaded = 0;
  std::vector<std::string> files_left;  // relpaths whose current version is not in the destination, sorted
  std::optional<Error> first_error;     // why: the first error of the last scan, or the timeout
  bool complete() const { return files_left.empty(); }
};

struct UploaderCounters {
  uint64_t files = 0;     // uploaded
  uint64_t bytes = 0;     // uploaded
  uint64_t failures = 0;  // files that could not be read or written, once per attempt
  uint64_t scans = 0;     // completed
};

class TrialUploader {
 public:
  // Starts the thread; the first scan comes at once. InvalidArgument/Io when `staging` is not a
  // folder, Internal when no thread can be started.
  [[nodiscard]] static Result<std::unique_ptr<TrialUploader>> start(std::filesystem::path staging,
                                                                    std::shared_ptr<storage::ObjectStore> destination,
                                                                    UploaderOptions options = {});
  // finish(kDestructorTimeout) unless finished; never throws.
  ~TrialUploader();
  TrialUploader(const TrialUploader&) = delete;
  TrialUploader& operator=(const TrialUploader&) = delete;

  static constexpr std::chrono::milliseconds kDestructorTimeout{2000};

  // Scans now instead of at the next interval (a hook that just published a step).
  void scan_now() noexcept;
  // Starts the final scans (retrying failed files) and waits up to `wait` for them to upload
  // everything staged: true when they did. Called again, it waits on; finish() then reports. A
  // caller that must stay interruptible (Python's close(), Ctrl-C) waits in slices.
  [[nodiscard]] bool wait_until_uploaded(std::chrono::milliseconds wait) noexcept;
  // Final scans (retrying failed files) until everything staged is uploaded, or `timeout`. The
  // thread then stops; one stuck in the store is left to end on its own. Later calls return the
  // same report. An error only when the staging folder could not be listed for the report.
  [[nodiscard]] Result<UploadReport> finish(std::chrono::milliseconds timeout) noexcept;

  UploaderCounters counters() const noexcept;
  const std::filesystem::path& staging() const noexcept;
  const storage::ObjectStore& destination() const noexcept;

  struct State;  // shared with the thread, which may outlive the uploader when the store hangs

 private:
  explicit TrialUploader(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace vigil::writer
