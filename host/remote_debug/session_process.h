// A remote-debug session's process: started in its own session and process group (setsid) on a
// pseudo-terminal or on pipes, hung up as a group when the session ends.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/os.h"
#include "remote_debug/control_protocol.h"

namespace vigil::remote_debug {

struct SessionCommand {
  std::vector<std::string> argv;  // argv[0] is the program's path (execve: no PATH search)
  std::vector<std::string> env;   // "KEY=VALUE", the whole environment
  std::filesystem::path cwd;      // empty: this process's working directory
  bool pty = true;                // a pseudo-terminal as stdin, stdout, stderr and controlling terminal
  WindowSize window{24, 80};      // the pty's initial size
};

// Owns the child and its fds. Destroying a process that still runs hangs it up (hang_up).
class SessionProcess {
 public:
  // Starts the program (os::spawn). Returns once the program runs: a failed chdir or execve is an error here
  // (its message is for the client: "cannot run /bin/x: No such file or directory"). Every fd of
  // this process other than the session's own is closed in the child.
  [[nodiscard]] static Result<SessionProcess> spawn(const SessionCommand& command);
  SessionProcess(SessionProcess&& other) noexcept;
  SessionProcess& operator=(SessionProcess&&) = delete;
  SessionProcess(const SessionProcess&) = delete;
  ~SessionProcess();

  pid_t pid() const { return pid_; }
  bool pty() const { return pty_; }
  // Non-blocking: output (pty master, or stdout+stderr's pipe) and input (the master, or stdin's
  // pipe); -1 once closed (on a pty, closing the output closes the input).
  int output_fd() const { return output_.get(); }
  int input_fd() const { return pty_ ? output_.get() : input_.get(); }
  // Readable once the process has exited (a pidfd); -1 where the kernel has none: poll exited().
  int exit_fd() const { return pidfd_.get(); }

  // The exit status once the process has exited (reaped here): its code, or 128 + the signal.
  [[nodiscard]] std::optional<int> exited();
  // The end of the client's input: stdin is closed (pipes) or the terminal's EOF character typed.
  void end_input();
  void set_window_size(WindowSize size);
  // No more reading of output: the fd is closed (the process may still run).
  void close_output();
  // SIGHUP (and SIGCONT, for stopped members) to the process group; SIGKILL to it once `grace` has
  // passed with members left. Returns the exit status once the process is reaped.
  int hang_up(std::chrono::milliseconds grace);
  // SIGHUP to what is left of the group after the process itself exited.
  void hang_up_leftovers();

 private:
  SessionProcess() = default;
  pid_t pid_ = -1;
  bool pty_ = false;
  os::UniqueFd pidfd_;
  os::UniqueFd output_;
  os::UniqueFd input_;  // pipes only: a pty's input is its output's fd
  std::optional<int> status_;
};

}  // namespace vigil::remote_debug
