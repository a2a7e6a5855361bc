// `vigil monitor`: the system monitor on its own, for any process or none: samples this machine
// into a profiler root as SageMaker's system metrics files until a signal, a duration, or the end
// of a watched process.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "format/sagemaker_container.h"
#include "common/process.h"
#include "profiler/profiler_config.h"
#include "profiler/profiler_trial.h"
#include "profiler/system_monitor.h"

namespace vigil::cli {
namespace {

constexpr std::string_view kUsage = R"(usage: vigil monitor --out DIR [--interval-ms N] [--duration SECONDS] [--pid PID]

Samples this machine as SageMaker's system monitor does and writes the samples into the profiler
root DIR as JSON lines, in DIR/system/incremental/<YYYYMMDDHH>/<epoch_seconds>.algo-<n>.json
(files are published whole, every 60 s or 10 MiB). Each sample has CPU utilisation per core and in
total, I/O wait per core, memory used, disk and network throughput, and GPU utilisation and memory
where NVML (libnvidia-ml.so.1) is present. See docs/profiler.md.

options:
  --out DIR             the profiler root (ProfilingParameters.LocalPath of a training job)
  --interval-ms N       the sampling period: 100, 200, 500 (default), 1000, 5000 or 60000
  --duration SECONDS    stop after this long
  --pid PID             stop when process PID ends
  -h, --help            show this help

It runs until SIGINT or SIGTERM, --duration or the end of --pid, then publishes the last file and
marks the end of training (DIR/system/training_job_end.ts), which ends the profiler rules following DIR.
exit status: 0 when it sampled until told to stop, 1 when the monitor had to stop (an unwritable
DIR), 2 for a bad command line.
)";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "vigil monitor: %s\n(see vigil monitor --help)\n", message.c_str());
  return kExitUsage;
}

template <typename T>
std::optional<T> parse_number(const std::string& text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

int run_monitor(const std::vector<std::string>& args) {
  std::optional<std::string> out;
  int64_t interval_ms = 500;
  std::optional<double> duration_s;
  std::optional<pid_t> pid;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage.data(), stdout);
      return kExitOk;
    }
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "--out" || a == "--interval-ms" || a == "--duration" || a == "--pid") {
      const auto v = value();
      if (!v) return usage_error(a + " needs a value");
      if (a == "--out") {
        if (v->empty()) return usage_error("--out needs a folder");
        out = *v;
      } else if (a == "--interval-ms") {
        const auto ms = parse_number<int64_t>(*v);
        const auto& allowed = format::sagemaker::kProfilingIntervalsMs;
        if (!ms || std::find(allowed.begin(), allowed.end(), *ms) == allowed.end())
          return usage_error(fmt::format("--interval-ms: {} is not one of {}", *v, fmt::join(allowed, ", ")));
        interval_ms = *ms;
      } else if (a == "--duration") {
        const auto s = parse_number<double>(*v);
        if (!s || !std::isfinite(*s) || *s <= 0) return usage_error(fmt::format("--duration: {} is not a positive number of seconds", *v));
        duration_s = *s;
      } else {
        const auto p = parse_number<int>(*v);
        if (!p || *p <= 0) return usage_error(fmt::format("--pid: {} is not a process id", *v));
        if (!os::process_exists(*p)) return usage_error(fmt::format("--pid: no process {}", *p));
        pid = *p;
      }
      continue;
    }
    return usage_error(fmt::format("unknown argument '{}'", a));
  }
  if (!out) return usage_error("--out DIR is required");

  // Blocked before the sampling thread starts, so that it inherits the mask and the signals wait
  // here for sigtimedwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  profiler::SystemMonitorOptions options;
  options.root = *out;
  options.interval = std::chrono::milliseconds(interval_ms);
  options.on_log = [](const std::string& message) { std::fprintf(stderr, "vigil monitor: %s\n", message.c_str()); };
  profiler::SystemMonitor monitor(options);
  if (!monitor.start()) return kExitFailure;
  std::fprintf(stderr, "vigil monitor: sampling every %lld ms into %s\n", static_cast<long long>(interval_ms),
               out->c_str());

  const auto started = std::chrono::steady_clock::now();
  std::string reason;
  while (reason.empty()) {
    // Wakes at least every 100 ms to look at the duration, the watched process and the monitor.
    timespec wait{0, 100'000'000};
    if (const int signal = ::sigtimedwait(&signals, nullptr, &wait); signal > 0) {
      reason = signal == SIGINT ? "SIGINT" : "SIGTERM";
    } else if (duration_s && std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >= *duration_s) {
      reason = "the duration passed";
    } else if (pid && !os::process_exists(*pid)) {
      reason = fmt::format("process {} ended", *pid);
    } else if (monitor.stepped_aside()) {
      reason = "the monitor stopped";
    }
  }
  monitor.stop();
  std::fprintf(stderr, "vigil monitor: %s: %llu samples written\n", reason.c_str(),
               static_cast<unsigned long long>(monitor.samples_written()));
  if (monitor.stepped_aside()) return kExitFailure;
  // The end of the monitored job, for the profiler rules that follow this folder (they end with it).
  if (auto marked = profiler::mark_training_ended(*out, profiler::ProfilerFolder::System); !marked) {
    std::fprintf(stderr, "vigil monitor: %s\n", marked.error().message.c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace vigil::cli
