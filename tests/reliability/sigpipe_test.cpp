// The SIGPIPE policy (common/os.h): a write to a pipe whose reader is gone is EPIPE for that write and
// never kills the process, whatever the process's own disposition (here SIGPIPE's default, as in a
// C++ training loop that embeds the libtorch hook); writes to a reader that stalls end at their
// deadline.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "common/os.h"

namespace vigil {
namespace {

// SIGPIPE at its default (death) for the test, restored after.
class SigpipeAtDefault : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &dfl, &saved_);
    sigset_t pending;
    ASSERT_EQ(::sigpending(&pending), 0);
    ASSERT_FALSE(sigismember(&pending, SIGPIPE));
  }
  void TearDown() override {
    sigset_t pending;
    ::sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "a SIGPIPE was left pending on the thread";
    ::sigaction(SIGPIPE, &saved_, nullptr);
  }
  struct sigaction saved_ {};
};

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  void close_reader() {
    ::close(read);
    read = -1;
  }
};

TEST_F(SigpipeAtDefault, AWriteToAPipeWithoutReaderIsEpipeNotDeath) {
  Pipe p;
  p.close_reader();
  const auto out = os::write_all(p.write, "hello");
  EXPECT_EQ(out.error, EPIPE);
  EXPECT_EQ(out.bytes, 0u);
}

TEST_F(SigpipeAtDefault, AReaderThatLeavesMidwayGivesEpipeAfterWhatItTook) {
  Pipe p;
  const std::string message(1 << 20, 'x');  // far beyond a pipe's buffer (64 KiB)
  std::thread reader([fd = p.read] {
    char buf[4096];
    size_t got = 0;
    while (got < 10000) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      got += size_t(n);
    }
  });
  std::thread closer([&] {
    reader.join();
    p.close_reader();
  });
  const auto out = os::write_all(p.write, message);
  closer.join();
  EXPECT_EQ(out.error, EPIPE);
  EXPECT_GE(out.bytes, 10000u);
  EXPECT_LT(out.bytes, message.size());
}

TEST_F(SigpipeAtDefault, AStalledReaderEndsANonBlockingWriteAtItsDeadline) {
  Pipe p;
  ::fcntl(p.write, F_SETFL, ::fcntl(p.write, F_GETFL) | O_NONBLOCK);
  const std::string message(1 << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  const auto out = os::write_all(p.write, message, start + std::chrono::milliseconds(200));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(out.error, ETIMEDOUT);
  EXPECT_GT(out.bytes, 0u);  // the pipe's buffer took its share
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST_F(SigpipeAtDefault, AWholeMessageReachesASlowReader) {
  Pipe p;
  const std::string message(300000, 'y');
  std::string got;
  std::thread reader([&, fd = p.read] {
    char buf[1000];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  });
  const auto out = os::write_all(p.write, message);
  ::close(p.write);
  p.write = -1;
  reader.join();
  EXPECT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.bytes, message.size());
  EXPECT_EQ(got, message);
}

TEST_F(SigpipeAtDefault, ASigpipeAlreadyPendingIsLeftToItsOwner) {
  // A thread that blocked SIGPIPE and has one pending keeps it: write_all consumes only its own.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &set, &old), 0);
  ASSERT_EQ(::pthread_kill(::pthread_self(), SIGPIPE), 0);
  Pipe p;
  p.close_reader();
  EXPECT_EQ(os::write_all(p.write, "x").error, EPIPE);
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_TRUE(sigismember(&pending, SIGPIPE));
  const timespec zero{0, 0};
  EXPECT_EQ(::sigtimedwait(&set, nullptr, &zero), SIGPIPE);  // taken here, by its owner
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
}  // namespace vigil
