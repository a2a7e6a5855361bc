#include "jobs/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace vigil::jobs {

namespace {

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

Result<pid_t> spawn_child(const ChildSpec& spec) {
  if (spec.argv.empty()) return fail(Error::invalid_argument("no command to start"));
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (spec.stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, spec.stdin_fd, 0);
  else posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (spec.stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, spec.stdout_fd, 1);
  if (spec.stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, spec.stderr_fd, 2);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  // The child starts with no signal blocked and SIGPIPE, SIGTERM, SIGINT at their defaults, whatever
  // the supervisor's threads set for themselves.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, flags);

  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const bool search = spec.argv[0].find('/') == std::string::npos;
  const int rc = search ? posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data())
                        : posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail(Error::invalid_argument(fmt::format("cannot start {}: {}", spec.argv[0], std::strerror(rc))));
  return pid;
}

std::optional<int> poll_child(pid_t pid) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return exit_status(status);
  if (r < 0 && errno == ECHILD) return 1;  // reaped elsewhere: it has ended
  return std::nullopt;
}

std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto code = poll_child(pid)) return code;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int terminate_child(pid_t pid, std::chrono::milliseconds grace) {
  if (auto code = poll_child(pid)) return *code;
  // The group first (what the command started), the process itself in case it left the group.
  ::kill(-pid, SIGTERM);
  ::kill(pid, SIGTERM);
  if (auto code = wait_child(pid, grace)) {
    ::kill(-pid, SIGKILL);  // what it left behind
    return *code;
  }
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  return wait_child(pid, std::chrono::seconds(10)).value_or(128 + SIGKILL);
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

}  // namespace vigil::jobs
