// host/common/os.h: owned fds, and reads, writes and waits through EINTR, partial writes and deadlines.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/os.h"

namespace vigil {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

std::atomic<int> g_interruptions{0};
void count_interruption(int) { ++g_interruptions; }

// SIGUSR1 handled without SA_RESTART for the test: a blocking call it interrupts fails with EINTR.
class Interrupted : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction action {};
    action.sa_handler = count_interruption;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ASSERT_EQ(::sigaction(SIGUSR1, &action, &saved_), 0);
    g_interruptions = 0;
  }
  void TearDown() override { ::sigaction(SIGUSR1, &saved_, nullptr); }
  // SIGUSR1 to `thread` every 10 ms until `done`.
  std::thread interrupter(pthread_t thread, std::atomic<bool>& done) {
    return std::thread([thread, &done] {
      while (!done) {
        ::pthread_kill(thread, SIGUSR1);
        std::this_thread::sleep_for(10ms);
      }
    });
  }
  struct sigaction saved_ {};
};

TEST(UniqueFd, ClosesItsFdOnResetMoveAndDestruction) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value()) << pipe.error().message;
  const int r = pipe->read.get(), w = pipe->write.get();
  EXPECT_GE(r, 10);  // above the standard fds and a child's fd 3
  EXPECT_GE(w, 10);
  EXPECT_TRUE(::fcntl(r, F_GETFD) & FD_CLOEXEC);
  {
    os::UniqueFd moved = std::move(pipe->read);
    EXPECT_FALSE(pipe->read);
    EXPECT_TRUE(is_open(r));
  }
  EXPECT_FALSE(is_open(r));
  pipe->write.reset();
  EXPECT_FALSE(is_open(w));
  const int released = os::make_pipe()->write.release();
  EXPECT_TRUE(is_open(released));
  ::close(released);
}

TEST_F(Interrupted, ABlockingReadGoesOnThroughEintr) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value());
  std::atomic<bool> done{false};
  auto signals = interrupter(::pthread_self(), done);
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);  // several interruptions first
    (void)os::write_all(pipe->write.get(), "late");
  });
  char buffer[16];
  const os::IoOutcome got = os::read_some(pipe->read.get(), buffer);
  done = true;
  signals.join();
  writer.join();
  EXPECT_GT(g_interruptions.load(), 0);
  EXPECT_TRUE(got.ok()) << std::strerror(got.error);
  EXPECT_EQ(std::string(buffer, got.bytes), "late");
}

TEST_F(Interrupted, WriteAllGoesOnThroughEintrAndPartialWrites) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value());
  const std::string message(1 << 20, 'x');  // 16 times a pipe's buffer: many partial writes
  std::atomic<bool> done{false};
  auto signals = interrupter(::pthread_self(), done);
  std::string received;
  std::thread reader([&] {
    char buffer[4096];
    while (received.size() < message.size()) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));  // slower than the writer: it blocks
      const os::IoOutcome got = os::read_some(pipe->read.get(), buffer);
      if (got.bytes == 0) break;
      received.append(buffer, got.bytes);
    }
  });
  const os::IoOutcome wrote = os::write_all(pipe->write.get(), message);
  done = true;
  signals.join();
  reader.join();
  EXPECT_GT(g_interruptions.load(), 0);
  EXPECT_TRUE(wrote.ok()) << std::strerror(wrote.error);
  EXPECT_EQ(wrote.bytes, message.size());
  EXPECT_EQ(received, message);
}

TEST_F(Interrupted, PollReportsNothingReadyWhenASignalComes) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value());
  std::atomic<bool> done{false};
  auto signals = interrupter(::pthread_self(), done);
  pollfd p{pipe->read.get(), POLLIN, 0};
  const auto start = Clock::now();
  const int ready = os::poll(std::span(&p, 1), std::chrono::milliseconds(5000));
  done = true;
  signals.join();
  EXPECT_EQ(ready, 0);
  EXPECT_LT(Clock::now() - start, 2s);  // the signal ended the wait, not the timeout
}

TEST(ReadSome, ANonBlockingReadWaitsUntilItsDeadline) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value());
  os::set_nonblocking(pipe->read.get());
  char buffer[16];
  EXPECT_TRUE(os::read_some(pipe->read.get(), buffer).would_block());  // no deadline: the caller polls

  const auto start = Clock::now();
  const os::IoOutcome late = os::read_some(pipe->read.get(), buffer, start + 50ms);
  const auto waited = Clock::now() - start;
  EXPECT_EQ(late.error, ETIMEDOUT);
  EXPECT_EQ(late.bytes, 0u);
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 1s);

  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    (void)os::write_all(pipe->write.get(), "in time");
  });
  const os::IoOutcome in_time = os::read_some(pipe->read.get(), buffer, Clock::now() + 5s);
  writer.join();
  EXPECT_TRUE(in_time.ok());
  EXPECT_EQ(std::string(buffer, in_time.bytes), "in time");

  pipe->write.reset();
  const os::IoOutcome end = os::read_some(pipe->read.get(), buffer, Clock::now() + 5s);
  EXPECT_TRUE(end.ok());
  EXPECT_EQ(end.bytes, 0u);  // the end of the input
}

TEST(WriteAll, ANonBlockingWriteToAFullPipeEndsAtItsDeadline) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value());
  os::set_nonblocking(pipe->write.get());
  const std::string message(1 << 20, 'x');
  const auto start = Clock::now();
  const os::IoOutcome wrote = os::write_all(pipe->write.get(), message, start + 50ms);
  EXPECT_EQ(wrote.error, ETIMEDOUT);
  EXPECT_GT(wrote.bytes, 0u);  // the pipe's buffer took its share
  EXPECT_LT(wrote.bytes, message.size());
  EXPECT_GE(Clock::now() - start, 50ms);
  EXPECT_TRUE(os::write_some(pipe->write.get(), "more").would_block());
}

TEST(WriteAll, PartsAreWrittenInOrder) {
  auto pipe = os::make_pipe();
  ASSERT_TRUE(pipe.has_value());
  std::string a = "first,", b, c = "third";
  iovec parts[3] = {{a.data(), a.size()}, {b.data(), 0}, {c.data(), c.size()}};
  const os::IoOutcome wrote = os::write_all(pipe->write.get(), std::span(parts));
  EXPECT_TRUE(wrote.ok());
  EXPECT_EQ(wrote.bytes, a.size() + c.size());
  pipe->write.reset();
  char buffer[64];
  const os::IoOutcome got = os::read_some(pipe->read.get(), buffer);
  EXPECT_EQ(std::string(buffer, got.bytes), "first,third");
}

TEST(ReadAt, ReadsFromTheOffsetAndSaysWhereTheFileEnded) {
  char name[] = "/tmp/vigil-os-test-XXXXXX";
  const os::UniqueFd fd(::mkstemp(name));
  ASSERT_TRUE(fd);
  ::unlink(name);
  ASSERT_TRUE(os::write_all(fd.get(), "0123456789").ok());
  char buffer[4];
  const os::IoOutcome middle = os::read_at(fd.get(), buffer, 3);
  EXPECT_TRUE(middle.ok());
  EXPECT_EQ(std::string(buffer, middle.bytes), "3456");
  const os::IoOutcome tail = os::read_at(fd.get(), buffer, 8);
  EXPECT_TRUE(tail.ok());
  EXPECT_EQ(std::string(buffer, tail.bytes), "89");  // short: the file ended
}

}  // namespace
}  // namespace vigil
