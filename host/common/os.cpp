#include "common/os.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

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

void block_sigpipe_on_this_thread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

WriteOutcome write_all(int fd, std::string_view bytes, std::optional<std::chrono::steady_clock::time_point> deadline) {
  const int saved_errno = errno;
  SigpipeBlocked blocked;
  WriteOutcome out;
  while (out.written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + out.written, bytes.size() - out.written);
    if (n > 0) {
      out.written += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int timeout_ms = -1;
      if (deadline) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          out.error = ETIMEDOUT;
          break;
        }
        timeout_ms = int(std::min<long long>(left.count(), 1 << 30));
      }
      pollfd p{fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, timeout_ms);
      if (r < 0 && errno != EINTR) {
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
