#include "jobs/job_control.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/process.h"
#include "storage/s3_config.h"

namespace vigil::jobs {
namespace fs = std::filesystem;
using remote_debug::AccessDecision;
using remote_debug::AccessRequest;
using remote_debug::LocalUser;
using remote_debug::PeerIdentity;
using remote_debug::SessionPlan;

namespace {

// SSM's target ids for a training job's hosts: sagemaker-training-job:<job>_algo-<N>.
constexpr std::string_view kTargetPrefix = "sagemaker-training-job:";

nlohmann::json refuse(std::string message) { return nlohmann::json{{"Ok", false}, {"Error", std::move(message)}}; }

}  // namespace

std::expected<void, std::string> JobAccess::check(const LocalUser& who, std::string_view action, const std::string& resource,
                                                  std::map<std::string, std::string> context) const {
  auto denied = [&](AccessDecision decision) {
    return fmt::format("AccessDeniedException: User: {} (uid {}) is not authorized to perform: {} on resource: {}{}",
                       who.name, who.uid, action, resource,
                       decision == AccessDecision::ExplicitDeny
                           ? std::string(" with an explicit deny in an identity-based policy")
                           : fmt::format(" because no identity-based policy allows the {} action", action));
  };
  if (!policy_) {
    if (who.uid == owner_.uid) return {};
    return std::unexpected(denied(AccessDecision::ImplicitDeny) + " (no access policy: only the job's own user " +
                           owner_.name + ")");
  }
  const auto verdict = policy_->decide(who, AccessRequest{std::string(action), resource, std::move(context)});
  if (verdict.allowed()) return {};
  return std::unexpected(denied(verdict.decision));
}

remote_debug::ControlHandlers JobControl::handlers(fs::path agent_log) {
  remote_debug::ControlHandlers h;
  h.start_session = [this](const PeerIdentity& p, const nlohmann::json& r) { return start_session(p, r); };
  h.other = [this](const PeerIdentity& p, const nlohmann::json& r) { return handle(p, r); };
  h.admits = [this](uid_t uid) { return access_.may_grant_anything_to(LocalUser{uid, remote_debug::user_name_of(uid)}); };
  h.agent_log = std::move(agent_log);
  return h;
}

std::expected<SessionPlan, std::string> JobControl::start_session(const PeerIdentity& peer, const nlohmann::json& request) {
  const LocalUser who{peer.uid, peer.user_name};
  std::string target = request.value("Target", "");
  if (target.starts_with(kTargetPrefix)) target.erase(0, kTargetPrefix.size());
  const auto split = target.rfind("_algo-");
  const std::string job = split == std::string::npos ? target : target.substr(0, split);
  int host = -1;
  if (split != std::string::npos) {
    const std::string n = target.substr(split + 6);
    if (!n.empty() && n.size() < 4 && std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isdigit(c); }))
      host = std::stoi(n) - 1;
  }
  const std::string target_id = fmt::format("{}{}", kTargetPrefix, target);
  if (job != request_.name || host < 0 || host >= request_.instance_count)
    return std::unexpected(fmt::format("InvalidTarget: {} is not a host of training job {} (hosts: {}_algo-1 to {}_algo-{})",
                                       target_id, request_.name, request_.name, request_.name, request_.instance_count));
  if (auto allowed = access_.check(who, "ssm:StartSession", arn_, {{"ssm:resourceTag/aws:ssmmessages:target-id", target_id}});
      !allowed)
    return std::unexpected(allowed.error());
  const JobState s = job_.snapshot();
  if (request_.network_isolation)
    return std::unexpected(fmt::format("TargetNotConnected: {}: remote debugging is not possible for a training job with "
                                       "network isolation (EnableNetworkIsolation), which blocks the session agent",
                                       target_id));
  if (!s.remote_debug)
    return std::unexpected(fmt::format("TargetNotConnected: {}: remote debugging is not enabled for training job {} "
                                       "(RemoteDebugConfig.EnableRemoteDebug; vigil update-training-job {} --remote-debug on)",
                                       target_id, request_.name, request_.name));
  if (s.status != TrainingJobStatus::InProgress || s.secondary_status != "Training")
    return std::unexpected(fmt::format("TargetNotConnected: {}: a session can be opened while the job is Training; training "
                                       "job {} is {} ({})",
                                       target_id, request_.name, status_name(s.status), s.secondary_status));

  SessionPlan plan;
  // plan.session_id left empty: the server names the session as SSM does (<user>-<17 hex digits>).
  plan.target_id = target_id;
  auto env = job_.host_process_environment(host);
  // The job's AWS credentials stay with the job: whoever the policy lets in gets a shell, not the
  // owner's keys (docs/remote-debug.md).
  std::erase_if(env, [](const std::string& entry) {
    return storage::is_aws_credential_variable(std::string_view(entry).substr(0, entry.find('=')));
  });
  const std::string command = request.value("Command", "");
  plan.pty = command.empty();
  if (plan.pty) {
    // The client's "Term" replaces it in the control server, once filtered (control_server.h).
    os::set_env(env, "TERM", "xterm");
    os::set_env(env, "PS1", fmt::format("[{}] \\w \\$ ", host_name(host)));
    plan.argv = fs::exists("/bin/bash") ? std::vector<std::string>{"/bin/bash", "--noprofile", "--norc", "-i"}
                                        : std::vector<std::string>{"/bin/sh", "-i"};
  } else {
    plan.argv = {"/bin/sh", "-c", command};
  }
  plan.env = std::move(env);
  plan.cwd = paths_.host_root(host);
  // The CloudWatch stream of the host's agent, <job>/algo-N-<start>/ssm, as a file.
  plan.session_log = paths_.log_dir() / fmt::format("{}/{}-{}/ssm.log", request_.name, host_name(host), int64_t(start_epoch_));
  std::error_code ec;
  fs::create_directories(plan.session_log.parent_path(), ec);
  return plan;
}

nlohmann::json JobControl::handle(const PeerIdentity& peer, const nlohmann::json& request) {
  const LocalUser who{peer.uid, peer.user_name};
  const std::string action = request.value("Action", "");
  if (action == "StopTrainingJob") return stop(who);
  if (action == "UpdateTrainingJob") return update(who, request);
  return refuse(fmt::format("UnknownOperationException: '{}' is not an operation of the job's control socket", action));
}

nlohmann::json JobControl::stop(const LocalUser& who) {
  if (auto allowed = access_.check(who, "sagemaker:StopTrainingJob", arn_); !allowed) return refuse(allowed.error());
  const JobState s = job_.snapshot();
  if (s.status != TrainingJobStatus::InProgress)
    return refuse(fmt::format("ValidationException: The request was rejected because the training job is in status {}.",
                              status_name(s.status)));
  job_.request_stop(fmt::format("Stopped by StopTrainingJob from {} (uid {})", who.name, who.uid));
  return {{"Ok", true}};
}

nlohmann::json JobControl::update(const LocalUser& who, const nlohmann::json& request) {
  const auto config = request.value("RemoteDebugConfig", nlohmann::json::object());
  if (!config.is_object() || !config.contains("EnableRemoteDebug") || !config["EnableRemoteDebug"].is_boolean())
    return refuse("ValidationException: RemoteDebugConfig.EnableRemoteDebug (a boolean) is the member this local "
                  "UpdateTrainingJob takes");
  const bool enable = config["EnableRemoteDebug"].get<bool>();
  if (auto allowed = access_.check(who, "sagemaker:UpdateTrainingJob", arn_,
                                   {{"sagemaker:EnableRemoteDebug", enable ? "true" : "false"}});
      !allowed)
    return refuse(allowed.error());
  if (enable && request_.network_isolation)
    return refuse("ValidationException: Remote debugging cannot be enabled for a training job with network isolation "
                  "(EnableNetworkIsolation)");
  // SageMaker takes RemoteDebugConfig while the job downloads or trains, not after.
  std::string secondary;
  const bool changed = job_.change_state_if([&](JobState& s) {
    secondary = s.secondary_status;
    if (s.status != TrainingJobStatus::InProgress || (secondary != "Downloading" && secondary != "Training")) return false;
    s.remote_debug = enable;
    return true;
  });
  if (!changed)
    return refuse(fmt::format("ValidationException: RemoteDebugConfig can be updated only while the training job's "
                              "SecondaryStatus is Downloading or Training; training job {} is {}",
                              request_.name, secondary));
  if (!enable) job_.end_sessions(fmt::format("remote debugging was turned off for training job {}", request_.name));
  return {{"Ok", true}, {"TrainingJobArn", arn_}};
}

}  // namespace vigil::jobs
