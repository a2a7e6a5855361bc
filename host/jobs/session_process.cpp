#include "jobs/session_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>
#include <thread>

#include <fmt/format.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace vigil::jobs {

namespace {

// What failed in the child before exec, sent back on a close-on-exec pipe.
struct ChildFailure {
  int stage;  // 0: chdir, 1: execve, 2: terminal setup
  int err;
};

// fds at 10 and above, close-on-exec: the child's dup2 onto 0..2 never collides with them.
int move_high(int fd) {
  if (fd < 0) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return high;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int wait_status_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// In the child, between fork and exec: only async-signal-safe calls. Never returns.
[[noreturn]] void run_child(const SessionCommand& command, char* const* argv, char* const* envp, int stdin_fd,
                            int stdout_fd, int failure_fd, long max_fd) {
  auto die = [&](int stage) {
    ChildFailure failure{stage, errno};
    [[maybe_unused]] ssize_t ignored = ::write(failure_fd, &failure, sizeof failure);
    ::_exit(127);
  };
  // The server's threads block signals and ignore others; the session starts from the defaults.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  if (::setsid() < 0) die(2);
  if (command.pty && ::ioctl(stdin_fd, TIOCSCTTY, 0) != 0) die(2);
  if (::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(stdout_fd, STDOUT_FILENO) < 0 ||
      ::dup2(stdout_fd, STDERR_FILENO) < 0)
    die(2);
  // Every other fd of the server (other sessions, the listening socket, the supervisor's own pipes)
  // is gone at exec; the failure pipe stays usable until then.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    for (long fd = 3; fd < max_fd; ++fd) ::fcntl(int(fd), F_SETFD, FD_CLOEXEC);
  if (!command.cwd.empty() && ::chdir(command.cwd.c_str()) != 0) die(0);
  ::execve(argv[0], argv, envp);
  die(1);
  ::_exit(127);  // die() does not return; this says so to the compiler
}

}  // namespace

Result<SessionProcess> SessionProcess::spawn(const SessionCommand& command) {
  if (command.argv.empty() || command.argv[0].empty())
    return fail(Error::invalid_argument("the session has no program to run"));
  auto unusable = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  for (const auto& a : command.argv)
    if (unusable(a)) return fail(Error::invalid_argument("the session's command holds a NUL byte"));
  for (const auto& e : command.env)
    if (unusable(e) || e.find('=') == std::string::npos)
      return fail(Error::invalid_argument("the session's environment holds an entry that is not KEY=VALUE"));

  // Everything the child needs, made before fork (the child may not allocate).
  std::vector<std::string> argv_storage = command.argv, env_storage = command.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  long max_fd = ::sysconf(_SC_OPEN_MAX);
  if (max_fd <= 0 || max_fd > 65536) max_fd = 65536;

  auto io_error = [](std::string_view what) {
    return Error{.code = ErrorCode::Io,
                 .message = fmt::format("cannot start the session: {}: {}", what, std::strerror(errno))};
  };
  SessionProcess out;
  int child_in = -1, child_out = -1;  // the child's ends
  auto close_child_ends = [&] {
    if (child_out != child_in) close_fd(child_out);
    close_fd(child_in);
    child_out = -1;
  };
  if (command.pty) {
    // posix_openpt rather than forkpty: the master is close-on-exec from the start, so a session
    // started at the same moment on another thread never inherits it.
    int master = move_high(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (master < 0) return fail(io_error("posix_openpt"));
    out.output_fd_ = out.input_fd_ = master;
    char slave_name[128];
    if (::grantpt(master) != 0 || ::unlockpt(master) != 0 || ::ptsname_r(master, slave_name, sizeof slave_name) != 0)
      return fail(io_error("pseudo-terminal setup"));
    child_in = child_out = move_high(::open(slave_name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (child_in < 0) return fail(io_error("opening the pseudo-terminal"));
    winsize ws{};
    ws.ws_row = command.window.rows ? command.window.rows : 24;
    ws.ws_col = command.window.cols ? command.window.cols : 80;
    ::ioctl(master, TIOCSWINSZ, &ws);
  } else {
    int in_pipe[2], out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0) return fail(io_error("pipe"));
    child_in = move_high(in_pipe[0]);
    out.input_fd_ = move_high(in_pipe[1]);
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
      close_child_ends();
      return fail(io_error("pipe"));
    }
    out.output_fd_ = move_high(out_pipe[0]);
    child_out = move_high(out_pipe[1]);
  }
  int failure_pipe[2];
  if (::pipe2(failure_pipe, O_CLOEXEC) != 0) {
    close_child_ends();
    return fail(io_error("pipe"));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    close_child_ends();
    ::close(failure_pipe[0]);
    ::close(failure_pipe[1]);
    return fail(io_error("fork"));
  }
  if (pid == 0) run_child(command, argv.data(), envp.data(), child_in, child_out, failure_pipe[1], max_fd);
  out.pid_ = pid;
  close_child_ends();
  ::close(failure_pipe[1]);
  ChildFailure failure{};
  ssize_t n;
  do n = ::read(failure_pipe[0], &failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  ::close(failure_pipe[0]);
  if (n == ssize_t(sizeof failure)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out.pid_ = -1;
    const char* why = std::strerror(failure.err);
    switch (failure.stage) {
      case 0:
        return fail(Error::invalid_argument(
            fmt::format("cannot change to the working directory {}: {}", command.cwd.string(), why)));
      case 1: return fail(Error::invalid_argument(fmt::format("cannot run {}: {}", command.argv[0], why)));
      default:
        return fail(
            Error{.code = ErrorCode::Io, .message = fmt::format("cannot set up the session's terminal: {}", why)});
    }
  }
  // The raw system call: glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
  out.pidfd_ = int(::syscall(SYS_pidfd_open, pid, 0));
  if (out.pidfd_ >= 0) out.pidfd_ = move_high(out.pidfd_);
  set_nonblocking(out.output_fd_);
  set_nonblocking(out.input_fd_);
  return out;
}

SessionProcess::SessionProcess(SessionProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      output_fd_(std::exchange(other.output_fd_, -1)),
      input_fd_(std::exchange(other.input_fd_, -1)),
      status_(other.status_) {}

SessionProcess::~SessionProcess() {
  if (pid_ > 0 && !status_) hang_up(std::chrono::milliseconds(2000));
  if (input_fd_ != output_fd_) close_fd(input_fd_);
  close_fd(output_fd_);
  input_fd_ = -1;
  close_fd(pidfd_);
}

std::optional<int> SessionProcess::exited() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid_, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid_)
    status_ = wait_status_code(status);
  else if (r < 0 && errno == ECHILD)
    status_ = 255;  // reaped by someone else: the status is lost
  return status_;
}

void SessionProcess::end_input() {
  if (pty()) {
    if (output_fd_ < 0) return;
    termios t{};
    const char eof = ::tcgetattr(output_fd_, &t) == 0 && t.c_cc[VEOF] != 0 ? char(t.c_cc[VEOF]) : char(4);
    [[maybe_unused]] ssize_t ignored = ::write(output_fd_, &eof, 1);
  } else {
    close_fd(input_fd_);
  }
}

void SessionProcess::set_window_size(WindowSize size) {
  if (!pty() || output_fd_ < 0 || size.rows == 0 || size.cols == 0) return;
  winsize ws{};
  ws.ws_row = size.rows;
  ws.ws_col = size.cols;
  ::ioctl(output_fd_, TIOCSWINSZ, &ws);
}

void SessionProcess::close_output() {
  if (pty()) input_fd_ = -1;
  close_fd(output_fd_);
}

void SessionProcess::hang_up_leftovers() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGHUP);
    ::kill(-pid_, SIGCONT);
  }
}

int SessionProcess::hang_up(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return status_.value_or(255);
  // The group id is the process's pid (setsid). The kernel keeps a pid from reuse while a group of
  // that id has members, so the signals reach only this session's processes even after the reap.
  ::kill(-pid_, SIGHUP);
  ::kill(-pid_, SIGCONT);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    const bool leader_gone = exited().has_value();
    if (leader_gone && ::kill(-pid_, 0) != 0 && errno == ESRCH) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid_, SIGKILL);
      if (!leader_gone) {
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        status_ = wait_status_code(status);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return *exited();
}

}  // namespace vigil::jobs
