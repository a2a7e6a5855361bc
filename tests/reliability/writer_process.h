// A crash_writer child process (fork + exec): started with its progress pipe, followed step by
// step, killed with SIGKILL, reaped.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil::torture {

// Where the build put the helper (tests/reliability/CMakeLists.txt defines it).
inline const char* crash_writer_path() { return VIGIL_CRASH_WRITER; }

class WriterProcess {
 public:
  // Starts crash_writer with `args` (without the program name and --progress-fd, which is added).
  explicit WriterProcess(const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    // Everything exec needs is built before fork: the child only calls async-signal-safe functions.
    std::vector<std::string> full{crash_writer_path()};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"--progress-fd", std::to_string(kChildProgressFd)});
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      // dup2 leaves the new descriptor without O_CLOEXEC, so only it survives exec (when the pipe
      // already is that descriptor, dup2 does nothing and the flag is cleared by hand).
      if (fds[1] == kChildProgressFd) {
        if (::fcntl(fds[1], F_SETFD, 0) != 0) ::_exit(127);
      } else if (::dup2(fds[1], kChildProgressFd) < 0) {
        ::_exit(127);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    progress_fd_ = fds[0];
    if (pid_ < 0) {
      ::close(progress_fd_);
      progress_fd_ = -1;
    }
  }
  ~WriterProcess() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      reap();
    }
    if (progress_fd_ >= 0) ::close(progress_fd_);
  }
  WriterProcess(const WriterProcess&) = delete;
  WriterProcess& operator=(const WriterProcess&) = delete;

  bool started() const { return pid_ > 0; }

  struct Progress {
    int64_t step;
    bool publishing;  // false: the step began; true: its records are written, it is being published
  };
  // The next progress line of the child; nullopt when it closed its end (it exited or was killed)
  // or nothing came within `timeout`.
  std::optional<Progress> next_progress(std::chrono::milliseconds timeout) {
    while (true) {
      if (auto newline = pending_.find('\n'); newline != std::string::npos) {
        const bool publishing = pending_[0] == 'p';
        const int64_t step = std::atoll(pending_.substr(publishing ? 1 : 0, newline).c_str());
        pending_.erase(0, newline + 1);
        return Progress{step, publishing};
      }
      if (progress_fd_ < 0) return std::nullopt;
      pollfd p{progress_fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, int(timeout.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return std::nullopt;
      char buffer[256];
      const ssize_t n = ::read(progress_fd_, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(progress_fd_);
        progress_fd_ = -1;
        continue;  // report what is still pending, then nullopt
      }
      pending_.append(buffer, size_t(n));
    }
  }

  void kill() {
    if (pid_ > 0 && !status_) ::kill(pid_, SIGKILL);
  }

  // Waits for the child to end; its wait status.
  int reap() {
    if (status_) return *status_;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
    return status;
  }

  bool killed_by_us() { return WIFSIGNALED(reap()) && WTERMSIG(reap()) == SIGKILL; }
  bool exited_cleanly() { return WIFEXITED(reap()) && WEXITSTATUS(reap()) == 0; }
  std::string describe_end() {
    const int s = reap();
    if (WIFEXITED(s)) return "exit status " + std::to_string(WEXITSTATUS(s));
    if (WIFSIGNALED(s)) return "signal " + std::to_string(WTERMSIG(s));
    return "wait status " + std::to_string(s);
  }

 private:
  static constexpr int kChildProgressFd = 3;
  pid_t pid_ = -1;
  int progress_fd_ = -1;
  std::string pending_;
  std::optional<int> status_;
};

}  // namespace vigil::torture
