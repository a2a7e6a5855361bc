// The operating-system layer: what Vigil asks of POSIX, in one place, as LevelDB keeps its POSIX calls
// behind Env. This file: the SIGPIPE policy, owned fds and the reads, writes and waits on them, with
// EINTR handled here and nowhere else. Processes (spawn, wait, terminate): common/process.h.
//
// SIGPIPE policy (docs/reliability.md): no Vigil process is ever killed by SIGPIPE. A write to a pipe
// or socket whose reader is gone is an error of that write (EPIPE), reported to whoever wrote.
//   * Processes Vigil owns (the `vigil` command, its isolated evaluator children) ignore SIGPIPE for
//     the whole process: ignore_sigpipe_in_this_process() first thing in main.
//   * In processes Vigil does not own (the Python module, a C++ training loop with the libtorch hook),
//     the process's disposition is the host's; every thread Vigil starts blocks SIGPIPE on itself
//     (block_sigpipe_on_this_thread()), and write_all() blocks it around each write whatever thread
//     calls it, consuming the signal its own write raised.
//   * Children Vigil starts (common/process.h) get SIGPIPE, as every signal, back at its default: an
//     ignored disposition would otherwise survive exec into the user's programs.
#pragma once

#include <poll.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace vigil::os {

void ignore_sigpipe_in_this_process();
void block_sigpipe_on_this_thread();

// Names the calling thread (at most 15 characters kept), as ps -L, top -H, gdb and
// /proc/<pid>/task/*/comm show it. The threads Vigil starts inside a training process are named
// "vigil-..." so that one alive at the process's end can be told apart from the framework's.
void name_this_thread(const char* name);

// The process's soft limit on open descriptors (RLIMIT_NOFILE); 1024 when it cannot be read.
size_t open_file_limit();

using Deadline = std::optional<std::chrono::steady_clock::time_point>;  // nullopt: none

// An fd this object owns: closed when it is destroyed or reset.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Both ends close-on-exec and at fd 10 or above (move_high).
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
[[nodiscard]] Result<Pipe> make_pipe();

// `fd` moved to 10 or above, close-on-exec (the original is closed): a child's fd mapping onto 0..3
// (common/process.h) is then a real dup2, which clears close-on-exec, never a no-op. -1 stays -1.
UniqueFd move_high(int fd);
void set_nonblocking(int fd);

// What one read or write did. `bytes`: how many moved before the error (0 with no error: the end of
// the input). `error`: 0; EAGAIN when a non-blocking fd has no data or no room now; ETIMEDOUT when
// the deadline passed; EPIPE when a writer's reader is gone; or the errno.
struct IoOutcome {
  size_t bytes = 0;
  int error = 0;
  bool ok() const { return error == 0; }
  bool would_block() const { return error == EAGAIN || error == EWOULDBLOCK; }
};

// One read(2) through EINTR. With a deadline, a non-blocking fd with nothing to read is waited for
// until then (ETIMEDOUT after); without one, its EAGAIN is returned (the caller polls).
IoOutcome read_some(int fd, std::span<char> into, Deadline deadline = std::nullopt);
// pread(2) until `into` is full or the file ends (`bytes` says how far it got), through EINTR.
IoOutcome read_at(int fd, std::span<char> into, uint64_t offset);

// One write(2) through EINTR, SIGPIPE kept from the process; EAGAIN when a non-blocking fd is full.
IoOutcome write_some(int fd, std::string_view bytes);
// Writes all of `bytes` to `fd` (a pipe, socket, terminal or file), through EINTR and partial writes.
// A non-blocking fd is waited for with poll() until `deadline` (none: for ever). SIGPIPE never
// reaches the process from these writes.
IoOutcome write_all(int fd, std::string_view bytes, Deadline deadline = std::nullopt);
// The same for parts written in order with writev(2); `parts` is consumed (left at what was not written).
IoOutcome write_all(int fd, std::span<iovec> parts, Deadline deadline = std::nullopt);

// poll(2) until one of `fds` is ready or `deadline` passes: the number ready, 0 when none (the time
// ran out, or a signal came: the caller looks again), -1 with errno on another error.
int poll(std::span<pollfd> fds, Deadline deadline);
// The same with a timeout (negative: none), as a deadline from now.
int poll(std::span<pollfd> fds, std::chrono::milliseconds timeout);

}  // namespace vigil::os
