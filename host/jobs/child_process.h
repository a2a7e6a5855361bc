// Child processes of the training-job supervisor: the hosts' training commands, the rule evaluator,
// notification commands. posix_spawn, because the supervisor has threads (a fork would copy locks
// held by them).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace vigil::jobs {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // KEY=VALUE, the whole environment
  std::filesystem::path cwd;      // empty: the supervisor's
  int stdin_fd = -1;              // -1: /dev/null
  int stdout_fd = -1;             // -1: inherited
  int stderr_fd = -1;             // -1: inherited
  bool own_process_group = true;  // so a stop signals everything the command started
};

[[nodiscard]] Result<pid_t> spawn_child(const ChildSpec& spec);

// waitpid without blocking: the exit status (128 + signal when killed by one), or nullopt while it runs.
std::optional<int> poll_child(pid_t pid);
// Waits up to `timeout` for the child; nullopt when it still runs.
std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds timeout);
// SIGTERM to the child's process group, then SIGKILL after `grace`; returns its exit status.
int terminate_child(pid_t pid, std::chrono::milliseconds grace);

// This process's environment as KEY=VALUE strings.
std::vector<std::string> current_environment();
// `env` with KEY set to VALUE (replacing an earlier KEY).
void set_env(std::vector<std::string>& env, std::string_view key, std::string_view value);

}  // namespace vigil::jobs
