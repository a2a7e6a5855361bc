// The uploads of a training job's outputs (job_outputs.h). Each output's folder in the job is copied
// to its destination by a writer::TrialUploader, the uploader the hooks use, with its order (data
// files, then index files in step order, the end marker last), to an S3 prefix or to a local folder
// alike: live while the job runs for the trial, profiler, TensorBoard and rule outputs, as SageMaker
// uploads them; at the end for the model and output archives. The job folder keeps every file: an
// upload that fails loses nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "jobs/job_outputs.h"
#include "jobs/job_paths.h"
#include "jobs/job_store.h"
#include "storage/object_store.h"
#include "writer/trial_uploader.h"

namespace vigil::jobs {

// Opens the store of a destination.
using StoreOpener = std::function<Result<std::shared_ptr<storage::ObjectStore>>(const OutputLocation&)>;
// s3://: with the credentials, region and endpoint AWS tools find (storage/s3_config.h), without the
// read cache (nothing is read back); file://: the folder, made when missing.
StoreOpener default_store_opener();

// The largest file uploaded: S3's limit for one PUT, which is how the uploader sends each file (it
// reads the file whole first; no multipart upload).
inline constexpr uint64_t kMaxUploadBytes = uint64_t(5) << 30;

class JobOutputUploads {
 public:
  // Checks and opens every destination before the job runs. Refused (InvalidArgument, a message to
  // show as it is): a file:// destination inside the job's folder, or holding it; a destination that
  // already holds files (another job's outputs: outputs of two jobs are never mixed); one that cannot
  // be opened or listed (no credentials, NoSuchBucket, AccessDenied, no answer). Local destination
  // folders are made once every check passed.
  [[nodiscard]] static Result<std::unique_ptr<JobOutputUploads>> prepare(std::vector<JobOutput> outputs,
                                                                         const JobPaths& paths, const StoreOpener& open,
                                                                         writer::UploaderOptions options = {});
  // Uploads still running are finished within TrialUploader::kDestructorTimeout each.
  ~JobOutputUploads();
  JobOutputUploads(const JobOutputUploads&) = delete;
  JobOutputUploads& operator=(const JobOutputUploads&) = delete;

  // Starts the uploads of the Live outputs (their local folders are made when missing). An error
  // names an output whose upload could not start; the others run.
  [[nodiscard]] Result<void> start_live();

  // At the end of the job, once the hosts and the rules are done: builds paths.artifacts() from the
  // hosts' folders (`host_roots`: each host's /opt/ml) — model.tar.gz of model/ (with
  // !compress_model, the merged files under model/ instead) and output.tar.gz of output/data/ —
  // uploads it, and waits for every upload until `deadline`. Never throws; the outcome is in
  // records(), failure_reason() and model_artifacts().
  void finish(std::span<const std::filesystem::path> host_roots, bool compress_model,
              std::chrono::steady_clock::time_point deadline) noexcept;

  // Each output as far as it got, in the order of the plan (counts are live while uploads run).
  [[nodiscard]] std::vector<OutputRecord> records() const;
  // "ClientError: Artifact upload failed:<why> (...)" when an output did not wholly reach its
  // destination, SageMaker's FailureReason for an upload that failed (at most 1024 characters);
  // nullopt when every output did.
  [[nodiscard]] std::optional<std::string> failure_reason() const;
  // ModelArtifacts.S3ModelArtifacts once the model is at its destination: <...>/output/model.tar.gz,
  // or <...>/output/model/ (CompressionType NONE).
  [[nodiscard]] std::optional<std::string> model_artifacts() const;

 private:
  struct Upload;
  JobOutputUploads(JobPaths paths, writer::UploaderOptions options);
  void log(std::string_view message) const noexcept;
  Result<void> build_artifacts(std::span<const std::filesystem::path> host_roots, bool compress_model);

  JobPaths paths_;
  writer::UploaderOptions options_;
  std::vector<std::unique_ptr<Upload>> uploads_;
  std::optional<std::string> model_artifacts_;
};

}  // namespace vigil::jobs
