#include "remote_debug/session_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "common/os.h"
#include "common/process.h"

namespace vigil::remote_debug {

Result<SessionProcess> SessionProcess::spawn(const SessionCommand& command) {
  if (command.argv.empty() || command.argv[0].empty())
    return fail(Error::invalid_argument("the session has no program to run"));
  auto unusable = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  for (const auto& a : command.argv)
    if (unusable(a)) return fail(Error::invalid_argument("the session's command holds a NUL byte"));
  for (const auto& e : command.env)
    if (unusable(e) || e.find('=') == std::string::npos)
      return fail(Error::invalid_argument("the session's environment holds an entry that is not KEY=VALUE"));

  auto io_error = [](std::string_view what) {
    return Error{.code = ErrorCode::Io,
                 .message = fmt::format("cannot start the session: {}: {}", what, std::strerror(errno))};
  };
  // Every other fd of the server (other sessions, the listening socket, the supervisor's own pipes)
  // is closed in the child.
  os::SpawnOptions options{.argv = command.argv,
                           .search_path = false,
                           .env = command.env,
                           .cwd = command.cwd,
                           .group = os::SpawnOptions::Group::Session,
                           .close_other_fds = true};
  SessionProcess out;
  os::UniqueFd child_in, child_out;  // the pipes' child ends
  if (command.pty) {
    // The master close-on-exec from the start, so a session started at the same moment on another
    // thread never inherits it; the child opens the terminal by name as its controlling terminal.
    os::UniqueFd master = os::move_high(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!master) return fail(io_error("posix_openpt"));
    char slave_name[128];
    if (::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0 ||
        ::ptsname_r(master.get(), slave_name, sizeof slave_name) != 0)
      return fail(io_error("pseudo-terminal setup"));
    winsize ws{};
    ws.ws_row = command.window.rows ? command.window.rows : 24;
    ws.ws_col = command.window.cols ? command.window.cols : 80;
    ::ioctl(master.get(), TIOCSWINSZ, &ws);
    options.controlling_terminal = slave_name;
    out.pty_ = true;
    out.output_ = std::move(master);
  } else {
    auto in = os::make_pipe();
    if (!in) return fail(io_error("pipe"));
    auto output = os::make_pipe();
    if (!output) return fail(io_error("pipe"));
    child_in = std::move(in->read);
    out.input_ = std::move(in->write);
    out.output_ = std::move(output->read);
    child_out = std::move(output->write);
    options.fds = {{.child = 0, .parent = child_in.get()},
                   {.child = 1, .parent = child_out.get()},
                   {.child = 2, .parent = child_out.get()}};
  }
  auto pid = os::spawn(options);
  if (!pid) return fail(pid.error());
  out.pid_ = *pid;
  // The raw system call: glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
  out.pidfd_ = os::move_high(int(::syscall(SYS_pidfd_open, out.pid_, 0)));
  os::set_nonblocking(out.output_fd());
  os::set_nonblocking(out.input_fd());
  return out;
}

SessionProcess::SessionProcess(SessionProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pty_(other.pty_),
      pidfd_(std::move(other.pidfd_)),
      output_(std::move(other.output_)),
      input_(std::move(other.input_)),
      status_(other.status_) {}

SessionProcess::~SessionProcess() {
  if (pid_ > 0 && !status_) hang_up(std::chrono::milliseconds(2000));
}

std::optional<int> SessionProcess::exited() {
  if (status_ || pid_ <= 0) return status_;
  if (auto ended = os::poll_exit(pid_)) status_ = ended->code();
  return status_;
}

void SessionProcess::end_input() {
  if (pty()) {
    if (!output_) return;
    termios t{};
    const char eof = ::tcgetattr(output_.get(), &t) == 0 && t.c_cc[VEOF] != 0 ? char(t.c_cc[VEOF]) : char(4);
    (void)os::write_some(output_.get(), std::string_view(&eof, 1));
  } else {
    input_.reset();
  }
}

void SessionProcess::set_window_size(WindowSize size) {
  if (!pty() || !output_ || size.rows == 0 || size.cols == 0) return;
  winsize ws{};
  ws.ws_row = size.rows;
  ws.ws_col = size.cols;
  ::ioctl(output_.get(), TIOCSWINSZ, &ws);
}

void SessionProcess::close_output() { output_.reset(); }

void SessionProcess::hang_up_leftovers() {
  os::send_signal(pid_, SIGHUP, os::Target::Group);
  os::send_signal(pid_, SIGCONT, os::Target::Group);
}

int SessionProcess::hang_up(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return status_.value_or(255);
  // The group id is the process's pid (setsid). The kernel keeps a pid from reuse while a group of
  // that id has members, so the signals reach only this session's processes even after the reap.
  const os::ExitStatus ended =
      os::terminate(pid_, grace, {.signal = SIGHUP, .target = os::Target::Group, .wait_for_group = true});
  if (!status_) status_ = ended.code();
  return *status_;
}

}  // namespace vigil::remote_debug
