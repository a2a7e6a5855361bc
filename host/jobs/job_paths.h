// Where everything of one training job run locally lives (`vigil train`): the request, the
// supervisor's and the evaluator's status files, what SageMaker would upload to S3, and one folder
// per host that stands for the host's /opt/ml. Pure path computation: nothing here touches the
// file system.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace vigil::jobs {

namespace fs = std::filesystem;

struct JobPaths {
  fs::path root;  // <jobs_dir>/<TrainingJobName>

  fs::path request() const;      // root/request.json: the request as sent
  fs::path state() const;        // root/state.json: the supervisor's status record (owner-only)
  // root/control.json: where the running job's control socket is, all that users the access policy
  // grants something may read of the job folder (absent once the job has ended)
  fs::path control_endpoint() const;
  fs::path rule_status() const;  // root/rule-status.json: the evaluator's --status-file
  fs::path output() const;       // root/output: what SageMaker uploads to S3
  // output/debug-output: the trial. Every host's hook writes its own worker files here, as all
  // hosts of a SageMaker job write to one S3 prefix.
  fs::path debug_output() const;
  fs::path profiler_output() const;     // output/profiler-output
  fs::path tensorboard_output() const;  // output/tensorboard-output
  fs::path rule_output(std::string_view rule_configuration_name) const;  // output/rule-output/<name>
  // output/output: what goes to <OutputDataConfig.S3OutputPath>/<job>/output/ at the end, built from
  // the hosts' /opt/ml/model and /opt/ml/output/data.
  fs::path artifacts() const;
  fs::path model_archive() const;   // artifacts/model.tar.gz
  fs::path output_archive() const;  // artifacts/output.tar.gz
  fs::path model_folder() const;    // artifacts/model: the merged model, uncompressed (CompressionType NONE)
  fs::path host_root(int host_index) const;        // root/hosts/algo-<i+1>: the host's /opt/ml
  fs::path host_config_dir(int host_index) const;  // host_root/input/config
  fs::path log_dir() const;                        // root/logs
};

// The paths of job `training_job_name` under `jobs_dir` (the name is used as given: it is
// validated, [a-zA-Z0-9-] only, before any job exists).
JobPaths job_paths(const fs::path& jobs_dir, std::string_view training_job_name);

// SageMaker's host name of host `host_index` (0-based): "algo-1" for 0.
std::string host_name(int host_index);

// Where a path as the training container sees it lies for host `host_index`: /opt/ml and the paths
// under it map into host_root (/opt/ml/checkpoints -> <host_root>/checkpoints); other absolute
// paths are unchanged; relative ones are taken relative to host_root. The result is lexically
// normal, without a trailing separator ("/opt/ml/x/../y/" -> <host_root>/y; "/opt/ml/../etc" is
// /opt/etc, outside /opt/ml, as in the container).
fs::path map_container_path(const JobPaths& paths, int host_index, std::string_view container_path);

}  // namespace vigil::jobs
