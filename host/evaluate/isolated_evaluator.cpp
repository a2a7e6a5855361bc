#include "evaluate/isolated_evaluator.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "common/os.h"
#include "common/process.h"
#include "evaluate/isolation_protocol.h"

namespace vigil::evaluate {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// How often the parent looks at the children's rule calls and memory between events.
constexpr auto kWatchInterval = std::chrono::milliseconds(20);
// How long a child may take to stop after SIGTERM before it is killed.
constexpr auto kStopGrace = std::chrono::seconds(5);

// One plugin's share of the job.
struct ChildGroup {
  fs::path plugin_file;
  std::vector<size_t> rules;  // indices in the job and on the board, in job order
  ChildWork work;
};

struct CallInProgress {
  RuleCall call;
  int64_t step;
  Clock::time_point since;
};

// Why the parent killed a child.
struct Kill {
  enum class Why { RuleTimeout, Memory, StopGrace } why;
  size_t culprit = 0;  // RuleTimeout: the rule (index in the child) whose call ran too long
  CallInProgress call{};
};

struct RunningChild {
  const ChildGroup* group = nullptr;
  pid_t pid = -1;
  os::UniqueFd events;  // the events pipe's read end; empty once closed
  Clock::time_point events_closed;
  std::string pending;  // the start of a line not yet complete
  std::vector<bool> finished;
  std::map<size_t, CallInProgress> calls;  // by rule index in the child
  std::optional<Kill> kill;
  bool stop_sent = false;
  bool ended = false;
};

std::string errno_text(int err) { return std::strerror(err); }

// The child's stdin: an anonymous in-memory file holding its job (no pipe, so no blocking write
// and no SIGPIPE should the child die before reading it).
[[nodiscard]] Result<os::UniqueFd> job_file(const std::string& text) {
  os::UniqueFd fd(::memfd_create("vigil-isolated-job", MFD_CLOEXEC));
  if (!fd) return fail(Error::io("memfd_create", errno_text(errno)));
  if (const auto wrote = os::write_all(fd.get(), text); !wrote.ok()) return fail(Error::io("memfd", errno_text(wrote.error)));
  ::lseek(fd.get(), 0, SEEK_SET);
  return os::move_high(fd.release());
}

// The child's resident memory in bytes that is its own: resident less file-backed and shared pages
// (its code, the plugins' code), which the kernel can drop or shares with others. 0 once it is gone.
uint64_t own_resident_bytes(pid_t pid) {
  std::ifstream statm(fmt::format("/proc/{}/statm", pid));
  uint64_t size_pages = 0, resident_pages = 0, shared_pages = 0;
  if (!(statm >> size_pages >> resident_pages >> shared_pages) || shared_pages > resident_pages) return 0;
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  return (resident_pages - shared_pages) * page;
}

std::string seconds_text(std::chrono::milliseconds ms) { return fmt::format("{:g}", double(ms.count()) / 1000.0); }

// What the process was doing, said of the rule that was doing it ...
std::string during_own_call(const CallInProgress& c) {
  switch (c.call) {
    case RuleCall::Create: return " while the rule was being created";
    case RuleCall::Step: return fmt::format(" at step {}", c.step);
    case RuleCall::Destroy: return " while the rule was being destroyed";
  }
  return {};
}

// ... and of another rule of the same process.
std::string during_other_call(const std::string& rule, const CallInProgress& c) {
  switch (c.call) {
    case RuleCall::Create: return fmt::format(" while rule '{}' was being created", rule);
    case RuleCall::Step: return fmt::format(" while rule '{}' ran step {}", rule, c.step);
    case RuleCall::Destroy: return fmt::format(" while rule '{}' was being destroyed", rule);
  }
  return {};
}

std::string timed_out_call(const CallInProgress& c) {
  switch (c.call) {
    case RuleCall::Create: return "while being created";
    case RuleCall::Step: return fmt::format("at step {}", c.step);
    case RuleCall::Destroy: return "while being destroyed";
  }
  return {};
}

}  // namespace

struct IsolatedEvaluator::Impl {
  EvaluatorOptions options;
  IsolationOptions isolation;
  std::unique_ptr<StatusBoard> board;
  std::vector<ChildGroup> groups;
  std::vector<RunningChild> children;

  void start(RunningChild& c);
  void read_events(RunningChild& c);
  void handle(RunningChild& c, std::string_view line);
  void watch(RunningChild& c, Clock::time_point now, std::optional<Clock::time_point> stop_time);
  void terminate(RunningChild& c, Kill why);
  void conclude(RunningChild& c, int wait_status);
  void log(const std::string& message) {
    if (options.on_log) options.on_log("", VIGIL_LOG_WARNING, message);
  }
  const std::string& rule_name(const RunningChild& c, size_t rule) const {
    return board_names[c.group->rules[rule]];
  }
  std::vector<std::string> board_names;  // configuration names, by job index
};

IsolatedEvaluator::IsolatedEvaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

IsolatedEvaluator::~IsolatedEvaluator() {
  // Children still running (run() not called to the end) must not outlive the evaluator.
  for (auto& c : impl_->children) {
    if (c.pid > 0 && !c.ended) os::terminate(c.pid, std::chrono::milliseconds(0), {.signal = SIGKILL, .target = os::Target::Process});
  }
}

Result<std::unique_ptr<IsolatedEvaluator>> IsolatedEvaluator::create(const plugin_host::PluginRegistry& registry,
                                                                     JobConfig job, EvaluatorOptions options,
                                                                     IsolationOptions isolation) {
  auto resolved = resolve_job(registry, std::move(job));
  if (!resolved) return fail(resolved.error());
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->isolation = std::move(isolation);
  const auto& o = impl->options;
  fs::path output_directory = o.output_directory.value_or(o.status_file ? o.status_file->parent_path() : fs::path());
  std::vector<RuleStatus> initial;
  std::map<fs::path, size_t> group_of_plugin;
  for (size_t i = 0; i < resolved->size(); ++i) {
    auto& rule = (*resolved)[i];
    auto [it, added] = group_of_plugin.try_emplace(rule.type.plugin_path, impl->groups.size());
    if (added) {
      ChildGroup g;
      g.plugin_file = rule.type.plugin_path;
      g.work.follow = o.follow;
      g.work.idle_timeout = o.idle_timeout;
      g.work.poll_interval = o.poll_interval;
      if (!output_directory.empty()) g.work.output_directory = output_directory;
      impl->groups.push_back(std::move(g));
    }
    ChildGroup& group = impl->groups[it->second];
    RuleConfig config = std::move(rule.config);
    // The child loads this one plugin: its id names the rule without any ambiguity.
    if (!config.source) config.rule_to_invoke = rule.type.descriptor->id;
    group.rules.push_back(i);
    group.work.job.rules.push_back(std::move(config));
    impl->board_names.push_back(group.work.job.rules.back().configuration_name);
    initial.push_back(RuleStatus{.configuration_name = impl->board_names.back(),
                                 .rule_name = std::move(rule.rule_name),
                                 .profile = std::move(rule.profile),
                                 .kind = group.work.job.rules.back().kind,
                                 .status = RuleEvaluationStatus::InProgress});
  }
  impl->board = std::make_unique<StatusBoard>(std::move(initial), o.status_file, o.on_status);
  if (auto w = impl->board->flush(); !w) return fail(w.error());
  return std::unique_ptr<IsolatedEvaluator>(new IsolatedEvaluator(std::move(impl)));
}

std::vector<RuleStatus> IsolatedEvaluator::statuses() const { return impl_->board->all(); }

void IsolatedEvaluator::Impl::start(RunningChild& c) {
  c.finished.assign(c.group->rules.size(), false);
  auto fail_all = [&](const std::string& why) {
    for (size_t i = 0; i < c.group->rules.size(); ++i)
      board->set(c.group->rules[i], RuleEvaluationStatus::Error, "RuleError: " + why);
    c.ended = true;
  };
  auto job = job_file(encode_child_work(c.group->work));
  if (!job) return fail_all(job.error().message);
  auto events = os::make_pipe();
  if (!events) return fail_all(events.error().message);
  os::set_nonblocking(events->read.get());

  std::error_code ec;
  fs::path shown = isolation.executable == "/proc/self/exe" ? fs::read_symlink(isolation.executable, ec)
                                                            : isolation.executable;
  std::vector<std::string> args{ec || shown.empty() ? std::string("vigil") : shown.string(), "evaluate",
                                "--isolated-child", "--plugin-file", c.group->plugin_file.string()};
  args.insert(args.end(), isolation.child_arguments.begin(), isolation.child_arguments.end());
  // The child's stdin is its job and fd 3 its events, with default signal handling. SIGINT and
  // SIGTERM stay blocked: a stop that arrives before the child's signal thread waits for them stays
  // pending for it instead of killing the child.
  auto pid = os::spawn({.argv = args,
                        .program = isolation.executable,
                        .search_path = false,
                        .fds = {{.child = STDIN_FILENO, .parent = job->get()},
                                {.child = kChildEventsFd, .parent = events->write.get()}},
                        .blocked_signals = {SIGINT, SIGTERM}});
  if (!pid) return fail_all(pid.error().message);
  c.pid = *pid;
  c.events = std::move(events->read);
}

void IsolatedEvaluator::Impl::handle(RunningChild& c, std::string_view line) {
  auto e = parse_child_event(line);
  if (!e || e->rule >= c.group->rules.size()) {
    log(fmt::format("ignoring a malformed event from the process of {}: {}", c.group->plugin_file.string(),
                    line.substr(0, 200)));
    return;
  }
  const size_t index = c.group->rules[e->rule];
  switch (e->kind) {
    case ChildEvent::Kind::Status: board->set(index, e->status, std::move(e->details)); break;
    case ChildEvent::Kind::Trigger: board->add_trigger(index, std::move(e->trigger)); break;
    case ChildEvent::Kind::Progress: board->progress(index, e->step); break;
    case ChildEvent::Kind::Judgement: board->set_judgement(index, std::move(e->judgement)); break;
    case ChildEvent::Kind::CallBegan: c.calls[e->rule] = {e->call, e->step, Clock::now()}; break;
    case ChildEvent::Kind::CallEnded: c.calls.erase(e->rule); break;
    case ChildEvent::Kind::Finished: c.finished[e->rule] = true; break;
  }
}

void IsolatedEvaluator::Impl::read_events(RunningChild& c) {
  char buffer[65536];
  // Bounded, so that a child that writes without pause cannot starve the others' watch.
  for (int reads = 0; reads < 64 && c.events; ++reads) {
    const os::IoOutcome got = os::read_some(c.events.get(), buffer);
    if (got.would_block()) return;
    if (got.bytes == 0) {
      c.events.reset();  // the end: every child's event is in
      c.events_closed = Clock::now();
      return;
    }
    c.pending.append(buffer, got.bytes);
    size_t start = 0;
    for (size_t nl; (nl = c.pending.find('\n', start)) != std::string::npos; start = nl + 1)
      handle(c, std::string_view(c.pending).substr(start, nl - start));
    c.pending.erase(0, start);
  }
}

void IsolatedEvaluator::Impl::terminate(RunningChild& c, Kill why) {
  if (c.kill) return;
  c.kill = why;
  os::send_signal(c.pid, SIGKILL, os::Target::Process);
}

void IsolatedEvaluator::Impl::watch(RunningChild& c, Clock::time_point now,
                                    std::optional<Clock::time_point> stop_time) {
  if (isolation.rule_timeout)
    for (const auto& [rule, call] : c.calls)
      if (now - call.since > *isolation.rule_timeout)
        return terminate(c, Kill{.why = Kill::Why::RuleTimeout, .culprit = rule, .call = call});
  if (isolation.memory_limit_mib > 0 && own_resident_bytes(c.pid) > isolation.memory_limit_mib * 1024 * 1024)
    return terminate(c, Kill{.why = Kill::Why::Memory});
  if (stop_time && now - *stop_time > kStopGrace) return terminate(c, Kill{.why = Kill::Why::StopGrace});
}

// Gives each rule of an ended child that had not finished its verdict from how the child ended.
void IsolatedEvaluator::Impl::conclude(RunningChild& c, int wait_status) {
  c.ended = true;
  c.events.reset();
  const auto& rules = c.group->rules;
  // Stopped: it did not stop in time after SIGTERM, or SIGTERM ended it (a rule's own handler).
  const bool stopped = (c.kill && c.kill->why == Kill::Why::StopGrace) ||
                       (c.stop_sent && !c.kill && WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGTERM);
  for (size_t i = 0; i < rules.size(); ++i)
    if (board->get(rules[i]).status == RuleEvaluationStatus::Stopping || (stopped && !c.finished[i])) {
      board->set(rules[i], RuleEvaluationStatus::Stopped);
      c.finished[i] = true;
    }

  // How the process ended, said once for every rule and once for the log.
  std::string ending;
  if (c.kill && c.kill->why == Kill::Why::Memory)
    ending = fmt::format("the rule's process ran out of memory (limit {} MiB)", isolation.memory_limit_mib);
  else if (c.kill && c.kill->why == Kill::Why::RuleTimeout)
    ending = fmt::format("rule '{}' ran for longer than --rule-timeout {} s {}", rule_name(c, c.kill->culprit),
                         seconds_text(*isolation.rule_timeout), timed_out_call(c.kill->call));
  else if (WIFSIGNALED(wait_status))
    ending = fmt::format("the rule's process was killed by signal {} ({})", WTERMSIG(wait_status),
                         ::strsignal(WTERMSIG(wait_status)));
  else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0)
    ending = fmt::format("the rule's process exited with status {}", WEXITSTATUS(wait_status));

  bool all_finished = true;
  for (bool f : c.finished) all_finished = all_finished && f;
  if (all_finished) {
    if (!ending.empty() && !stopped)
      log(fmt::format("the process of {} ended after its rules had finished: {}", c.group->plugin_file.string(),
                      ending));
    return;
  }
  if (ending.empty()) ending = "the rule's process exited with status 0";

  for (size_t i = 0; i < rules.size(); ++i) {
    if (c.finished[i]) continue;
    std::string details;
    if (c.kill && c.kill->why == Kill::Why::RuleTimeout) {
      details = i == c.kill->culprit
                    ? fmt::format("the rule ran for longer than --rule-timeout {} s {} and was stopped",
                                  seconds_text(*isolation.rule_timeout), timed_out_call(c.kill->call))
                    : "the rule's process was stopped because " + ending;
    } else if (auto own = c.calls.find(i); own != c.calls.end()) {
      details = ending + during_own_call(own->second);  // this rule was running when it happened
    } else if (!c.calls.empty()) {
      const auto& [other, call] = *c.calls.begin();
      details = ending + during_other_call(rule_name(c, other), call);
    } else {
      details = ending + " before finishing";
    }
    board->set(rules[i], RuleEvaluationStatus::Error, "RuleError: " + details);
  }
}

void IsolatedEvaluator::run(std::stop_token stop) {
  auto& impl = *impl_;
  for (size_t i = 0; i < impl.board_names.size(); ++i)
    if (impl.options.on_status) impl.options.on_status(impl.board->get(i));
  impl.children.resize(impl.groups.size());
  for (size_t g = 0; g < impl.groups.size(); ++g) {
    impl.children[g].group = &impl.groups[g];
    impl.start(impl.children[g]);
  }
  std::optional<Clock::time_point> stop_time;
  auto last_watch = Clock::now();
  while (true) {
    std::vector<pollfd> fds;
    std::vector<RunningChild*> polled;
    bool running = false;
    bool exiting = false;  // a child closed its events just now: it is about to end
    for (auto& c : impl.children) {
      if (c.ended) continue;
      running = true;
      if (c.events) {
        fds.push_back(pollfd{c.events.get(), POLLIN, 0});
        polled.push_back(&c);
      } else if (Clock::now() - c.events_closed < std::chrono::milliseconds(200)) {
        exiting = true;
      }
    }
    if (!running) break;
    const auto wait = exiting ? std::chrono::milliseconds(1) : kWatchInterval;
    if (os::poll(fds, wait) > 0)
      for (size_t k = 0; k < fds.size(); ++k)
        if (fds[k].revents) impl.read_events(*polled[k]);

    if (stop.stop_requested() && !stop_time) {
      stop_time = Clock::now();
      for (auto& c : impl.children)
        if (!c.ended && !c.stop_sent) {
          os::send_signal(c.pid, SIGTERM, os::Target::Process);
          c.stop_sent = true;
        }
    }
    // Events can arrive faster than the watch needs to look: rule calls, memory and ended
    // children are looked at every kWatchInterval, and at once when a child closes its events.
    const auto now = Clock::now();
    const bool watch_now = now - last_watch >= kWatchInterval;
    if (watch_now) last_watch = now;
    for (auto& c : impl.children) {
      if (c.ended || (!watch_now && c.events)) continue;
      if (const auto ended = os::poll_exit(c.pid)) {
        impl.read_events(c);  // what it wrote before it ended (a pipe holds at most one read's worth)
        impl.conclude(c, ended->wait_status);
      } else if (watch_now && !c.kill) {
        impl.watch(c, now, stop_time);
      }
    }
  }
  (void)impl.board->flush();
}

}  // namespace vigil::evaluate
