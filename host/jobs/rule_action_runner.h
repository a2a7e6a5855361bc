// Runs the rule actions of a debug rule's action_json when the rule first finds issues (sagemaker-api
// §5): StopTraining stops this job, and only this job; Email and SMS become notifications delivered
// to a local sink instead of SNS. Every action, delivered or not, is a line in the job's audit log.
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vigil::jobs {

// The numeric addresses a host name resolves to, in the order a connection tries them.
using HostResolver = std::function<std::vector<std::string>(const std::string& host)>;

// Where Email and SMS notifications go: a command run with the message on its standard input
// ($VIGIL_NOTIFY_COMMAND) and/or a webhook that receives it as JSON ($VIGIL_NOTIFY_WEBHOOK: an
// http:// address on the loopback interface). Neither set: notifications are only audited.
struct NotificationSink {
  std::string command;
  std::string webhook_url;
  // How the webhook's host is resolved (empty: the system's resolver). The webhook is sent to the
  // first address only when that address is a loopback one, and the connection goes to exactly it.
  HostResolver resolve_host;
  int max_per_hour = 20;  // $VIGIL_NOTIFY_MAX_PER_HOUR: beyond it, notifications are audited as rate-limited
  static NotificationSink from_environment();
};

class RuleActionRunner {
 public:
  struct Callbacks {
    std::function<std::vector<std::string>()> in_progress_jobs;  // names of the InProgress jobs in the jobs folder
    std::function<void(std::string reason)> stop_this_job;
  };
  RuleActionRunner(std::string job_name, std::filesystem::path audit_log, NotificationSink sink, Callbacks callbacks);
  // Waits for the notifications still being delivered (each is bounded by a 10 s timeout).
  ~RuleActionRunner();
  RuleActionRunner(const RuleActionRunner&) = delete;
  RuleActionRunner& operator=(const RuleActionRunner&) = delete;

  // The rule `configuration_name` (class `rule_class`) reported IssuesFound with `details`; runs its
  // actions. Called once per rule.
  void on_issues_found(const std::string& configuration_name, const std::string& rule_class,
                       const std::string& action_json, const std::string& details);

 private:
  void audit(const std::string& rule, const std::string& action, const std::string& target, const std::string& outcome);
  void notify(std::string rule, std::string protocol, std::string endpoint, std::string rule_class, std::string details);

  std::string job_name_;
  std::filesystem::path audit_log_;
  NotificationSink sink_;
  Callbacks callbacks_;
  std::mutex mutex_;  // the audit log and the rate counter, from the delivery threads
  std::vector<double> sent_times_;
  std::vector<std::thread> deliveries_;
};

}  // namespace vigil::jobs
