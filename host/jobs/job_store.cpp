#include "jobs/job_store.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "common/file_read.h"
#include "common/process.h"
#include "common/published_file.h"
#include "common/sha256.h"
#include <vigil/sdk/text.hpp>

namespace vigil::jobs {
namespace fs = std::filesystem;

namespace {

using sdk::lower;

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

// sagemaker-api §4.7: processing-job/<first 26 chars of the job>-<lower-cased rule>-<8 hex>; the
// hex is a digest of the two names here, so one job's ARNs stay the same from one describe to the next.
std::string rule_job_arn(std::string_view job, std::string_view rule) {
  Sha256 digest;
  const std::string key = fmt::format("{}/{}", job, rule);
  digest.update(key.data(), key.size());
  std::string name = fmt::format("{}-{}", job.substr(0, 26), lower(std::string(rule)));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  name = name.substr(0, 54);
  return fmt::format("arn:aws:sagemaker:{}:{}:processing-job/{}-{}", local_region(), local_account(), name,
                     digest.finish_hex().substr(0, 8));
}

}  // namespace

fs::path default_jobs_dir() {
  if (const char* dir = std::getenv("VIGIL_JOBS_DIR"); dir && *dir) return fs::absolute(dir);
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state)
    return fs::path(state) / "vigil" / "training-jobs";
  return fs::path(env_or("HOME", "/")) / ".local" / "state" / "vigil" / "training-jobs";
}

std::string local_region() { return env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", "us-east-1")); }
std::string local_account() { return env_or("VIGIL_ACCOUNT_ID", "000000000000"); }
std::string training_job_arn(std::string_view name) {
  return fmt::format("arn:aws:sagemaker:{}:{}:training-job/{}", local_region(), local_account(), lower(std::string(name)));
}

double epoch_seconds_now() {
  using namespace std::chrono;
  return double(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count()) / 1000.0;
}

void JobState::transition(std::string secondary, std::string message, double now) {
  if (!transitions.empty() && !transitions.back().end_time) transitions.back().end_time = now;
  secondary_status = secondary;
  transitions.push_back({std::move(secondary), now, std::nullopt, std::move(message)});
  last_modified_time = now;
}

namespace {

// VigilOutputs / the state record's Outputs.
nlohmann::json outputs_json(const std::vector<OutputRecord>& outputs) {
  auto out = nlohmann::json::array();
  for (const auto& o : outputs) {
    nlohmann::json e{{"Name", o.name},
                     {"LocalPath", o.local_path},
                     {"Destination", o.destination},
                     {"Status", o.status},
                     {"FilesUploaded", o.files_uploaded},
                     {"BytesUploaded", o.bytes_uploaded},
                     {"FilesLeft", o.files_left}};
    if (!o.some_files_left.empty()) e["SomeFilesLeft"] = o.some_files_left;
    if (o.error) e["Error"] = *o.error;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

namespace {
constexpr std::pair<TrainingJobStatus, std::string_view> kStatusNames[] = {
    {TrainingJobStatus::InProgress, "InProgress"}, {TrainingJobStatus::Completed, "Completed"},
    {TrainingJobStatus::Failed, "Failed"},         {TrainingJobStatus::Stopping, "Stopping"},
    {TrainingJobStatus::Stopped, "Stopped"}};
}  // namespace

std::string_view status_name(TrainingJobStatus status) {
  for (const auto& [value, name] : kStatusNames)
    if (value == status) return name;
  return "InProgress";
}

std::optional<TrainingJobStatus> parse_training_job_status(std::string_view name) {
  for (const auto& [value, known] : kStatusNames)
    if (known == name) return value;
  return std::nullopt;
}

nlohmann::json to_json(const JobState& s) {
  nlohmann::json j;
  j["TrainingJobName"] = s.name;
  j["TrainingJobStatus"] = status_name(s.status);
  j["SecondaryStatus"] = s.secondary_status;
  auto& transitions = j["SecondaryStatusTransitions"] = nlohmann::json::array();
  for (const auto& t : s.transitions) {
    nlohmann::json e{{"Status", t.status}, {"StartTime", t.start_time}, {"StatusMessage", t.message}};
    if (t.end_time) e["EndTime"] = *t.end_time;
    transitions.push_back(std::move(e));
  }
  if (s.failure_reason) j["FailureReason"] = *s.failure_reason;
  j["CreationTime"] = s.creation_time;
  if (s.training_start_time) j["TrainingStartTime"] = *s.training_start_time;
  if (s.training_end_time) j["TrainingEndTime"] = *s.training_end_time;
  j["LastModifiedTime"] = s.last_modified_time;
  j["RemoteDebugConfig"] = {{"EnableRemoteDebug", s.remote_debug}};
  nlohmann::json local{{"SupervisorPid", s.supervisor_pid}, {"OwnerUid", s.owner_uid}, {"ControlSocket", s.control_socket}};
  if (s.stop_reason) local["StopReason"] = *s.stop_reason;
  if (s.exit_code) local["ExitCode"] = *s.exit_code;
  auto& hosts = local["Hosts"] = nlohmann::json::array();
  for (const auto& h : s.hosts) {
    nlohmann::json e{{"Host", h.host}, {"Pid", h.pid}, {"LogStream", h.log_stream}};
    if (h.exit_code) e["ExitCode"] = *h.exit_code;
    hosts.push_back(std::move(e));
  }
  if (!s.outputs.empty()) local["Outputs"] = outputs_json(s.outputs);
  if (s.model_artifacts) local["ModelArtifacts"] = *s.model_artifacts;
  j["Vigil"] = std::move(local);
  return j;
}

Result<JobState> job_state_from_json(const nlohmann::json& j) {
  try {
    JobState s;
    s.name = j.at("TrainingJobName").get<std::string>();
    const auto status = parse_training_job_status(j.at("TrainingJobStatus").get<std::string>());
    if (!status) return fail(Error::invalid_argument("the job's state has an unknown TrainingJobStatus"));
    s.status = *status;
    s.secondary_status = j.at("SecondaryStatus").get<std::string>();
    for (const auto& t : j.at("SecondaryStatusTransitions")) {
      StatusTransition e{t.at("Status").get<std::string>(), t.at("StartTime").get<double>(), std::nullopt,
                         t.value("StatusMessage", std::string())};
      if (t.contains("EndTime")) e.end_time = t["EndTime"].get<double>();
      s.transitions.push_back(std::move(e));
    }
    if (j.contains("FailureReason")) s.failure_reason = j["FailureReason"].get<std::string>();
    s.creation_time = j.at("CreationTime").get<double>();
    if (j.contains("TrainingStartTime")) s.training_start_time = j["TrainingStartTime"].get<double>();
    if (j.contains("TrainingEndTime")) s.training_end_time = j["TrainingEndTime"].get<double>();
    s.last_modified_time = j.at("LastModifiedTime").get<double>();
    s.remote_debug = j.at("RemoteDebugConfig").at("EnableRemoteDebug").get<bool>();
    const auto& local = j.at("Vigil");
    s.supervisor_pid = local.at("SupervisorPid").get<pid_t>();
    s.owner_uid = local.at("OwnerUid").get<uid_t>();
    s.control_socket = local.at("ControlSocket").get<std::string>();
    if (local.contains("StopReason")) s.stop_reason = local["StopReason"].get<std::string>();
    if (local.contains("ExitCode")) s.exit_code = local["ExitCode"].get<int>();
    if (local.contains("ModelArtifacts")) s.model_artifacts = local["ModelArtifacts"].get<std::string>();
    // Records written before outputs were uploaded have none.
    if (local.contains("Outputs"))
      for (const auto& o : local["Outputs"]) {
        OutputRecord r{o.at("Name").get<std::string>(), o.at("LocalPath").get<std::string>(),
                       o.at("Destination").get<std::string>(), o.at("Status").get<std::string>()};
        r.files_uploaded = o.value("FilesUploaded", uint64_t(0));
        r.bytes_uploaded = o.value("BytesUploaded", uint64_t(0));
        r.files_left = o.value("FilesLeft", uint64_t(0));
        if (o.contains("SomeFilesLeft")) r.some_files_left = o["SomeFilesLeft"].get<std::vector<std::string>>();
        if (o.contains("Error")) r.error = o["Error"].get<std::string>();
        s.outputs.push_back(std::move(r));
      }
    for (const auto& h : local.at("Hosts")) {
      HostState e{h.at("Host").get<std::string>(), h.at("Pid").get<pid_t>(), std::nullopt, h.at("LogStream").get<std::string>()};
      if (h.contains("ExitCode")) e.exit_code = h["ExitCode"].get<int>();
      s.hosts.push_back(std::move(e));
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::invalid_argument(fmt::format("not a training job state record: {}", e.what())));
  }
}

Result<void> save_state(const JobPaths& paths, const JobState& state) {
  const fs::path file = paths.state();
  return publish_file(file, fs::path(file).concat(".tmp"), to_json(state).dump(2) + "\n", 0600);
}

Result<void> save_control_endpoint(const JobPaths& paths, const JobState& state, bool readable_by_others) {
  const nlohmann::json j{{"TrainingJobName", state.name}, {"SupervisorPid", state.supervisor_pid},
                         {"ControlSocket", state.control_socket}};
  const fs::path file = paths.control_endpoint();
  return publish_file(file, fs::path(file).concat(".tmp"), j.dump(2) + "\n", readable_by_others ? 0644 : 0600);
}

Result<JobState> load_control_endpoint(const JobPaths& paths) {
  auto text = read_whole_file(paths.control_endpoint());
  if (!text) return fail(std::move(text.error()));
  const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("SupervisorPid") || !j["SupervisorPid"].is_number_integer() ||
      !j.contains("ControlSocket") || !j["ControlSocket"].is_string() || !j.contains("TrainingJobName") ||
      !j["TrainingJobName"].is_string())
    return fail(Error::invalid_argument(fmt::format("{}: not a control endpoint record", paths.control_endpoint().string())));
  JobState s;
  s.name = j["TrainingJobName"].get<std::string>();
  s.supervisor_pid = j["SupervisorPid"].get<pid_t>();
  s.control_socket = j["ControlSocket"].get<std::string>();
  return s;
}

Result<JobState> load_state(const JobPaths& paths) {
  auto text = read_regular_file(paths.state());
  if (!text) return fail(std::move(text.error()));
  const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail(Error::invalid_argument(fmt::format("{}: not JSON", paths.state().string())));
  return job_state_from_json(j);
}

Result<JobPaths> find_job(const fs::path& jobs_dir, std::string_view name) {
  JobPaths paths{jobs_dir / std::string(name)};
  std::error_code ec;
  // A name with a path separator or a dot-name would leave the jobs folder; no job is named so.
  const bool valid_name = !name.empty() && name.find('/') == std::string_view::npos && name != "." && name != "..";
  // The folder is 0711 for users the policy grants something: they may pass it, not read state.json.
  if (valid_name && ::access(paths.state().c_str(), F_OK) != 0 && errno == EACCES)
    return fail(Error::invalid_argument(fmt::format(
        "AccessDeniedException: training job '{}' belongs to another user, whose jobs folder {} this user may not read",
        name, jobs_dir.string())));
  if (!valid_name || !fs::is_regular_file(paths.state(), ec))
    return fail(Error::invalid_argument(
        fmt::format("ResourceNotFound: Requested resource not found: training job '{}' in {}", name, jobs_dir.string())));
  return paths;
}

std::vector<JobState> list_jobs(const fs::path& jobs_dir) {
  std::vector<JobState> jobs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(jobs_dir, ec)) {
    if (!entry.is_directory(ec)) continue;
    auto state = load_state(JobPaths{entry.path()});
    if (state) jobs.push_back(with_supervisor_checked(std::move(*state)));
  }
  std::sort(jobs.begin(), jobs.end(), [](const JobState& a, const JobState& b) { return a.creation_time > b.creation_time; });
  return jobs;
}

JobState with_supervisor_checked(JobState state) {
  if (state.ended() || state.supervisor_pid <= 0) return state;
  if (os::process_exists(state.supervisor_pid)) return state;
  state.status = TrainingJobStatus::Failed;
  state.transition("Failed", "Training job failed", state.last_modified_time);
  state.failure_reason = fmt::format("InternalServerError: the job's supervisor (pid {}) ended without recording the job's end",
                                     state.supervisor_pid);
  return state;
}

Result<nlohmann::json> describe_training_job(const JobPaths& paths) {
  auto state = load_state(paths);
  if (!state) return fail(std::move(state.error()));
  const JobState s = with_supervisor_checked(std::move(*state));
  auto request_text = read_regular_file(paths.request());
  if (!request_text) return fail(std::move(request_text.error()));
  auto request = nlohmann::json::parse(*request_text, nullptr, false);
  if (!request.is_object()) return fail(Error::invalid_argument(fmt::format("{}: not a JSON object", paths.request().string())));

  nlohmann::json d = request;
  d["TrainingJobArn"] = training_job_arn(s.name);
  d["TrainingJobStatus"] = status_name(s.status);
  d["SecondaryStatus"] = s.secondary_status;
  const nlohmann::json state_json = to_json(s);
  d["SecondaryStatusTransitions"] = state_json["SecondaryStatusTransitions"];
  if (s.failure_reason) d["FailureReason"] = *s.failure_reason;
  for (const char* key : {"CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime"})
    if (state_json.contains(key)) d[key] = state_json[key];
  if (s.training_start_time)
    d["TrainingTimeInSeconds"] = int64_t((s.training_end_time ? *s.training_end_time : epoch_seconds_now()) - *s.training_start_time);
  d["RemoteDebugConfig"] = {{"EnableRemoteDebug", s.remote_debug}};
  if (request.contains("ProfilerConfig")) {
    const auto& pc = request["ProfilerConfig"];
    const bool disabled = pc.is_object() && pc.value("DisableProfiler", false);
    d["ProfilingStatus"] = disabled ? "Disabled" : "Enabled";
  }
  // Where the model is, once it is there (s3://... or file://...).
  if (s.model_artifacts) d["ModelArtifacts"] = {{"S3ModelArtifacts", *s.model_artifacts}};

  // One status per configured rule, in configuration order: the evaluator's record where it wrote
  // one, else InProgress since the job was created.
  nlohmann::json evaluated = nlohmann::json::object();
  if (auto text = read_regular_file(paths.rule_status()); text) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object()) evaluated = std::move(j);
  }
  for (const auto& [configurations, statuses] : {std::pair{"DebugRuleConfigurations", "DebugRuleEvaluationStatuses"},
                                                 std::pair{"ProfilerRuleConfigurations", "ProfilerRuleEvaluationStatuses"}}) {
    if (!request.contains(configurations) || !request[configurations].is_array()) continue;
    auto& out = d[statuses] = nlohmann::json::array();
    for (const auto& rule : request[configurations]) {
      const std::string name = rule.value("RuleConfigurationName", std::string());
      nlohmann::json entry{{"RuleConfigurationName", name}, {"RuleEvaluationJobArn", rule_job_arn(s.name, name)},
                           {"RuleEvaluationStatus", "InProgress"}, {"LastModifiedTime", s.creation_time}};
      if (evaluated.contains(statuses) && evaluated[statuses].is_array())
        for (const auto& e : evaluated[statuses])
          if (e.is_object() && e.value("RuleConfigurationName", std::string()) == name)
            for (const char* key : {"RuleEvaluationStatus", "StatusDetails", "LastModifiedTime"})
              if (e.contains(key)) entry[key] = e[key];
      out.push_back(std::move(entry));
    }
  }
  d["VigilLocalPaths"] = {{"JobFolder", paths.root.string()},
                          {"DebugOutput", paths.debug_output().string()},
                          {"ProfilerOutput", paths.profiler_output().string()},
                          {"TensorBoardOutput", paths.tensorboard_output().string()},
                          {"RuleOutput", (paths.output() / "rule-output").string()},
                          {"Artifacts", paths.artifacts().string()},
                          {"RuleStatus", paths.rule_status().string()},
                          {"Logs", paths.log_dir().string()}};
  if (!s.outputs.empty()) d["VigilOutputs"] = outputs_json(s.outputs);
  if (s.stop_reason) d["VigilStopReason"] = *s.stop_reason;
  if (s.exit_code) d["VigilExitCode"] = *s.exit_code;
  return d;
}

}  // namespace vigil::jobs
