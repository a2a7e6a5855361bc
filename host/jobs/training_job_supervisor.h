// `vigil train`: runs a CreateTrainingJob on this machine the way SageMaker runs it. The supervisor
// validates the request, lays out the job folder, starts the command once per host with a training
// container's environment, runs the rule evaluator beside it on the job's trial, keeps the job's
// status and secondary-status transitions, enforces MaxRuntimeInSeconds, runs rule actions, and
// serves the job's control socket, whose requests (stop, update, remote-debug sessions) are decided
// in jobs/job_control.h. docs/training-jobs.md.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace vigil::jobs {

struct TrainOptions {
  std::filesystem::path request_file;         // the CreateTrainingJob request (JSON)
  std::filesystem::path jobs_dir;             // where the job's folder is made
  std::vector<std::string> command;           // run once per host
  std::optional<std::filesystem::path> access_policy;  // who may do what (access_policy.h); none: only this user
  std::filesystem::path vigil_executable;     // this program, for the evaluator
  std::vector<std::string> evaluator_arguments;  // passed on to `vigil evaluate` (--plugins DIR, ...)
  std::chrono::milliseconds stop_grace{std::chrono::seconds(10)};    // SIGTERM, then SIGKILL after this
  std::chrono::milliseconds rule_wait{std::chrono::seconds(120)};    // how long rules may finish after training
  bool quiet = false;                         // hosts' output only to their logs, not also to stdout
};

// The job's exit status: 0 when Completed, else the first failing host's (128 + signal when a
// signal ended it); 2 when the request is refused before the job exists; 3 when the supervisor
// cannot keep the job's records.
int run_training_job(const TrainOptions& options);

}  // namespace vigil::jobs
