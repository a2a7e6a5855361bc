// host/common/process.h: children started with their fds mapped and signals at their defaults,
// waited for with a timeout, and stopped with a grace before SIGKILL.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "common/os.h"
#include "common/process.h"

namespace vigil {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Runs `script` under /bin/sh with its stdout on a pipe: its exit code and what it wrote.
struct Ran {
  int code = -1;
  std::string output;
};
Ran run_shell(const std::string& script, os::SpawnOptions options = {}) {
  auto pipe = os::make_pipe();
  EXPECT_TRUE(pipe.has_value());
  options.argv = {"/bin/sh", "-c", script};
  options.fds.push_back({.child = 1, .parent = pipe->write.get()});
  auto pid = os::spawn(options);
  EXPECT_TRUE(pid.has_value()) << pid.error().message;
  pipe->write.reset();
  Ran out;
  char buffer[4096];
  for (os::IoOutcome got; (got = os::read_some(pipe->read.get(), buffer)).bytes > 0;) out.output.append(buffer, got.bytes);
  const auto ended = os::wait_exit(*pid, 10s);
  EXPECT_TRUE(ended.has_value());
  if (ended) out.code = ended->code();
  return out;
}

// The mask of /proc/self/status's `field` line (SigIgn, SigBlk) in `status`.
unsigned long long signal_mask(const std::string& status, const std::string& field) {
  const auto at = status.find(field + ":");
  if (at == std::string::npos) return ~0ULL;
  return std::strtoull(status.c_str() + at + field.size() + 1, nullptr, 16);
}
constexpr unsigned long long bit(int signal) { return 1ULL << (signal - 1); }

// How many processes of group `group` still run (zombies not counted: an orphan's reaper is not ours).
int running_members(pid_t group) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    char state = 0;
    pid_t parent = 0, pgid = 0;
    if (fields >> state >> parent >> pgid && pgid == group && state != 'Z') ++count;
  }
  return count;
}

// SIGPIPE ignored in this process for the test, as `vigil` ignores it.
class SigpipeIgnored : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &saved_), 0);
  }
  void TearDown() override { ::sigaction(SIGPIPE, &saved_, nullptr); }
  struct sigaction saved_ {};
};

TEST_F(SigpipeIgnored, AChildStartsWithEverySignalAtItsDefault) {
  // exec: cat's own dispositions are what it inherited (an ignored signal survives exec).
  const Ran ran = run_shell("exec cat /proc/self/status");
  ASSERT_EQ(ran.code, 0);
  EXPECT_EQ(signal_mask(ran.output, "SigIgn") & bit(SIGPIPE), 0u) << ran.output;
  EXPECT_EQ(signal_mask(ran.output, "SigBlk"), 0u);
}

TEST(Spawn, BlockedSignalsAreTheChildsMask) {
  const Ran ran = run_shell("exec cat /proc/self/status", {.blocked_signals = {SIGINT, SIGTERM}});
  ASSERT_EQ(ran.code, 0);
  EXPECT_EQ(signal_mask(ran.output, "SigBlk"), bit(SIGINT) | bit(SIGTERM));
}

TEST(Spawn, ParentFdsAreMappedOntoTheChildsAndStdinCanBeDevNull) {
  auto job = os::make_pipe();
  ASSERT_TRUE(job.has_value());
  ASSERT_TRUE(os::write_all(job->write.get(), "on fd 3").ok());
  job->write.reset();
  // The pipe's fd is close-on-exec: the mapping's dup2 is what the child has.
  const Ran ran = run_shell("cat <&3; cat; echo \" cwd=$(pwd)\"",
                            {.cwd = "/tmp", .fds = {{.child = 0}, {.child = 3, .parent = job->read.get()}}});
  EXPECT_EQ(ran.code, 0);
  EXPECT_EQ(ran.output, "on fd 3 cwd=/tmp\n");
}

TEST(Spawn, OtherFdsAreClosedWhenAsked) {
  const int leaked = ::dup(STDERR_FILENO);  // not close-on-exec
  ASSERT_GE(leaked, 0);
  const std::string probe = "test -e /proc/self/fd/" + std::to_string(leaked) + " && echo open || echo closed";
  EXPECT_EQ(run_shell(probe).output, "open\n");
  EXPECT_EQ(run_shell(probe, {.close_other_fds = true}).output, "closed\n");
  ::close(leaked);
}

TEST(Spawn, TheEnvironmentIsTheGivenOneOrThisProcesss) {
  ::setenv("VIGIL_PROCESS_TEST", "inherited", 1);
  EXPECT_EQ(run_shell("echo $VIGIL_PROCESS_TEST").output, "inherited\n");
  auto env = os::current_environment();
  os::set_env(env, "VIGIL_PROCESS_TEST", "given");
  EXPECT_EQ(run_shell("echo $VIGIL_PROCESS_TEST", {.env = env}).output, "given\n");
  ::unsetenv("VIGIL_PROCESS_TEST");
}

TEST(Spawn, FailuresSayWhatFailed) {
  auto missing = os::spawn({.argv = {"/nonexistent/program"}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message, "cannot run /nonexistent/program: No such file or directory");
  auto not_in_path = os::spawn({.argv = {"vigil-no-such-program"}});
  ASSERT_FALSE(not_in_path.has_value());
  EXPECT_EQ(not_in_path.error().message, "cannot run vigil-no-such-program: No such file or directory");
  auto bad_cwd = os::spawn({.argv = {"/bin/true"}, .cwd = "/nonexistent/folder"});
  ASSERT_FALSE(bad_cwd.has_value());
  EXPECT_EQ(bad_cwd.error().message, "cannot change to the working directory /nonexistent/folder: No such file or directory");
}

TEST(Spawn, ASessionLeaderGetsItsControllingTerminal) {
  os::UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_TRUE(master);
  ASSERT_EQ(::grantpt(master.get()), 0);
  ASSERT_EQ(::unlockpt(master.get()), 0);
  char name[128];
  ASSERT_EQ(::ptsname_r(master.get(), name, sizeof name), 0);
  // `tty` names the terminal, and the shell leads its session (/proc/PID/stat's sixth field: the sid).
  auto pid = os::spawn({.argv = {"/bin/sh", "-c", "tty; test \"$(cut -d' ' -f6 /proc/$$/stat)\" = $$ && echo leader"},
                        .group = os::SpawnOptions::Group::Session,
                        .controlling_terminal = name});
  ASSERT_TRUE(pid.has_value()) << pid.error().message;
  std::string output;
  char buffer[256];
  for (;;) {
    const os::IoOutcome got = os::read_some(master.get(), buffer);  // EIO once the terminal's last user left
    if (got.bytes == 0) break;
    output.append(buffer, got.bytes);
  }
  ASSERT_TRUE(os::wait_exit(*pid, 10s).has_value());
  EXPECT_NE(output.find(name), std::string::npos) << output;
  EXPECT_NE(output.find("leader"), std::string::npos) << output;
}

TEST(WaitExit, ReturnsNothingWhileTheChildRunsAndItsStatusOnceItEnds) {
  auto pid = os::spawn({.argv = {"/bin/sh", "-c", "sleep 0.2; exit 7"}});
  ASSERT_TRUE(pid.has_value());
  EXPECT_FALSE(os::poll_exit(*pid).has_value());
  const auto start = Clock::now();
  EXPECT_FALSE(os::wait_exit(*pid, 30ms).has_value());
  EXPECT_GE(Clock::now() - start, 30ms);
  const auto ended = os::wait_exit(*pid, 10s);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->code(), 7);
  EXPECT_FALSE(ended->signal().has_value());
  EXPECT_TRUE(os::poll_exit(*pid)->lost);  // reaped: nothing more to know
}

TEST(Terminate, AChildThatStopsOnSigtermEndsWithinTheGrace) {
  auto pid = os::spawn({.argv = {"/bin/sleep", "30"}, .group = os::SpawnOptions::Group::Own});
  ASSERT_TRUE(pid.has_value());
  const auto start = Clock::now();
  const os::ExitStatus ended = os::terminate(*pid, 5s);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(ended.signal(), SIGTERM);
  EXPECT_EQ(ended.code(), 128 + SIGTERM);
}

TEST(Terminate, AChildThatIgnoresSigtermIsKilledAfterTheGrace) {
  auto ready = os::make_pipe();
  ASSERT_TRUE(ready.has_value());
  auto pid = os::spawn({.argv = {"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.01; done"},
                        .fds = {{.child = 1, .parent = ready->write.get()}},
                        .group = os::SpawnOptions::Group::Own});
  ASSERT_TRUE(pid.has_value());
  ready->write.reset();
  char buffer[8];
  ASSERT_GT(os::read_some(ready->read.get(), buffer).bytes, 0u);  // the trap is set
  const auto start = Clock::now();
  const os::ExitStatus ended = os::terminate(*pid, 200ms);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(ended.signal(), SIGKILL);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(running_members(*pid), 0);  // its sleeps went with it
}

TEST(Terminate, WaitingForTheGroupOutlastsTheLeader) {
  // The leader ends at once; what it left behind (ignoring SIGHUP) is killed after the grace.
  auto pid = os::spawn({.argv = {"/bin/sh", "-c", "(trap '' HUP; while :; do sleep 0.01; done) & sleep 30"},
                        .group = os::SpawnOptions::Group::Own});
  ASSERT_TRUE(pid.has_value());
  std::this_thread::sleep_for(50ms);
  const auto start = Clock::now();
  const os::ExitStatus ended =
      os::terminate(*pid, 200ms, {.signal = SIGHUP, .target = os::Target::Group, .wait_for_group = true});
  EXPECT_GE(Clock::now() - start, 200ms);
  EXPECT_EQ(ended.signal(), SIGHUP);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(running_members(*pid), 0);
}

TEST(ProcessExists, TellsALiveProcessFromAnEndedOne) {
  EXPECT_TRUE(os::process_exists(::getpid()));
  auto pid = os::spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(pid.has_value());
  ASSERT_TRUE(os::wait_exit(*pid).has_value());
  EXPECT_FALSE(os::process_exists(*pid));
}

}  // namespace
}  // namespace vigil
