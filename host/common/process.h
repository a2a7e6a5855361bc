// The operating-system layer's processes: one way to start a child (posix_spawn), wait for it and
// stop it. common/os.h has the fds and I/O.
//
// posix_spawn and never fork: the processes that start children have threads (a fork copies locks
// other threads hold), and posix_spawn does all a child needs here before exec (fd mapping, a new
// process group or session, a controlling terminal, the working directory, signal defaults).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::os {

// One fd of the child: a copy of the parent's `parent` fd (dup2, so not close-on-exec), or, with
// parent -1, `path` opened with `open_flags`.
struct ChildFd {
  int child = 0;
  int parent = -1;
  std::filesystem::path path = "/dev/null";
  int open_flags = 0;  // O_RDONLY
};

struct SpawnOptions {
  std::vector<std::string> argv;
  std::filesystem::path program;                 // what runs; empty: argv[0], looked up in PATH when it
  bool search_path = true;                       // has no '/' and this holds
  std::optional<std::vector<std::string>> env;   // KEY=VALUE, the whole environment; nullopt: this process's
  std::filesystem::path cwd;                     // empty: this process's
  std::vector<ChildFd> fds;                      // in order; fds not named keep their close-on-exec flag
  enum class Group { Inherited, Own, Session } group = Group::Inherited;  // Own: setpgid; Session: setsid
  // Session only: a terminal opened after setsid as the child's controlling terminal and fds 0, 1, 2.
  std::filesystem::path controlling_terminal;
  bool close_other_fds = false;   // every fd above the mapped ones closed, close-on-exec or not
  std::vector<int> blocked_signals;  // the child's signal mask (otherwise empty)
};

// Starts the program. The child starts with every signal at its default disposition, whatever this
// process ignores or handles (an ignored SIGPIPE would otherwise survive exec), and only
// `blocked_signals` blocked. A failed exec or chdir is an error here: "cannot run <program>: <why>" or
// "cannot change to the working directory <cwd>: <why>".
[[nodiscard]] Result<pid_t> spawn(const SpawnOptions& options);

// This process's environment as KEY=VALUE strings.
std::vector<std::string> current_environment();
// `env` with KEY set to VALUE (replacing an earlier KEY).
void set_env(std::vector<std::string>& env, std::string_view key, std::string_view value);

// How a child ended, as waitpid(2) reported it.
struct ExitStatus {
  int wait_status = 0;
  bool lost = false;  // reaped elsewhere: how it ended is not known
  // Its exit code, or 128 + the signal that killed it; 255 when not known.
  int code() const;
  std::optional<int> signal() const;  // the signal that killed it
};

// waitpid without blocking: how the child ended, or nullopt while it runs.
std::optional<ExitStatus> poll_exit(pid_t pid);
// Waits up to `timeout` for the child (none: for ever); nullopt when it still runs.
std::optional<ExitStatus> wait_exit(pid_t pid, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// Sends `signal` to the process or its process group (its pid is the group's id), or both. False when
// neither exists any more.
enum class Target { Process, Group, ProcessAndGroup };
bool send_signal(pid_t pid, int signal, Target target);
// Whether a process of that pid exists (it may be another user's).
bool process_exists(pid_t pid);
// Whether the process group of that id still has members.
bool group_exists(pid_t group);

struct Termination {
  int signal = SIGTERM;
  Target target = Target::ProcessAndGroup;
  // The grace lasts until the group has no members left, not only until the process has ended.
  bool wait_for_group = false;
};
// Asks the child to stop (`how.signal`, then SIGCONT for a stopped one), SIGKILLs what is left after
// `grace`, and reaps it. What the child left in its group is SIGKILLed too when the target has it.
ExitStatus terminate(pid_t pid, std::chrono::milliseconds grace, Termination how = {});

// Makes this process the reaper of its descendants' orphans (PR_SET_CHILD_SUBREAPER): a process that
// leaves its parent (a double fork, setsid and exit) is re-parented here, not to init, so it can be
// found and ended. False where the kernel refuses.
bool become_child_subreaper();
// This process's children that spawn() did not start: orphans it adopted as a subreaper.
std::vector<pid_t> adopted_children();
// Reaps the adopted orphans that have exited (a subreaper must, or they stay zombies).
void reap_adopted_children();
// SIGKILLs each of `roots` and all their descendants (each stopped first, so none forks on while the
// tree is walked). Returns how many processes were signalled. Reaping is the parent's.
size_t kill_process_trees(const std::vector<pid_t>& roots);

}  // namespace vigil::os
