#include "jobs/training_job_supervisor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_read.h"
#include "common/os.h"
#include "common/process.h"
#include "common/published_file.h"
#include "format/trial_layout.h"
#include "jobs/container_environment.h"
#include "jobs/job_control.h"
#include "jobs/job_outputs.h"
#include "jobs/job_paths.h"
#include "jobs/job_store.h"
#include "jobs/output_uploads.h"
#include "jobs/rule_action_runner.h"
#include "jobs/training_job_request.h"
#include "profiler/profiler_trial.h"
#include "remote_debug/access_policy.h"
#include "remote_debug/control_server.h"
#include "remote_debug/control_socket.h"
#include "remote_debug/peer_identity.h"
#include "remote_debug/session_log.h"

namespace vigil::jobs {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
// The control socket's side of the job (host/remote_debug).
using remote_debug::AccessPolicy;
using remote_debug::ControlServer;
using remote_debug::LocalUser;
using remote_debug::user_name_of;

namespace {

constexpr int kExitRefused = 2;
constexpr int kExitRecords = 3;
constexpr int kExitUploads = 4;

// SIGINT or SIGTERM to `vigil train` stops the job as StopTrainingJob would.
volatile sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }

// A free TCP port on the loopback interface for torch.distributed's rendezvous (MASTER_PORT).
int free_loopback_port() {
  const os::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 29500;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  return port;
}

// A command of the job (a host's, the rule evaluator): its input empty, its output and errors to
// `output_fd` (-1: ours), in a process group of its own so that a stop signals all it started.
os::SpawnOptions child_options(std::vector<std::string> argv, std::vector<std::string> env, int output_fd,
                               fs::path cwd = {}) {
  os::SpawnOptions o{.argv = std::move(argv), .env = std::move(env), .cwd = std::move(cwd), .fds = {{.child = 0}},
                     .group = os::SpawnOptions::Group::Own};
  if (output_fd >= 0) o.fds.insert(o.fds.end(), {{.child = 1, .parent = output_fd}, {.child = 2, .parent = output_fd}});
  return o;
}

// Copies a child's output, line by line, to its log file and (unless quiet) to our stdout with the
// host's name in front, until the pipe closes or stop() is called.
class OutputRelay {
 public:
  OutputRelay(os::UniqueFd read_fd, fs::path log_file, std::string prefix, bool echo)
      : fd_(std::move(read_fd)), thread_([this, log_file = std::move(log_file), prefix = std::move(prefix), echo] {
          run(log_file, prefix, echo);
        }) {}
  ~OutputRelay() { stop(); }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    fd_.reset();
  }

 private:
  void run(const fs::path& log_file, const std::string& prefix, bool echo) {
    std::FILE* log = std::fopen(log_file.c_str(), "ae");
    std::string line;
    char buffer[8192];
    auto emit = [&](std::string_view text) {
      if (log) std::fwrite(text.data(), 1, text.size(), log), std::fflush(log);
      if (echo) {
        const std::string out = fmt::format("{}{}", prefix, text);
        std::fwrite(out.data(), 1, out.size(), stdout);
        std::fflush(stdout);
      }
    };
    // After stop() the pipe is drained for what is already there, then left.
    for (;;) {
      pollfd p{fd_.get(), POLLIN, 0};
      const int ready = os::poll(std::span(&p, 1), 100ms);
      if (ready == 0) {
        if (stopping_) break;
        continue;
      }
      const os::IoOutcome got = ready > 0 ? os::read_some(fd_.get(), buffer) : os::IoOutcome{0, EIO};
      if (got.bytes == 0) break;
      line.append(buffer, got.bytes);
      for (size_t nl; (nl = line.find('\n')) != std::string::npos;) {
        emit(std::string_view(line).substr(0, nl + 1));
        line.erase(0, nl + 1);
      }
    }
    if (!line.empty()) emit(line + "\n");
    if (log) std::fclose(log);
  }

  os::UniqueFd fd_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// The uploads' messages: to stderr and to the job's logs/<job>/uploads.log. Shared with the
// uploaders' threads, which may outlive the supervisor's wait for a store that hangs.
class UploadLog {
 public:
  explicit UploadLog(fs::path file) : file_(std::move(file)) {}
  void write(std::string_view message) {
    std::lock_guard lock(mutex_);
    std::fprintf(stderr, "vigil train: %.*s\n", int(message.size()), message.data());
    if (std::FILE* f = std::fopen(file_.c_str(), "ae")) {
      std::fprintf(f, "%.3f %.*s\n", epoch_seconds_now(), int(message.size()), message.data());
      std::fclose(f);
    }
  }

 private:
  std::mutex mutex_;
  fs::path file_;
};

// The job's state machine: its status and secondary-status transitions, its hosts' and evaluator's
// processes, its outputs. Control requests reach it through ControlledJob (jobs/job_control.h).
class Supervisor final : private ControlledJob {
 public:
  Supervisor(const TrainOptions& options, TrainingJobRequest request, JobPaths paths, JobAccess access,
             std::unique_ptr<JobOutputUploads> uploads, std::chrono::milliseconds upload_timeout)
      : options_(options), request_(std::move(request)), paths_(std::move(paths)), access_(std::move(access)),
        arn_(training_job_arn(request_.name)), uploads_(std::move(uploads)), upload_timeout_(upload_timeout) {}

  int run();

 private:
  // Applies `change` to the state and writes it (under the lock: control requests come from the
  // server's threads).
  bool update(const std::function<void(JobState&)>& change) {
    return change_state_if([&](JobState& s) {
      change(s);
      return true;
    });
  }
  // ControlledJob:
  bool change_state_if(const std::function<bool(JobState&)>& change) override {
    std::lock_guard lock(mutex_);
    JobState changed = state_;
    if (!change(changed)) return false;
    state_ = std::move(changed);
    state_.last_modified_time = epoch_seconds_now();
    if (auto saved = save_state(paths_, state_); !saved) {
      if (!records_failed_) std::fprintf(stderr, "vigil train: %s\n", saved.error().message.c_str());
      records_failed_ = true;
      return false;
    }
    return true;
  }
  JobState snapshot() override {
    std::lock_guard lock(mutex_);
    return state_;
  }
  void request_stop(std::string reason) override { request_stop(std::move(reason), "Stopped"); }
  void end_sessions(std::string why) override {
    if (server_) server_->end_sessions(why);
    end_orphans();
  }
  // Ends what was left behind detached (setsid, a double fork) and adopted by this subreaper: a
  // session's processes, once its shell is gone, are here and nowhere else (docs/remote-debug.md).
  static void end_orphans() {
    // A process that exits while its tree is walked leaves its children to this subreaper: they are
    // the next round's. The rounds are bounded; each ends a whole tree.
    for (int round = 0; round < 16; ++round) {
      const std::vector<pid_t> orphans = os::adopted_children();
      if (orphans.empty()) return;
      os::kill_process_trees(orphans);
      for (pid_t orphan : orphans) (void)os::wait_exit(orphan, std::chrono::seconds(2));
    }
  }
  std::vector<std::string> host_process_environment(int host) override {
    auto env = os::current_environment();
    for (const auto& [key, value] : host_env_[size_t(host)]) os::set_env(env, key, value);
    return env;
  }
  void request_stop(std::string reason, std::string secondary) {
    std::lock_guard lock(mutex_);
    if (stop_requested_) return;
    stop_reason_ = std::move(reason);
    stop_secondary_ = std::move(secondary);
    stop_requested_ = true;
  }
  Result<void> prepare_hosts();
  void start_hosts();
  std::optional<pid_t> start_evaluator();
  void watch_rules();
  void stop_hosts(std::chrono::milliseconds grace);
  void write_end_markers();
  void record_outputs();
  std::string failure_reason(size_t host, int code) const;

  const TrainOptions& options_;
  TrainingJobRequest request_;
  JobPaths paths_;
  JobAccess access_;
  std::string arn_;
  int master_port_ = 0;
  double start_epoch_ = 0;

  std::mutex mutex_;
  JobState state_;
  bool records_failed_ = false;
  bool stop_requested_ = false;
  std::string stop_reason_, stop_secondary_;

  std::vector<std::map<std::string, std::string>> host_env_;
  std::vector<pid_t> host_pids_;
  std::vector<std::unique_ptr<OutputRelay>> relays_;
  std::unique_ptr<JobControl> control_;   // before server_: the server's threads call into it
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<RuleActionRunner> actions_;
  std::set<std::string> rules_acted_on_;
  fs::file_time_type rule_status_seen_{};
  std::unique_ptr<JobOutputUploads> uploads_;
  std::chrono::milliseconds upload_timeout_;
  std::chrono::steady_clock::time_point outputs_recorded_{};
};

Result<void> Supervisor::prepare_hosts() {
  for (int i = 0; i < request_.instance_count; ++i) {
    std::error_code ec;
    const fs::path root = paths_.host_root(i);
    for (const char* sub : {"input/config", "input/data", "model", "output/data", "checkpoints"})
      fs::create_directories(root / sub, ec);
    fs::create_directories(paths_.host_config_dir(i), ec);
    if (ec) return fail(Error::io_write(root.string(), ec.message()));
    for (const auto& [name, text] : container_config_files(request_, paths_, i)) {
      const fs::path file = paths_.host_config_dir(i) / name;
      if (auto r = publish_file(file, fs::path(file).concat(".tmp"), text); !r) return r;
    }
    host_env_.push_back(host_environment(request_, paths_, i, master_port_, arn_));
    if (const auto left_out = host_env_.back().find(std::string(kLeftOutVariable)); i == 0 && left_out != host_env_.back().end())
      std::fprintf(stderr,
                   "vigil train: the hyperparameters are too large for the environment of an exec; left out (every host; "
                   "all are in input/config/hyperparameters.json): %.2000s\n",
                   left_out->second.c_str());
  }
  return {};
}

void Supervisor::start_hosts() {
  for (int i = 0; i < request_.instance_count; ++i) {
    const auto env = host_process_environment(i);
    const std::string host = host_name(i);
    const std::string stream = fmt::format("{}/{}-{}", request_.name, host, int64_t(start_epoch_));
    pid_t pid = -1;
    if (auto pipe = os::make_pipe()) {
      auto spawned = os::spawn(child_options(options_.command, env, pipe->write.get(), paths_.host_root(i)));
      pipe->write.reset();
      if (spawned) {
        pid = *spawned;
        relays_.push_back(std::make_unique<OutputRelay>(std::move(pipe->read), paths_.log_dir() / (stream + ".log"),
                                                        options_.quiet ? "" : fmt::format("[{}] ", host), !options_.quiet));
      } else {
        std::fprintf(stderr, "vigil train: %s: %s\n", host.c_str(), spawned.error().message.c_str());
      }
    }
    host_pids_.push_back(pid);
    update([&](JobState& s) { s.hosts.push_back({host, pid, pid < 0 ? std::optional<int>(127) : std::nullopt, stream}); });
  }
}

std::optional<pid_t> Supervisor::start_evaluator() {
  if (request_.debug_rules + request_.profiler_rules == 0) return std::nullopt;
  std::vector<std::string> argv{options_.vigil_executable.string(), "evaluate", "--trial", paths_.debug_output().string(),
                                "--job", paths_.request().string(), "--status-file", paths_.rule_status().string()};
  if (request_.profiler_rules > 0) argv.insert(argv.end(), {"--profiler-trial", paths_.profiler_output().string()});
  // Rules' own files (ProfilerReport's report) go to rule-output/<RuleConfigurationName>/, uploaded
  // to <S3OutputPath>/<job>/rule-output/<RuleConfigurationName>/ as SageMaker's rule jobs do.
  argv.insert(argv.end(), {"--output-dir", (paths_.output() / "rule-output").string()});
  argv.insert(argv.end(), options_.evaluator_arguments.begin(), options_.evaluator_arguments.end());
  const fs::path log = paths_.log_dir() / request_.name / "rules.log";
  const os::UniqueFd fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  auto pid = os::spawn(child_options(argv, os::current_environment(), fd.get()));
  if (!pid) {
    std::fprintf(stderr, "vigil train: the rule evaluator did not start: %s\n", pid.error().message.c_str());
    return std::nullopt;
  }
  return *pid;
}

// New IssuesFound statuses run their rule's actions, once per rule.
void Supervisor::watch_rules() {
  std::error_code ec;
  const auto mtime = fs::last_write_time(paths_.rule_status(), ec);
  if (ec || mtime == rule_status_seen_) return;
  rule_status_seen_ = mtime;
  auto text = read_regular_file(paths_.rule_status());
  if (!text) return;
  const auto statuses = nlohmann::json::parse(*text, nullptr, false);
  if (!statuses.is_object() || !statuses.contains("DebugRuleEvaluationStatuses")) return;
  const auto& rules = request_.document.value("DebugRuleConfigurations", nlohmann::json::array());
  for (const auto& status : statuses["DebugRuleEvaluationStatuses"]) {
    if (!status.is_object() || status.value("RuleEvaluationStatus", "") != "IssuesFound") continue;
    const std::string name = status.value("RuleConfigurationName", "");
    if (!rules_acted_on_.insert(name).second) continue;
    for (const auto& rule : rules) {
      if (!rule.is_object() || rule.value("RuleConfigurationName", "") != name) continue;
      const auto params = rule.value("RuleParameters", nlohmann::json::object());
      if (!params.contains("action_json") || !params["action_json"].is_string()) continue;
      if (request_.network_isolation) continue;  // sagemaker-api §5: no actions under network isolation
      std::string details = status.value("StatusDetails", "");
      while (!details.empty() && details.back() == '\n') details.pop_back();
      actions_->on_issues_found(name, status.value("RuleToInvoke", params.value("rule_to_invoke", name)),
                                params["action_json"].get<std::string>(), details);
    }
  }
}

void Supervisor::stop_hosts(std::chrono::milliseconds grace) {
  for (pid_t pid : host_pids_) os::send_signal(pid, SIGTERM, os::Target::ProcessAndGroup);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  auto state = snapshot();
  for (;;) {
    bool running = false;
    for (size_t i = 0; i < host_pids_.size(); ++i) {
      if (host_pids_[i] <= 0 || state.hosts[i].exit_code) continue;
      if (auto ended = os::poll_exit(host_pids_[i])) {
        update([&](JobState& s) { s.hosts[i].exit_code = ended->code(); });
        state = snapshot();
      } else {
        running = true;
      }
    }
    if (!running) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (size_t i = 0; i < host_pids_.size(); ++i)
        if (!state.hosts[i].exit_code) os::send_signal(host_pids_[i], SIGKILL, os::Target::ProcessAndGroup);
    }
    std::this_thread::sleep_for(50ms);
  }
  for (pid_t pid : host_pids_) os::send_signal(pid, SIGKILL, os::Target::Group);  // what the commands left behind
}

// The end of training as smdebug's readers see it: the marker in the trial and the profiler folder
// (the hooks write it when they close; a killed host never does).
void Supervisor::write_end_markers() {
  const fs::path debug = paths_.debug_output();
  std::error_code ec;
  const fs::path marker = debug / format::kEndOfTrainingMarker;
  if (fs::is_directory(debug, ec) && !fs::exists(marker, ec))
    (void)publish_file(marker, marker.string() + std::string(format::kTmpSuffix),
                       fmt::format("{}\n", int64_t(epoch_seconds_now())));
  // The profiler output's markers lie in its system/ and framework/ folders (format spec §8.6).
  if (fs::is_directory(paths_.profiler_output(), ec))
    for (auto folder : {profiler::ProfilerFolder::System, profiler::ProfilerFolder::Framework})
      (void)profiler::mark_training_ended(paths_.profiler_output(), folder);
}

// The outputs' upload statuses into the state record (describe-training-job's VigilOutputs), when
// they changed.
void Supervisor::record_outputs() {
  auto records = uploads_->records();
  outputs_recorded_ = std::chrono::steady_clock::now();
  const JobState s = snapshot();
  bool same = s.outputs.size() == records.size();
  for (size_t i = 0; i < records.size() && same; ++i)
    same = s.outputs[i].status == records[i].status && s.outputs[i].files_uploaded == records[i].files_uploaded;
  if (!same) update([&](JobState& st) { st.outputs = std::move(records); });
}

std::string Supervisor::failure_reason(size_t host, int code) const {
  // The training toolkit's convention: the text of /opt/ml/output/failure becomes FailureReason.
  const fs::path failure = paths_.host_root(int(host)) / "output" / "failure";
  if (auto text = read_regular_file(failure); text && !text->empty()) return text->substr(0, 1024);
  std::string command;
  for (const auto& a : options_.command) command += (command.empty() ? "" : " ") + a;
  return fmt::format("AlgorithmError: ExecuteUserScriptError: {} exited with code {}: {}", host_name(int(host)), code,
                     command)
      .substr(0, 1024);
}

int Supervisor::run() {
  // Sessions run as this process's user: non-dumpable, they cannot ptrace it or reach its fds and
  // memory through /proc (what it remembers of the session logs stays its own).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Orphans of the job's processes come here, so that sessions' leftovers end with them.
  if (!os::become_child_subreaper())
    std::fprintf(stderr, "vigil train: cannot become the subreaper of the job's processes: %s\n", std::strerror(errno));
  start_epoch_ = epoch_seconds_now();
  master_port_ = free_loopback_port();
  state_.name = request_.name;
  state_.creation_time = start_epoch_;
  state_.remote_debug = request_.remote_debug;
  state_.supervisor_pid = ::getpid();
  state_.owner_uid = access_.owner().uid;
  const fs::path socket = remote_debug::new_job_socket_path(access_.grants_others());
  state_.control_socket = socket.string();
  if (!update([&](JobState& s) { s.transition("Starting", "Preparing the instances for training", start_epoch_); }))
    return kExitRecords;

  control_ = std::make_unique<JobControl>(request_, paths_, access_, static_cast<ControlledJob&>(*this), start_epoch_);
  if (auto server = ControlServer::start(socket, access_.grants_others(),
                                         control_->handlers(paths_.log_dir() / request_.name / "agent-errors.log"));
      server) {
    server_ = std::move(*server);
    if (auto saved = save_control_endpoint(paths_, snapshot(), access_.grants_others()); !saved)
      std::fprintf(stderr, "vigil train: %s\n", saved.error().message.c_str());
  } else {
    std::fprintf(stderr, "vigil train: no control socket (stop-training-job, update-training-job and attach will not reach "
                 "this job): %s\n", server.error().message.c_str());
  }

  actions_ = std::make_unique<RuleActionRunner>(
      request_.name, paths_.log_dir() / request_.name / "rule-actions.log", NotificationSink::from_environment(),
      RuleActionRunner::Callbacks{[this] {
                                    std::vector<std::string> names;
                                    for (const auto& job : list_jobs(options_.jobs_dir))
                                      if (job.status == TrainingJobStatus::InProgress) names.push_back(job.name);
                                    return names;
                                  },
                                  [this](std::string reason) { request_stop(std::move(reason)); }});

  update([&](JobState& s) { s.transition("Downloading", "Downloading input data", epoch_seconds_now()); });
  if (auto prepared = prepare_hosts(); !prepared) {
    update([&](JobState& s) {
      s.status = TrainingJobStatus::Failed;
      s.failure_reason = "InternalServerError: " + prepared.error().message;
      s.transition("Failed", "Training job failed", epoch_seconds_now());
      s.exit_code = kExitRecords;
    });
    return kExitRecords;
  }
  const std::optional<pid_t> evaluator = start_evaluator();
  // The trial, profiler, TensorBoard and rule outputs reach their destinations while the job runs.
  if (auto live = uploads_->start_live(); !live) std::fprintf(stderr, "vigil train: %s\n", live.error().message.c_str());
  record_outputs();

  update([&](JobState& s) {
    s.training_start_time = epoch_seconds_now();
    s.transition("Training", "Training image download completed. Training in progress.", *s.training_start_time);
  });
  start_hosts();

  const auto started = std::chrono::steady_clock::now();
  std::optional<std::string> failure;
  std::optional<int> exit_code;
  for (;;) {
    JobState s = snapshot();
    bool running = false;
    for (size_t i = 0; i < host_pids_.size(); ++i) {
      if (s.hosts[i].exit_code) continue;
      if (auto ended = os::poll_exit(host_pids_[i])) {
        const std::optional<int> code = ended->code();
        update([&](JobState& st) { st.hosts[i].exit_code = *code; });
        if (*code != 0 && !failure && !stop_requested_) {
          failure = failure_reason(i, *code);
          exit_code = *code;
        }
      } else {
        running = true;
      }
    }
    if (host_pids_.empty() || std::any_of(host_pids_.begin(), host_pids_.end(), [](pid_t p) { return p < 0; })) {
      failure = failure.value_or("AlgorithmError: the training command could not be started");
      exit_code = exit_code.value_or(127);
    }
    if (failure) {
      // One host failing fails the job: the others are stopped.
      stop_hosts(options_.stop_grace);
      break;
    }
    if (!running) break;
    if (request_.max_runtime_seconds && std::chrono::steady_clock::now() - started >= std::chrono::seconds(*request_.max_runtime_seconds))
      request_stop(fmt::format("Training job exceeded MaxRuntimeInSeconds provided ({} s)", *request_.max_runtime_seconds),
                   "MaxRuntimeExceeded");
    if (g_stop_signal)
      request_stop(fmt::format("Stopped by {} to vigil train", g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM"));
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      stopping = stop_requested_;
    }
    if (stopping) {
      update([&](JobState& st) {
        st.status = TrainingJobStatus::Stopping;
        st.stop_reason = stop_reason_;
        st.transition("Stopping", "Stopping the training job", epoch_seconds_now());
      });
      if (server_) server_->end_sessions(fmt::format("training job {} is stopping", request_.name));
      stop_hosts(options_.stop_grace);
      break;
    }
    watch_rules();
    if (std::chrono::steady_clock::now() - outputs_recorded_ >= 2s) record_outputs();
    os::reap_adopted_children();
    std::this_thread::sleep_for(100ms);
  }
  for (auto& relay : relays_) relay->stop();
  end_sessions(fmt::format("training job {} has ended", request_.name));
  for (const std::string& altered : remote_debug::altered_session_logs())
    std::fprintf(stderr, "vigil train: session log altered outside the supervisor: %s\n", altered.c_str());

  const JobState after = snapshot();
  if (!exit_code)
    for (const auto& h : after.hosts)
      if (h.exit_code && *h.exit_code != 0) {
        exit_code = *h.exit_code;
        break;
      }
  if (!failure && !stop_requested_)
    update([&](JobState& s) { s.transition("Uploading", "Uploading generated training model", epoch_seconds_now()); });

  // The rules see the end of the data, finish, and write their last statuses.
  write_end_markers();
  if (evaluator) {
    const auto deadline = std::chrono::steady_clock::now() + options_.rule_wait;
    std::optional<os::ExitStatus> done;
    while (!(done = os::poll_exit(*evaluator)) && std::chrono::steady_clock::now() < deadline) {
      if (!failure && !stop_requested_) watch_rules();
      std::this_thread::sleep_for(100ms);
    }
    if (!done) os::terminate(*evaluator, 5s);
  }

  // The model and output archives, and the last of every output, whatever the job's end: nothing the
  // hosts wrote is lost (SageMaker uploads a stopped job's model too).
  std::vector<fs::path> host_roots;
  for (int i = 0; i < request_.instance_count; ++i) host_roots.push_back(paths_.host_root(i));
  uploads_->finish(host_roots, compresses_model(request_), std::chrono::steady_clock::now() + upload_timeout_);
  const std::optional<std::string> upload_failure = uploads_->failure_reason();

  update([&](JobState& s) {
    const double now = epoch_seconds_now();
    s.training_end_time = now;
    s.outputs = uploads_->records();
    s.model_artifacts = uploads_->model_artifacts();
    if (failure) {
      s.status = TrainingJobStatus::Failed;
      s.failure_reason = *failure;
      s.transition("Failed", "Training job failed", now);
    } else if (upload_failure) {
      // SageMaker fails a job whose outputs it could not upload (ClientError: Artifact upload failed:...).
      s.status = TrainingJobStatus::Failed;
      s.failure_reason = *upload_failure;
      if (stop_requested_) s.stop_reason = stop_reason_;
      s.transition("Failed", "Training job failed", now);
      exit_code = kExitUploads;
    } else if (stop_requested_) {
      s.status = TrainingJobStatus::Stopped;
      s.stop_reason = stop_reason_;
      s.transition(stop_secondary_, stop_secondary_ == "MaxRuntimeExceeded" ? "Training job exceeded MaxRuntimeInSeconds provided"
                                                                            : "Training job stopped",
                   now);
    } else {
      s.status = TrainingJobStatus::Completed;
      s.transition("Completed", "Training job completed", now);
    }
    // The open transition ends with the job.
    s.transitions.back().end_time = now;
    s.exit_code = exit_code.value_or(0);
  });
  server_.reset();
  std::error_code removed;
  fs::remove(paths_.control_endpoint(), removed);
  // The socket's folder was made for this job alone (rmdir leaves it if anything else is in it).
  ::rmdir(fs::path(snapshot().control_socket).parent_path().c_str());
  actions_.reset();
  const JobState final_state = snapshot();
  std::fprintf(stderr, "vigil train: training job %s %s%s%s\n", request_.name.c_str(), std::string(status_name(final_state.status)).c_str(),
               final_state.failure_reason ? (": " + *final_state.failure_reason).c_str() : "",
               final_state.stop_reason ? (": " + *final_state.stop_reason).c_str() : "");
  return records_failed_ ? kExitRecords : final_state.exit_code.value_or(0);
}

}  // namespace

int run_training_job(const TrainOptions& options) {
  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);
  auto text = read_whole_file(options.request_file);
  if (!text) {
    std::fprintf(stderr, "vigil train: %s\n", text.error().message.c_str());
    return kExitRefused;
  }
  auto request = parse_training_job_request(*text);
  if (!request) {
    std::fprintf(stderr, "vigil train: %s\n", request.error().message.c_str());
    return kExitRefused;
  }
  std::optional<AccessPolicy> policy;
  if (options.access_policy) {
    auto loaded = AccessPolicy::load(*options.access_policy);
    if (!loaded) {
      std::fprintf(stderr, "vigil train: %s\n", loaded.error().message.c_str());
      return kExitRefused;
    }
    policy = std::move(*loaded);
  }
  JobAccess access(std::move(policy), LocalUser{::geteuid(), user_name_of(::geteuid())});
  // The job's own user, as the policy sees them, creates the job.
  std::map<std::string, std::string> context;
  if (request->document.contains("RemoteDebugConfig")) context["sagemaker:EnableRemoteDebug"] = request->remote_debug ? "true" : "false";
  if (auto allowed = access.check(access.owner(), "sagemaker:CreateTrainingJob", training_job_arn(request->name), context);
      !allowed) {
    std::fprintf(stderr, "vigil train: %s\n", allowed.error().c_str());
    return kExitRefused;
  }
  if (options.command.empty()) {
    std::fprintf(stderr, "vigil train: no command to run (vigil train JOB.json -- COMMAND...)\n");
    return kExitRefused;
  }
  auto upload_timeout = writer::upload_timeout_from_environment();
  if (!upload_timeout) {
    std::fprintf(stderr, "vigil train: %s\n", upload_timeout.error().message.c_str());
    return kExitRefused;
  }

  std::error_code ec;
  fs::create_directories(options.jobs_dir, ec);
  const JobPaths paths{options.jobs_dir / request->name};
  // Relative file:// output paths are relative to where vigil train runs (SageMaker local mode's reading).
  const fs::path cwd = fs::current_path(ec);
  auto outputs = plan_job_outputs(*request, paths, cwd);
  if (!outputs) {
    std::fprintf(stderr, "vigil train: ValidationException: %s\n", outputs.error().message.c_str());
    return kExitRefused;
  }
  if (::mkdir(paths.root.c_str(), 0700) != 0) {
    if (errno == EEXIST)
      std::fprintf(stderr,
                   "vigil train: ResourceInUse: Training job names must be unique within an AWS account and region, and "
                   "a training job with this name already exists (%s) in %s\n",
                   training_job_arn(request->name).c_str(), options.jobs_dir.c_str());
    else
      std::fprintf(stderr, "vigil train: cannot create %s: %s\n", paths.root.c_str(), std::strerror(errno));
    return errno == EEXIST ? kExitRefused : kExitRecords;
  }
  // Only the job's user reads the job's data; users the access policy grants something may pass
  // through the job's folder to its state record (to find the control socket) and nothing more.
  ::chmod(paths.root.c_str(), access.grants_others() ? 0711 : 0700);
  for (const fs::path& dir : {paths.output(), paths.root / "hosts", paths.log_dir()}) {
    fs::create_directories(dir, ec);
    ::chmod(dir.c_str(), 0700);
  }
  for (const fs::path& dir : {paths.debug_output(), paths.profiler_output(), paths.tensorboard_output(),
                              paths.log_dir() / request->name})
    fs::create_directories(dir, ec);
  if (ec || !publish_file(paths.request(), fs::path(paths.request()).concat(".tmp"), *text) ||
      ::chmod(paths.request().c_str(), 0600) != 0) {
    std::fprintf(stderr, "vigil train: cannot write the job folder %s\n", paths.root.c_str());
    return kExitRecords;
  }

  // The rules are checked as the evaluator will run them (plugins loaded, parameters parsed) before
  // the job exists: a refused job leaves no folder behind, as a refused CreateTrainingJob leaves no job.
  if (request->debug_rules + request->profiler_rules > 0) {
    std::vector<std::string> argv{options.vigil_executable.string(), "evaluate", "--check", "--quiet", "--trial",
                                  paths.debug_output().string(), "--job", paths.request().string()};
    if (request->profiler_rules > 0) argv.insert(argv.end(), {"--profiler-trial", paths.profiler_output().string()});
    argv.insert(argv.end(), options.evaluator_arguments.begin(), options.evaluator_arguments.end());
    const fs::path out = paths.root / "rule-check.txt";
    const os::UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    auto pid = os::spawn(child_options(argv, os::current_environment(), fd.get()));
    const auto ended = pid ? os::wait_exit(*pid, std::chrono::minutes(2)) : std::nullopt;
    const int code = ended ? ended->code() : 1;
    if (code != 0) {
      std::string message = read_whole_file(out).value_or("the rule evaluator could not be run");
      while (!message.empty() && message.back() == '\n') message.pop_back();
      fs::remove_all(paths.root, ec);
      std::fprintf(stderr, "vigil train: ValidationException: the job's rules are refused:\n%s\n", message.c_str());
      return kExitRefused;
    }
    fs::remove(out, ec);
  }

  // Every destination is checked before anything runs: a job whose outputs could not go where the
  // request says is refused, not run to be failed at the end.
  auto upload_log = std::make_shared<UploadLog>(paths.log_dir() / request->name / "uploads.log");
  writer::UploaderOptions upload_options;
  upload_options.log = [upload_log](std::string_view message) { upload_log->write(message); };
  auto uploads = JobOutputUploads::prepare(std::move(*outputs), paths, default_store_opener(), std::move(upload_options));
  if (!uploads) {
    fs::remove_all(paths.root, ec);
    std::fprintf(stderr, "vigil train: %s\n", uploads.error().message.c_str());
    return kExitRefused;
  }
  return Supervisor(options, std::move(*request), paths, std::move(access), std::move(*uploads), *upload_timeout).run();
}

}  // namespace vigil::jobs
