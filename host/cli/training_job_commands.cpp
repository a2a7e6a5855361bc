// The training-job commands: `vigil train` (CreateTrainingJob, run here), `describe-training-job`,
// `list-training-jobs`, `stop-training-job`, `update-training-job` and `attach` (SSM start-session to
// a host of a job with remote debugging on). docs/training-jobs.md, docs/remote-debug.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "jobs/job_store.h"
#include "jobs/training_job_supervisor.h"
#include "remote_debug/control_client.h"

namespace vigil::cli {
namespace {
namespace fs = std::filesystem;

constexpr std::string_view kJobsDirHelp =
    "  --jobs-dir DIR        the jobs folder (default $VIGIL_JOBS_DIR, else $XDG_STATE_HOME/vigil/training-jobs,\n"
    "                        else ~/.local/state/vigil/training-jobs)\n";

int usage_error(std::string_view command, const std::string& message) {
  std::fprintf(stderr, "vigil %.*s: %s\n(see vigil %.*s --help)\n", int(command.size()), command.data(), message.c_str(),
               int(command.size()), command.data());
  return kExitUsage;
}

std::optional<double> parse_seconds(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= 0)) return std::nullopt;
  return v;
}

// Options every job command takes, and the positional arguments left.
struct CommonArgs {
  fs::path jobs_dir = jobs::default_jobs_dir();
  std::vector<std::string> positional;
  bool json = false;
};

std::string format_time(double epoch) {
  const time_t t = time_t(epoch);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Result<jobs::JobState> running_job(const fs::path& jobs_dir, const std::string& name) {
  auto paths = jobs::find_job(jobs_dir, name);
  if (!paths) return fail(std::move(paths.error()));
  // state.json is its owner's; another user finds the socket in control.json while the job runs.
  const bool owner_only = ::access(paths->state().c_str(), R_OK) != 0 && errno == EACCES;
  auto state = owner_only ? jobs::load_control_endpoint(*paths) : jobs::load_state(*paths);
  if (!state && owner_only)
    return fail(Error::invalid_argument(fmt::format(
        "TargetNotConnected: training job '{}' is not running (its state is its owner's to read)", name)));
  if (!state) return fail(std::move(state.error()));
  return jobs::with_supervisor_checked(std::move(*state));
}

// One request to the job's supervisor; prints the refusal and gives the exit status.
int send_to_job(std::string_view command, const fs::path& jobs_dir, const std::string& name, const nlohmann::json& request,
                nlohmann::json* reply_out = nullptr) {
  auto state = running_job(jobs_dir, name);
  if (!state) {
    std::fprintf(stderr, "vigil %.*s: %s\n", int(command.size()), command.data(), state.error().message.c_str());
    return kExitFailure;
  }
  if (state->ended()) {
    std::fprintf(stderr, "vigil %.*s: ValidationException: The request was rejected because the training job is in status %s.\n",
                 int(command.size()), command.data(), std::string(jobs::status_name(state->status)).c_str());
    return kExitFailure;
  }
  auto reply = remote_debug::control_request(state->control_socket, request);
  if (!reply) {
    std::fprintf(stderr, "vigil %.*s: %s\n", int(command.size()), command.data(), reply.error().message.c_str());
    return kExitFailure;
  }
  if (!reply->value("Ok", false)) {
    std::fprintf(stderr, "vigil %.*s: %s\n", int(command.size()), command.data(), reply->value("Error", std::string("refused")).c_str());
    return kExitFailure;
  }
  if (reply_out) *reply_out = *reply;
  return kExitOk;
}

// Parses --jobs-dir, --json (when `json_allowed`) and -h; everything else is positional.
std::optional<int> parse_common(std::string_view command, std::string_view usage, const std::vector<std::string>& args,
                                bool json_allowed, CommonArgs& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fwrite(usage.data(), 1, usage.size(), stdout);
      std::fputs(kJobsDirHelp.data(), stdout);
      return kExitOk;
    } else if (a == "--jobs-dir") {
      if (i + 1 >= args.size()) return usage_error(command, "--jobs-dir takes a folder");
      out.jobs_dir = fs::absolute(args[++i]);
    } else if (a == "--json" && json_allowed) {
      out.json = true;
    } else if (a.starts_with("--")) {
      return usage_error(command, "unknown option " + a);
    } else {
      out.positional.push_back(a);
    }
  }
  return std::nullopt;
}

constexpr std::string_view kTrainUsage = R"(usage: vigil train JOB.json [options] -- COMMAND [ARGS...]

Runs the CreateTrainingJob request JOB.json on this machine the way SageMaker runs it: COMMAND once per
host (ResourceConfig.InstanceCount: algo-1 ... algo-N), each with a SageMaker training container's
environment (SM_*, TRAINING_JOB_NAME, MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE on 127.0.0.1) and its
config files (the hook's DebugHookConfig, TensorBoardOutputConfig, ProfilerConfig), while the rule
evaluator follows the job's trial with its DebugRuleConfigurations and ProfilerRuleConfigurations.
Keeps the job's status (describe-training-job), enforces StoppingCondition.MaxRuntimeInSeconds, runs
the rules' actions (StopTraining; Email and SMS to $VIGIL_NOTIFY_COMMAND or $VIGIL_NOTIFY_WEBHOOK) and,
with RemoteDebugConfig, lets `vigil attach` open a shell in a host. See docs/training-jobs.md.

The job's outputs go where the request's S3OutputPaths say, under <S3OutputPath>/<TrainingJobName>/ as
SageMaker lays them out: debug-output/, profiler-output/, tensorboard-output/ and rule-output/<rule>/
while the job runs, output/model.tar.gz and output/output.tar.gz (the hosts' /opt/ml/model and
/opt/ml/output/data) when it ends. s3:// locations are uploaded (credentials, region and endpoint as
AWS tools find them: docs/object-storage.md); file://FOLDER locations are copied to, as in SageMaker
local mode (a relative FOLDER is relative to here). Each destination is checked before the job starts
(refused when it holds files already or cannot be reached); the job folder keeps a copy of everything.
The end waits $VIGIL_UPLOAD_TIMEOUT_SECONDS (default 60) for the last uploads; a job whose outputs did
not all arrive ends Failed with "ClientError: Artifact upload failed:...".

options:
  --access-policy FILE  who may attach, update or stop the job (IAM policy grammar bound to local users,
                        docs/remote-debug.md); default: only this user
  --plugins DIR         more rule plugins for the evaluator (repeatable)
  --stop-grace SECONDS  how long a stopped host has between SIGTERM and SIGKILL (default 10)
  --rule-wait SECONDS   how long the rules may take to finish after training ends (default 120)
  --quiet               the hosts' output only to their logs, not also here
  -h, --help            show this help
)";

// After the options (the --jobs-dir line comes last among them).
constexpr std::string_view kTrainExitStatus = R"(
exit status: 0 when the job ends Completed; else the first failing host's (128 + the signal that ended
it); 2 when the request is refused (no job is created); 3 when the job's records cannot be written; 4
when the job's outputs did not all reach their destinations.
)";

int run_train_command(const std::vector<std::string>& args) {
  jobs::TrainOptions options;
  options.jobs_dir = jobs::default_jobs_dir();
  std::optional<std::string> request;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> { return i + 1 < args.size() ? std::optional(args[++i]) : std::nullopt; };
    if (a == "--") {
      options.command.assign(args.begin() + long(i) + 1, args.end());
      break;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kTrainUsage.data(), stdout);
      std::fputs(kJobsDirHelp.data(), stdout);
      std::fputs(kTrainExitStatus.data(), stdout);
      return kExitOk;
    } else if (a == "--quiet") {
      options.quiet = true;
    } else if (a == "--jobs-dir" || a == "--access-policy" || a == "--plugins" || a == "--stop-grace" || a == "--rule-wait") {
      auto v = value();
      if (!v) return usage_error("train", a + " takes a value");
      if (a == "--jobs-dir") options.jobs_dir = fs::absolute(*v);
      else if (a == "--access-policy") options.access_policy = fs::path(*v);
      else if (a == "--plugins") options.evaluator_arguments.insert(options.evaluator_arguments.end(), {"--plugins", *v});
      else {
        auto secs = parse_seconds(*v);
        if (!secs) return usage_error("train", a + " takes seconds");
        (a == "--stop-grace" ? options.stop_grace : options.rule_wait) = std::chrono::milliseconds(int64_t(*secs * 1000));
      }
    } else if (a.starts_with("--")) {
      return usage_error("train", "unknown option " + a);
    } else if (!request) {
      request = a;
    } else {
      return usage_error("train", "the command goes after --: vigil train JOB.json -- COMMAND...");
    }
  }
  if (!request) return usage_error("train", "give the CreateTrainingJob request: vigil train JOB.json -- COMMAND...");
  if (options.command.empty()) return usage_error("train", "give the training command after --");
  options.request_file = *request;
  std::error_code ec;
  options.vigil_executable = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return usage_error("train", "cannot find this program (/proc/self/exe)");
  return jobs::run_training_job(options);
}

constexpr std::string_view kDescribeUsage = R"(usage: vigil describe-training-job NAME [--json] [--jobs-dir DIR]

A training job's DescribeTrainingJob: its request as sent, TrainingJobStatus, SecondaryStatus and its
transitions, FailureReason, the rules' DebugRuleEvaluationStatuses and ProfilerRuleEvaluationStatuses,
RemoteDebugConfig, ModelArtifacts (once the model is at its destination), where each output went and
how far its upload got (VigilOutputs), and where the job folder's copies and logs are
(VigilLocalPaths). --json prints SageMaker's shape.

options:
  --json                the whole answer as JSON
  -h, --help            show this help
)";

int run_describe_command(const std::vector<std::string>& args) {
  CommonArgs common;
  if (auto done = parse_common("describe-training-job", kDescribeUsage, args, true, common)) return *done;
  if (common.positional.size() != 1) return usage_error("describe-training-job", "give one training job name");
  auto paths = jobs::find_job(common.jobs_dir, common.positional[0]);
  if (!paths) return std::fprintf(stderr, "vigil describe-training-job: %s\n", paths.error().message.c_str()), kExitFailure;
  auto d = jobs::describe_training_job(*paths);
  if (!d) return std::fprintf(stderr, "vigil describe-training-job: %s\n", d.error().message.c_str()), kExitFailure;
  if (common.json) {
    std::puts(d->dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s  %s (%s)\n", (*d)["TrainingJobName"].get<std::string>().c_str(),
              (*d)["TrainingJobStatus"].get<std::string>().c_str(), (*d)["SecondaryStatus"].get<std::string>().c_str());
  if (d->contains("FailureReason")) std::printf("  FailureReason: %s\n", (*d)["FailureReason"].get<std::string>().c_str());
  if (d->contains("VigilStopReason")) std::printf("  stopped: %s\n", (*d)["VigilStopReason"].get<std::string>().c_str());
  for (const auto& t : (*d)["SecondaryStatusTransitions"])
    std::printf("  %s  %-18s %s\n", format_time(t["StartTime"].get<double>()).c_str(), t["Status"].get<std::string>().c_str(),
                t.value("StatusMessage", "").c_str());
  for (const char* list : {"DebugRuleEvaluationStatuses", "ProfilerRuleEvaluationStatuses"})
    if (d->contains(list))
      for (const auto& r : (*d)[list]) {
        std::string details = r.value("StatusDetails", "");
        while (!details.empty() && details.back() == '\n') details.pop_back();
        std::printf("  rule %s: %s%s%s\n", r["RuleConfigurationName"].get<std::string>().c_str(),
                    r["RuleEvaluationStatus"].get<std::string>().c_str(), details.empty() ? "" : ": ", details.c_str());
      }
  if (d->contains("ModelArtifacts"))
    std::printf("  model: %s\n", (*d)["ModelArtifacts"]["S3ModelArtifacts"].get<std::string>().c_str());
  if (d->contains("VigilOutputs"))
    for (const auto& o : (*d)["VigilOutputs"]) {
      const std::string error = o.value("Error", "");
      std::printf("  output %s: %s, %s%s%s\n", o["Name"].get<std::string>().c_str(), o["Status"].get<std::string>().c_str(),
                  o["Destination"].get<std::string>().c_str(), error.empty() ? "" : ": ", error.c_str());
    }
  std::printf("  remote debugging: %s\n", (*d)["RemoteDebugConfig"]["EnableRemoteDebug"].get<bool>() ? "on" : "off");
  std::printf("  job folder: %s\n", (*d)["VigilLocalPaths"]["JobFolder"].get<std::string>().c_str());
  return kExitOk;
}

constexpr std::string_view kListUsage = R"(usage: vigil list-training-jobs [--json] [--jobs-dir DIR]

The jobs of the jobs folder, newest first: name, TrainingJobStatus, SecondaryStatus, creation time.
--json prints ListTrainingJobs' shape ({"TrainingJobSummaries": [...]}).

options:
  --json                as JSON
  -h, --help            show this help
)";

int run_list_command(const std::vector<std::string>& args) {
  CommonArgs common;
  if (auto done = parse_common("list-training-jobs", kListUsage, args, true, common)) return *done;
  if (!common.positional.empty()) return usage_error("list-training-jobs", "takes no names");
  const auto all = jobs::list_jobs(common.jobs_dir);
  if (common.json) {
    nlohmann::json out{{"TrainingJobSummaries", nlohmann::json::array()}};
    for (const auto& s : all) {
      nlohmann::json e{{"TrainingJobName", s.name}, {"TrainingJobArn", jobs::training_job_arn(s.name)},
                       {"CreationTime", s.creation_time}, {"TrainingJobStatus", jobs::status_name(s.status)},
                       {"SecondaryStatus", s.secondary_status}, {"LastModifiedTime", s.last_modified_time}};
      if (s.training_end_time) e["TrainingEndTime"] = *s.training_end_time;
      out["TrainingJobSummaries"].push_back(std::move(e));
    }
    std::puts(out.dump(2).c_str());
    return kExitOk;
  }
  for (const auto& s : all)
    std::printf("%-40s %-10s %-18s %s\n", s.name.c_str(), std::string(jobs::status_name(s.status)).c_str(), s.secondary_status.c_str(),
                format_time(s.creation_time).c_str());
  return kExitOk;
}

constexpr std::string_view kStopUsage = R"(usage: vigil stop-training-job NAME [--jobs-dir DIR]

StopTrainingJob: the job's hosts get SIGTERM, then SIGKILL after the job's grace period; the job ends
Stopped, its rules finish on what was written. Allowed for the job's own user, or as the job's access
policy says (sagemaker:StopTrainingJob).

options:
  -h, --help            show this help
)";

int run_stop_command(const std::vector<std::string>& args) {
  CommonArgs common;
  if (auto done = parse_common("stop-training-job", kStopUsage, args, false, common)) return *done;
  if (common.positional.size() != 1) return usage_error("stop-training-job", "give one training job name");
  return send_to_job("stop-training-job", common.jobs_dir, common.positional[0], {{"Action", "StopTrainingJob"}});
}

constexpr std::string_view kUpdateUsage = R"(usage: vigil update-training-job NAME --remote-debug on|off [--jobs-dir DIR]

UpdateTrainingJob's RemoteDebugConfig: turns remote debugging on or off while the job's SecondaryStatus
is Downloading or Training (refused otherwise, and under network isolation). Turning it off ends the
sessions open on the job. Allowed as the job's access policy says (sagemaker:UpdateTrainingJob, with the
condition key sagemaker:EnableRemoteDebug); without one, for the job's own user.

options:
  --remote-debug on|off turn remote debugging on or off
  -h, --help            show this help
)";

int run_update_command(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  std::optional<bool> enable;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--remote-debug") {
      if (i + 1 >= args.size() || (args[i + 1] != "on" && args[i + 1] != "off"))
        return usage_error("update-training-job", "--remote-debug takes on or off");
      enable = args[++i] == "on";
    } else {
      rest.push_back(args[i]);
    }
  }
  CommonArgs common;
  if (auto done = parse_common("update-training-job", kUpdateUsage, rest, false, common)) return *done;
  if (common.positional.size() != 1) return usage_error("update-training-job", "give one training job name");
  if (!enable) return usage_error("update-training-job", "nothing to update: give --remote-debug on|off");
  nlohmann::json reply;
  const int rc = send_to_job("update-training-job", common.jobs_dir, common.positional[0],
                             {{"Action", "UpdateTrainingJob"}, {"RemoteDebugConfig", {{"EnableRemoteDebug", *enable}}}}, &reply);
  if (rc == kExitOk) std::puts(nlohmann::json{{"TrainingJobArn", reply.value("TrainingJobArn", "")}}.dump().c_str());
  return rc;
}

constexpr std::string_view kAttachUsage = R"(usage: vigil attach [sagemaker-training-job:]NAME_algo-N [--command CMD] [--jobs-dir DIR]

SSM's start-session for a training job run by vigil train with remote debugging on: a shell in host
algo-N's environment (its working directory and environment variables, the job's user), on a
pseudo-terminal; `exit` ends the session. --command runs one command instead and exits with its status.
Who may attach: the job's access policy (ssm:StartSession, condition key
ssm:resourceTag/aws:ssmmessages:target-id), else only the job's own user. The session's commands and
output go to the job's log <NAME>/algo-N-<start>/ssm. See docs/remote-debug.md.

options:
  --command CMD         run CMD (with /bin/sh -c) instead of an interactive shell
  -h, --help            show this help
)";

int run_attach_command(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  std::optional<std::string> command;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--command") {
      if (i + 1 >= args.size()) return usage_error("attach", "--command takes a command");
      command = args[++i];
    } else {
      rest.push_back(args[i]);
    }
  }
  CommonArgs common;
  if (auto done = parse_common("attach", kAttachUsage, rest, false, common)) return *done;
  if (common.positional.size() != 1) return usage_error("attach", "give one target: NAME_algo-N");
  std::string target = common.positional[0];
  const std::string_view prefix = "sagemaker-training-job:";
  std::string bare = target.starts_with(prefix) ? target.substr(prefix.size()) : target;
  const auto split = bare.rfind("_algo-");
  if (split == std::string::npos) return usage_error("attach", "a target is NAME_algo-N, e.g. my-job_algo-1");
  const std::string name = bare.substr(0, split);
  auto state = running_job(common.jobs_dir, name);
  if (!state) return std::fprintf(stderr, "vigil attach: %s\n", state.error().message.c_str()), kExitFailure;
  if (state->ended()) {
    std::fprintf(stderr, "vigil attach: TargetNotConnected: %s%s is not connected: training job %s is %s\n", prefix.data(),
                 bare.c_str(), name.c_str(), std::string(jobs::status_name(state->status)).c_str());
    return kExitFailure;
  }
  nlohmann::json request{{"Action", "StartSession"}, {"Target", fmt::format("{}{}", prefix, bare)}};
  if (command) request["Command"] = *command;
  if (const char* term = std::getenv("TERM")) request["Term"] = term;
  auto code = remote_debug::run_session(state->control_socket, request, STDIN_FILENO, STDOUT_FILENO);
  if (!code) {
    std::fprintf(stderr, "vigil attach: %s\n", code.error().message.c_str());
    return kExitFailure;
  }
  return *code;
}

}  // namespace

int run_train(const std::vector<std::string>& args) { return run_train_command(args); }
int run_describe_training_job(const std::vector<std::string>& args) { return run_describe_command(args); }
int run_list_training_jobs(const std::vector<std::string>& args) { return run_list_command(args); }
int run_stop_training_job(const std::vector<std::string>& args) { return run_stop_command(args); }
int run_update_training_job(const std::vector<std::string>& args) { return run_update_command(args); }
int run_attach(const std::vector<std::string>& args) { return run_attach_command(args); }

}  // namespace vigil::cli
