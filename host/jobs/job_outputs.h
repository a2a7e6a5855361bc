// Where a training job's outputs go. Every S3OutputPath of a CreateTrainingJob request is a base,
// and the job's files land under <base>/<TrainingJobName>/ as SageMaker lays them out
// (sagemaker-api §3.1 "S3 layout per job", §4.6; docs/training-jobs.md "Outputs"). A base is an
// s3:// location, uploaded through host/storage, or a file:// folder, copied there (SageMaker local
// mode's output paths). Pure: nothing here touches the file system or the network.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "jobs/job_paths.h"
#include "jobs/training_job_request.h"
#include "storage/s3_uri.h"

namespace vigil::jobs {

struct OutputLocation {
  bool local = false;
  storage::S3Uri s3;             // when !local
  std::filesystem::path folder;  // when local: absolute and lexically normal

  // "s3://bucket/prefix", or "file:///absolute/folder".
  [[nodiscard]] std::string uri() const;
  // The location of `relpath` ('/'-separated names of Vigil's own: the job's name, "debug-output")
  // below this one.
  [[nodiscard]] OutputLocation child(std::string_view relpath) const;
};

// Why `text` cannot be an output location of vigil train, as the constraint text of a validation
// item ("Member must ..."), or nullopt when it can be: s3://bucket[/prefix] with a valid bucket name
// and prefix (storage::parse_s3_uri), or file://PATH with a non-empty PATH. https:// addresses pass
// SageMaker's pattern but are refused here: the store is named by bucket (s3://).
[[nodiscard]] std::optional<std::string> output_location_problem(std::string_view text);

// Parses an output location output_location_problem accepts. file://PATH takes PATH as written (no
// %-decoding), relative to `cwd` unless absolute, as SageMaker local mode reads it
// ("file:///data/out", "file://out" = <cwd>/out). InvalidArgument otherwise.
[[nodiscard]] Result<OutputLocation> parse_output_location(std::string_view text, const std::filesystem::path& cwd);

// Why a RuleConfigurationName cannot name its rule's output folder (rule-output/<name>/, one
// folder, one S3 key segment), or nullopt: empty, ".", "..", or holding '/' or a NUL.
[[nodiscard]] std::optional<std::string> rule_output_name_problem(std::string_view name);

enum class UploadTime {
  Live,   // while the job runs, like the hooks' uploader, and once more at the end
  AtEnd,  // once, when the job has ended
};

struct JobOutput {
  std::string name;             // "debug-output", "rule-output/<RuleConfigurationName>", "output", ...
  std::filesystem::path local;  // the job folder's copy, kept after the upload
  OutputLocation destination;   // <base>/<job>/<name>
  UploadTime when = UploadTime::Live;
};

// The outputs of a validated request, in this order:
// * "debug-output" with DebugHookConfig: <DebugHookConfig.S3OutputPath>/<job>/debug-output;
// * "profiler-output" with a ProfilerConfig that does not disable the profiler:
//   <ProfilerConfig.S3OutputPath, else OutputDataConfig.S3OutputPath>/<job>/profiler-output;
// * "tensorboard-output" with TensorBoardOutputConfig: <its S3OutputPath>/<job>/tensorboard-output;
// * "rule-output/<name>" for each rule of DebugRuleConfigurations, then ProfilerRuleConfigurations:
//   <the rule's S3OutputPath, else OutputDataConfig.S3OutputPath>/<job>/rule-output/<name>;
// * "output", at the end: <OutputDataConfig.S3OutputPath>/<job>/output (model.tar.gz or model/, and
//   output.tar.gz).
// Relative file:// paths are taken relative to `cwd`. InvalidArgument for a location that
// parse_output_location refuses (validation refuses those before).
[[nodiscard]] Result<std::vector<JobOutput>> plan_job_outputs(const TrainingJobRequest& request, const JobPaths& paths,
                                                              const std::filesystem::path& cwd);

// OutputDataConfig.CompressionType: false for "NONE" (the model is uploaded as its files, under
// output/model/), true otherwise (model.tar.gz; GZIP is the default).
[[nodiscard]] bool compresses_model(const TrainingJobRequest& request);

}  // namespace vigil::jobs
