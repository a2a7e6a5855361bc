// `vigil monitor`: help, refusals of bad input (exit 2), and short runs that end by duration, by
// signal and by the end of a watched process.
#include <sys/wait.h>

#include <chrono>
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "test_support.h"

namespace vigil::profiler {
namespace {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;
  std::string output;
};

// `script` through the shell, with $VIGIL set to the binary; stdout and stderr together.
Run run_shell(const std::string& script) {
  const std::string command = "VIGIL='" + std::string(VIGIL_BINARY) + "'; { " + script + "; } 2>&1";
  Run run;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return run;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) run.output.append(buf, n);
  const int status = ::pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

size_t metric_lines(const fs::path& root) {
  size_t lines = 0;
  for (const auto& rel : test::list_files(root)) {
    if (rel == "system/training_job_end.ts") continue;  // the end of training, once the monitor ends
    EXPECT_TRUE(rel.starts_with("system/incremental/") && rel.ends_with(".algo-1.json")) << rel;
    const std::string text = test::read_file(root / rel);
    EXPECT_TRUE(text.ends_with("\n"));
    lines += size_t(std::count(text.begin(), text.end(), '\n'));
  }
  return lines;
}

TEST(MonitorCommand, Help) {
  const auto run = run_shell("$VIGIL monitor --help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* option : {"--out DIR", "--interval-ms", "--duration", "--pid", "system/incremental"})
    EXPECT_NE(run.output.find(option), std::string::npos) << option << "\n" << run.output;
  const auto top = run_shell("$VIGIL --help");
  EXPECT_NE(top.output.find("monitor "), std::string::npos) << top.output;
}

TEST(MonitorCommand, BadInputIsRefusedWithExit2) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "--out DIR is required"},
      {"--out", "--out needs a value"},
      {"--out /tmp/x --interval-ms 300", "--interval-ms: 300 is not one of 100, 200, 500, 1000, 5000, 60000"},
      {"--out /tmp/x --interval-ms fast", "--interval-ms: fast is not one of"},
      {"--out /tmp/x --duration -1", "--duration: -1 is not a positive number of seconds"},
      {"--out /tmp/x --duration soon", "--duration: soon is not a positive number"},
      {"--out /tmp/x --pid 0", "--pid: 0 is not a process id"},
      {"--out /tmp/x --pid 2147483647", "--pid: no process 2147483647"},
      {"--out /tmp/x --frobnicate", "unknown argument '--frobnicate'"},
  };
  for (const auto& [args, message] : cases) {
    const auto run = run_shell("$VIGIL monitor " + args);
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.output;
    EXPECT_NE(run.output.find("vigil monitor: " + message), std::string::npos) << args << "\n" << run.output;
  }
}

TEST(MonitorCommand, RunsForADuration) {
  test::ScratchDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const auto run = run_shell("$VIGIL monitor --out '" + (dir / "prof").string() + "' --interval-ms 100 --duration 0.8");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("the duration passed"), std::string::npos) << run.output;
  EXPECT_LT(took, 5.0);
  EXPECT_GT(metric_lines(dir / "prof"), 0u);
  // The profiler rules following the folder end with the monitor (format spec §8.6).
  EXPECT_TRUE(fs::exists(dir / "prof" / "system" / "training_job_end.ts"));
}

TEST(MonitorCommand, StopsOnSigterm) {
  test::ScratchDir dir;
  const auto run = run_shell("$VIGIL monitor --out '" + dir.path().string() +
                             "' --interval-ms 100 --duration 30 & p=$!; sleep 0.7; kill -TERM $p; wait $p; echo rc=$?");
  EXPECT_NE(run.output.find("SIGTERM"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("rc=0"), std::string::npos) << run.output;
  EXPECT_GT(metric_lines(dir.path()), 0u);  // the open file was published on the way out
  EXPECT_TRUE(fs::exists(dir / "system" / "training_job_end.ts"));
}

TEST(MonitorCommand, StopsWhenTheWatchedProcessEnds) {
  test::ScratchDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const auto run = run_shell("sleep 0.7 & $VIGIL monitor --out '" + dir.path().string() +
                             "' --interval-ms 100 --duration 30 --pid $!");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("ended"), std::string::npos) << run.output;
  EXPECT_LT(took, 10.0);
  EXPECT_TRUE(fs::exists(dir / "system" / "training_job_end.ts"));
}

TEST(MonitorCommand, UnwritableOutIsExit1) {
  test::ScratchDir dir;
  { std::ofstream(dir / "file") << "x"; }
  const auto run = run_shell("$VIGIL monitor --out '" + (dir / "file").string() + "' --interval-ms 100 --duration 5");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("the system monitor stops"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(dir / "file" / "system" / "training_job_end.ts"));  // a monitor that failed ends nothing
}

}  // namespace
}  // namespace vigil::profiler
