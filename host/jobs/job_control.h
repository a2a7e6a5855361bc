// A running training job's control requests: who may do what to the job (the access gate), and what
// StopTrainingJob, UpdateTrainingJob and StartSession do to it. The supervisor keeps the job's state
// and its processes (the state machine); this file answers the control socket's requests against
// that state through the narrow ControlledJob interface. docs/training-jobs.md, docs/remote-debug.md.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/job_paths.h"
#include "jobs/job_store.h"
#include "jobs/training_job_request.h"
#include "remote_debug/access_policy.h"
#include "remote_debug/control_server.h"
#include "remote_debug/peer_identity.h"

namespace vigil::jobs {

// Who may do what to the job. With an access policy, the policy decides (IAM's rules); without one,
// the job's own user alone may do anything. Immutable; check() may run on several threads at once.
class JobAccess {
 public:
  JobAccess(std::optional<remote_debug::AccessPolicy> policy, remote_debug::LocalUser owner)
      : policy_(std::move(policy)), owner_(std::move(owner)) {}

  // Nothing when `who` may perform `action` on `resource` with the condition keys of `context`;
  // otherwise AWS's AccessDeniedException text, naming the user, the action and the resource.
  [[nodiscard]] std::expected<void, std::string> check(const remote_debug::LocalUser& who, std::string_view action,
                                                       const std::string& resource,
                                                       std::map<std::string, std::string> context = {}) const;
  // Whether users other than the owner may be granted anything (so must reach the job's socket).
  [[nodiscard]] bool grants_others() const { return policy_ && policy_->grants_users_other_than(owner_); }
  // Whether `who` may be allowed anything (the owner always): who may connect to the job's socket.
  [[nodiscard]] bool may_grant_anything_to(const remote_debug::LocalUser& who) const {
    return who.uid == owner_.uid || (policy_ && policy_->may_grant_anything_to(who));
  }
  [[nodiscard]] const remote_debug::LocalUser& owner() const { return owner_; }

 private:
  std::optional<remote_debug::AccessPolicy> policy_;
  remote_debug::LocalUser owner_;
};

// The job as its control requests read and change it: the supervisor implements it. Every member may
// be called from the control server's connection threads, several at once.
class ControlledJob {
 public:
  virtual ~ControlledJob() = default;
  // The job's state now (a copy).
  virtual JobState snapshot() = 0;
  // Runs `change` on the state under the state's lock; when it returns true the change is kept and
  // written. Returns whether a change was kept and written.
  virtual bool change_state_if(const std::function<bool(JobState&)>& change) = 0;
  // Asks the job to stop (the supervisor's loop stops the hosts); `reason` becomes the stop reason.
  virtual void request_stop(std::string reason) = 0;
  // Ends every open remote-debug session, telling the clients `why`.
  virtual void end_sessions(std::string why) = 0;
  // The environment ("KEY=VALUE") host `host`'s command runs in, which a session's shell gets too.
  virtual std::vector<std::string> host_process_environment(int host) = 0;
};

// The handlers of the job's control socket. Holds references to `request`, `paths`, `access` and
// `job`, which must outlive it and the control server it is handed to.
class JobControl {
 public:
  JobControl(const TrainingJobRequest& request, const JobPaths& paths, const JobAccess& access, ControlledJob& job,
             double start_epoch)
      : request_(request), paths_(paths), access_(access), job_(job), arn_(training_job_arn(request.name)),
        start_epoch_(start_epoch) {}

  // The control server's handlers, bound to this object; the server's own errors go to `agent_log`.
  [[nodiscard]] remote_debug::ControlHandlers handlers(std::filesystem::path agent_log);

  // StartSession: the session to start on the target host, or the refusal sent to the client
  // (InvalidTarget, AccessDeniedException, TargetNotConnected).
  [[nodiscard]] std::expected<remote_debug::SessionPlan, std::string> start_session(const remote_debug::PeerIdentity& peer,
                                                                                  const nlohmann::json& request);
  // StopTrainingJob and UpdateTrainingJob (RemoteDebugConfig): {"Ok": true, ...} or {"Ok": false,
  // "Error": "<AWS error code>: <message>"}; any other Action is an UnknownOperationException.
  [[nodiscard]] nlohmann::json handle(const remote_debug::PeerIdentity& peer, const nlohmann::json& request);

 private:
  nlohmann::json stop(const remote_debug::LocalUser& who);
  nlohmann::json update(const remote_debug::LocalUser& who, const nlohmann::json& request);

  const TrainingJobRequest& request_;
  const JobPaths& paths_;
  const JobAccess& access_;
  ControlledJob& job_;
  std::string arn_;
  double start_epoch_;
};

}  // namespace vigil::jobs
