#include "common/os.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace vigil::os {

namespace {

// SIGPIPE blocked on the calling thread for the object's life. A SIGPIPE that a write raised while
// blocked is pending on this thread: it is consumed before the mask is restored, unless one was
// already pending before (that one is not ours to take).
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &set, &saved_);
    sigset_t pending;
    already_pending_ = ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  }
  ~SigpipeBlocked() {
    if (sigismember(&saved_, SIGPIPE)) return;  // it was blocked before: nothing to restore
    sigset_t pending;
    if (!already_pending_ && ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGPIPE);
      const timespec now{0, 0};
      while (::sigtimedwait(&set, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t saved_;
  bool already_pending_ = false;
};

}  // namespace

void ignore_sigpipe_in_this_process() { ::signal(SIGPIPE, SIG_IGN); }

void name_this_thread(const char* name) {
  char truncated[16] = {};  // the kernel's limit, with the terminating zero
  for (size_t i = 0; i + 1 < sizeof truncated && name[i] != '\0'; ++i) truncated[i] = name[i];
#if defined(__APPLE__)
  ::pthread_setname_np(truncated);
#else
  ::pthread_setname_np(::pthread_self(), truncated);
#endif
}

size_t open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur == RLIM_INFINITY) return size_t(1) << 20;
  return size_t(limit.rlim_cur);
}

void block_sigpipe_on_this_thread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void UniqueFd::reset(int fd) {
  // Not retried on EINTR: Linux has closed the fd whatever close() returns.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return fail(Error{.code = ErrorCode::Io, .message = fmt::format("cannot create a pipe: {}", std::strerror(errno))});
  Pipe out{move_high(fds[0]), move_high(fds[1])};
  if (!out.read || !out.write)
    return fail(Error{.code = ErrorCode::Io, .message = fmt::format("cannot create a pipe: {}", std::strerror(errno))});
  return out;
}

UniqueFd move_high(int fd) {
  if (fd < 0) return UniqueFd();
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return UniqueFd(high);
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

namespace {

int poll_timeout_ms(Deadline deadline) {
  if (!deadline) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
  return int(std::clamp<long long>(left.count(), 0, 1 << 30));
}

bool passed(Deadline deadline) { return deadline && std::chrono::steady_clock::now() >= *deadline; }

}  // namespace

int poll(std::span<pollfd> fds, Deadline deadline) {
  const int r = ::poll(fds.data(), nfds_t(fds.size()), poll_timeout_ms(deadline));
  return r < 0 && errno == EINTR ? 0 : r;
}

int poll(std::span<pollfd> fds, std::chrono::milliseconds timeout) {
  return poll(fds, timeout.count() < 0 ? Deadline() : std::chrono::steady_clock::now() + timeout);
}

IoOutcome read_some(int fd, std::span<char> into, Deadline deadline) {
  for (;;) {
    const ssize_t n = ::read(fd, into.data(), into.size());
    if (n >= 0) return {size_t(n), 0};
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !deadline) return {0, errno};
    if (passed(deadline)) return {0, ETIMEDOUT};
    pollfd p{fd, POLLIN, 0};
    if (poll(std::span(&p, 1), deadline) < 0) return {0, errno};
  }
}

IoOutcome read_at(int fd, std::span<char> into, uint64_t offset) {
  IoOutcome out;
  while (out.bytes < into.size()) {
    const ssize_t n = ::pread(fd, into.data() + out.bytes, into.size() - out.bytes, off_t(offset + out.bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.error = errno;
    if (n <= 0) break;
    out.bytes += size_t(n);
  }
  return out;
}

IoOutcome write_some(int fd, std::string_view bytes) {
  const int saved_errno = errno;
  SigpipeBlocked blocked;
  IoOutcome out;
  for (;;) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.error = errno;
    else out.bytes = size_t(n);
    break;
  }
  errno = saved_errno;
  return out;
}

IoOutcome write_all(int fd, std::string_view bytes, Deadline deadline) {
  iovec part{const_cast<char*>(bytes.data()), bytes.size()};
  return write_all(fd, std::span(&part, 1), deadline);
}

IoOutcome write_all(int fd, std::span<iovec> parts, Deadline deadline) {
  const int saved_errno = errno;
  SigpipeBlocked blocked;
  IoOutcome out;
  while (!parts.empty() && parts.front().iov_len == 0) parts = parts.subspan(1);
  while (!parts.empty()) {
    const ssize_t n = ::writev(fd, parts.data(), int(std::min<size_t>(parts.size(), IOV_MAX)));
    if (n > 0) {
      out.bytes += size_t(n);
      size_t done = size_t(n);
      while (!parts.empty() && done >= parts.front().iov_len) {
        done -= parts.front().iov_len;
        parts = parts.subspan(1);
      }
      if (done > 0) {
        parts.front().iov_base = static_cast<char*>(parts.front().iov_base) + done;
        parts.front().iov_len -= done;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (passed(deadline)) {
        out.error = ETIMEDOUT;
        break;
      }
      pollfd p{fd, POLLOUT, 0};
      if (poll(std::span(&p, 1), deadline) < 0) {
        out.error = errno;
        break;
      }
      continue;  // ready, timed out (checked above on the next turn), or the reader gone (EPIPE next)
    }
    out.error = n < 0 ? errno : EIO;  // EPIPE when the reader is gone
    break;
  }
  errno = saved_errno;
  return out;
}

}  // namespace vigil::os
