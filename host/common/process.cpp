#include "common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace vigil::os {

namespace {

// posix_spawn's attributes and file actions, destroyed with the object.
struct SpawnPlan {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnPlan() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnPlan() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnPlan(const SpawnPlan&) = delete;
  SpawnPlan& operator=(const SpawnPlan&) = delete;
};

// The children spawn() started and nobody has reaped yet. Held across posix_spawn, so that
// adopted_children() never mistakes a child being started for an adopted orphan.
std::mutex spawned_mutex;
std::set<pid_t> spawned_children;

void forget_child(pid_t pid) {
  std::lock_guard lock(spawned_mutex);
  spawned_children.erase(pid);
}

// Every pid in /proc/<pid>/task/*/children (empty once the process is gone).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator task(fmt::format("/proc/{}/task", pid), ec), end; !ec && task != end;
       task.increment(ec)) {
    std::ifstream list(task->path() / "children");
    for (pid_t child; list >> child;) out.push_back(child);
  }
  return out;
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<pid_t> spawn(const SpawnOptions& o) {
  if (o.argv.empty() || o.argv[0].empty()) return fail(Error::invalid_argument("no program to run"));
  SpawnPlan plan;
  int highest_mapped = 2;
  if (!o.controlling_terminal.empty()) {
    // Opened (without O_NOCTTY) after setsid: the session leader's first terminal becomes its
    // controlling terminal.
    posix_spawn_file_actions_addopen(&plan.actions, 0, o.controlling_terminal.c_str(), O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&plan.actions, 0, 1);
    posix_spawn_file_actions_adddup2(&plan.actions, 0, 2);
  }
  for (const ChildFd& fd : o.fds) {
    if (fd.parent >= 0) posix_spawn_file_actions_adddup2(&plan.actions, fd.parent, fd.child);
    else posix_spawn_file_actions_addopen(&plan.actions, fd.child, fd.path.c_str(), fd.open_flags, 0);
    highest_mapped = std::max(highest_mapped, fd.child);
  }
  if (o.close_other_fds) posix_spawn_file_actions_addclosefrom_np(&plan.actions, highest_mapped + 1);
  if (!o.cwd.empty()) posix_spawn_file_actions_addchdir_np(&plan.actions, o.cwd.c_str());

  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o.group == SpawnOptions::Group::Own) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&plan.attr, 0);
  } else if (o.group == SpawnOptions::Group::Session) {
    flags |= POSIX_SPAWN_SETSID;
  }
  sigset_t mask, defaults;
  sigemptyset(&mask);
  for (int s : o.blocked_signals) sigaddset(&mask, s);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&plan.attr, &mask);
  posix_spawnattr_setsigdefault(&plan.attr, &defaults);
  posix_spawnattr_setflags(&plan.attr, flags);

  const auto argv = pointers(o.argv);
  const auto envp = o.env ? pointers(*o.env) : std::vector<char*>();
  char* const* env = o.env ? envp.data() : environ;
  const std::string program = o.program.empty() ? o.argv[0] : o.program.string();
  pid_t pid = -1;
  const bool search = o.search_path && program.find('/') == std::string::npos;
  std::unique_lock registry(spawned_mutex);
  const int rc = search ? posix_spawnp(&pid, program.c_str(), &plan.actions, &plan.attr, argv.data(), env)
                        : posix_spawn(&pid, program.c_str(), &plan.actions, &plan.attr, argv.data(), env);
  if (rc == 0) {
    spawned_children.insert(pid);
    return pid;
  }
  registry.unlock();
  // posix_spawn says only the errno: a working directory that cannot be entered is what failed
  // when it cannot be entered now.
  std::error_code ec;
  if (!o.cwd.empty() && (!std::filesystem::is_directory(o.cwd, ec) || ::access(o.cwd.c_str(), X_OK) != 0))
    return fail(Error::invalid_argument(
        fmt::format("cannot change to the working directory {}: {}", o.cwd.string(), std::strerror(rc))));
  return fail(Error::invalid_argument(fmt::format("cannot run {}: {}", program, std::strerror(rc))));
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

void set_env(std::vector<std::string>& env, std::string_view key, std::string_view value) {
  const std::string prefix = fmt::format("{}=", key);
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
  env.push_back(prefix + std::string(value));
}

int ExitStatus::code() const {
  if (lost) return 255;
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

std::optional<int> ExitStatus::signal() const {
  if (!lost && WIFSIGNALED(wait_status)) return WTERMSIG(wait_status);
  return std::nullopt;
}

std::optional<ExitStatus> poll_exit(pid_t pid) {
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid || (r < 0 && errno == ECHILD)) forget_child(pid);
  if (r == pid) return ExitStatus{.wait_status = status};
  if (r < 0 && errno == ECHILD) return ExitStatus{.lost = true};
  return std::nullopt;
}

std::optional<ExitStatus> wait_exit(pid_t pid, std::optional<std::chrono::milliseconds> timeout) {
  if (!timeout) {
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid, &status, 0);
    while (r < 0 && errno == EINTR);
    forget_child(pid);
    if (r == pid) return ExitStatus{.wait_status = status};
    return ExitStatus{.lost = true};
  }
  const auto deadline = std::chrono::steady_clock::now() + *timeout;
  for (;;) {
    if (auto ended = poll_exit(pid)) return ended;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool send_signal(pid_t pid, int signal, Target target) {
  if (pid <= 0) return false;
  bool reached = false;
  if (target != Target::Process) reached = ::kill(-pid, signal) == 0;
  if (target != Target::Group) reached = ::kill(pid, signal) == 0 || reached;
  return reached;
}

bool process_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

bool group_exists(pid_t group) { return group > 0 && (::kill(-group, 0) == 0 || errno == EPERM); }

ExitStatus terminate(pid_t pid, std::chrono::milliseconds grace, Termination how) {
  const bool group = how.target != Target::Process;
  std::optional<ExitStatus> ended = poll_exit(pid);
  if (ended && !how.wait_for_group) return *ended;
  send_signal(pid, how.signal, how.target);
  send_signal(pid, SIGCONT, how.target);  // a stopped process acts on the signal only once continued
  const auto deadline = std::chrono::steady_clock::now() + grace;
  bool group_gone = false;
  for (;;) {
    if (!ended) ended = poll_exit(pid);
    group_gone = group && ended && !group_exists(pid);
    if (ended && (!how.wait_for_group || group_gone)) break;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What the process left in its group; while the group has members the kernel keeps its id from reuse.
  if (group && !group_gone) ::kill(-pid, SIGKILL);
  if (ended) return *ended;
  ::kill(pid, SIGKILL);
  return wait_exit(pid, std::chrono::seconds(10)).value_or(ExitStatus{.wait_status = SIGKILL});
}

bool become_child_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<pid_t> adopted_children() {
  std::lock_guard lock(spawned_mutex);
  std::vector<pid_t> adopted = children_of(::getpid());
  std::erase_if(adopted, [](pid_t child) { return spawned_children.contains(child); });
  return adopted;
}

void reap_adopted_children() {
  for (pid_t orphan : adopted_children()) {
    int status = 0;
    while (::waitpid(orphan, &status, WNOHANG) < 0 && errno == EINTR) {
    }
  }
}

size_t kill_process_trees(const std::vector<pid_t>& roots) {
  // Each process is stopped before its children are listed, so none forks past the walk; the
  // walk is bounded by the kernel's pid limit, as every pid is visited once.
  std::set<pid_t> seen;
  std::vector<pid_t> pending = roots;
  while (!pending.empty()) {
    const pid_t pid = pending.back();
    pending.pop_back();
    if (pid <= 1 || !seen.insert(pid).second) continue;
    if (::kill(pid, SIGSTOP) != 0) continue;
    for (pid_t child : children_of(pid)) pending.push_back(child);
  }
  for (pid_t pid : seen) {
    ::kill(pid, SIGKILL);
    ::kill(pid, SIGCONT);
  }
  return seen.size();
}

}  // namespace vigil::os
