// The jobs folder: one folder per training job that `vigil train` ran or runs, found by name from
// any terminal. A job's folder holds the request as sent, the supervisor's state record
// (state.json, written whole by the supervisor alone) and the evaluator's rule statuses; what
// DescribeTrainingJob and ListTrainingJobs answer is composed from those files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "jobs/job_paths.h"

namespace vigil::jobs {

// $VIGIL_JOBS_DIR, else $XDG_STATE_HOME/vigil/training-jobs, else ~/.local/state/vigil/training-jobs.
std::filesystem::path default_jobs_dir();

// The local account and region ARNs name (AWS_REGION / AWS_DEFAULT_REGION, else us-east-1;
// VIGIL_ACCOUNT_ID, else 000000000000).
std::string local_region();
std::string local_account();
std::string training_job_arn(std::string_view name);

struct StatusTransition {  // one entry of SecondaryStatusTransitions
  std::string status;
  double start_time = 0;
  std::optional<double> end_time;
  std::string message;
};

struct HostState {
  std::string host;         // algo-1
  pid_t pid = -1;
  std::optional<int> exit_code;  // the process's exit status, 128 + signal when killed
  std::string log_stream;   // <job>/algo-1-<epoch seconds>
};

// One of the job's outputs (jobs/job_outputs.h) and how far it got to its destination.
struct OutputRecord {
  std::string name;         // "debug-output", "rule-output/<rule>", "output", ...
  std::string local_path;   // the job folder's copy
  std::string destination;  // s3://bucket/prefix/<job>/<name> or file:///folder/<job>/<name>
  std::string status = "Pending";  // Pending (an end output before the end), Uploading, Uploaded, Failed
  uint64_t files_uploaded = 0, bytes_uploaded = 0;
  uint64_t files_left = 0;                // not at the destination when the job ended
  std::vector<std::string> some_files_left;  // the first of them (at most 10)
  std::optional<std::string> error;       // why, when Failed
};

// TrainingJobStatus, as a value inside; its SageMaker name only where JSON is read or written.
enum class TrainingJobStatus { InProgress, Completed, Failed, Stopping, Stopped };
std::string_view status_name(TrainingJobStatus status);
std::optional<TrainingJobStatus> parse_training_job_status(std::string_view name);

struct JobState {
  std::string name;
  TrainingJobStatus status = TrainingJobStatus::InProgress;
  std::string secondary_status = "Starting";
  std::vector<StatusTransition> transitions;
  std::optional<std::string> failure_reason;
  std::optional<std::string> stop_reason;   // Vigil's: who or what stopped the job
  double creation_time = 0;
  std::optional<double> training_start_time, training_end_time;
  double last_modified_time = 0;
  bool remote_debug = false;                // RemoteDebugConfig.EnableRemoteDebug, as updated
  pid_t supervisor_pid = -1;
  uid_t owner_uid = 0;
  std::string control_socket;
  std::vector<HostState> hosts;
  std::optional<int> exit_code;             // vigil train's exit status once the job ended
  std::vector<OutputRecord> outputs;
  std::optional<std::string> model_artifacts;  // ModelArtifacts.S3ModelArtifacts, once the model is there

  bool ended() const { return status != TrainingJobStatus::InProgress && status != TrainingJobStatus::Stopping; }
  // Moves to a new SecondaryStatus (closing the open transition) at `now`.
  void transition(std::string secondary, std::string message, double now);
};

nlohmann::json to_json(const JobState& state);
[[nodiscard]] Result<JobState> job_state_from_json(const nlohmann::json& j);

// Writes state.json whole (a reader never sees half of it), readable by the job's user alone: its
// failure reasons and paths are the job's own.
[[nodiscard]] Result<void> save_state(const JobPaths& paths, const JobState& state);
[[nodiscard]] Result<JobState> load_state(const JobPaths& paths);

// control.json: the control socket and the supervisor's pid, readable by other users when
// `readable_by_others` (the access policy grants someone something). A granted user learns the
// rest from the socket's answers, which the policy decides.
[[nodiscard]] Result<void> save_control_endpoint(const JobPaths& paths, const JobState& state, bool readable_by_others);
// The running job as control.json tells it: name, supervisor pid, control socket; InProgress.
[[nodiscard]] Result<JobState> load_control_endpoint(const JobPaths& paths);

// A job by name: ResourceNotFound ("Requested resource not found.") when the jobs folder has none.
[[nodiscard]] Result<JobPaths> find_job(const std::filesystem::path& jobs_dir, std::string_view name);
// Every job folder's state, newest first; folders that are not jobs are skipped.
std::vector<JobState> list_jobs(const std::filesystem::path& jobs_dir);

// A supervisor that died without recording the end (killed with SIGKILL, the machine rebooted)
// leaves an InProgress record: such a job reads as Failed, with the reason.
JobState with_supervisor_checked(JobState state);

// DescribeTrainingJob's answer: the request's members as sent, the status, the transitions,
// DebugRuleEvaluationStatuses / ProfilerRuleEvaluationStatuses from the evaluator, ModelArtifacts
// (once the model is at its destination), RemoteDebugConfig as updated, and Vigil's own
// VigilOutputs (each output's destination and upload status) and VigilLocalPaths.
[[nodiscard]] Result<nlohmann::json> describe_training_job(const JobPaths& paths);

double epoch_seconds_now();

}  // namespace vigil::jobs
