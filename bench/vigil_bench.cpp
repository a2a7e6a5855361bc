// vigil_bench: the workloads that bench/run_bench.py times, one per process so that each gets its own
// peak RSS. Each prints one JSON line with what it did (bytes, tensors, a checksum, seconds).
//
//   vigil_bench generate DIR [--size-mb N] [--workers W]   write the deterministic benchmark trial
//   vigil_bench generate-steps DIR [--steps N] [--workers W] many steps of 11 small tensors each
//   vigil_bench raw-read DIR                               read every event file into a buffer
//   vigil_bench scan DIR                                   mean(|x|) of every value through the C++ API
//   vigil_bench raw-write FROM OUT                         write FROM's event bytes with plain write()
//   vigil_bench live DIR --vigil EXE --plugins DIR [--steps N] [--python-rule FILE] [--startup-ms N]
//                                                          index file -> rule status latency
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trial/reductions.h"
#include "trial/trial.h"
#include "writer/trial_writer.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

pid_t g_child = 0;  // the evaluator of `live`, stopped when the benchmark dies

[[noreturn]] void die(const std::string& message) {
  if (g_child > 0) ::kill(g_child, SIGKILL);
  std::fprintf(stderr, "vigil_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T check(vigil::Result<T> r, const char* what) {
  if (!r) die(fmt::format("{}: {}", what, r.error().message));
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

// ---- the benchmark trial ----

// The shape of the trial: a few large tensors saved every kLargeEvery steps among many small ones
// saved at every step. About 4.2 MB per step per worker-trial, so 500 MB is about 120 steps.
constexpr int kLargeTensors = 4;
constexpr int64_t kLargeElements = int64_t(1) << 20;  // 4 MiB of float32
constexpr int kLargeEvery = 5;
constexpr int kSmallTensors = 96;
int64_t small_elements(int i) { return 256 * (1 + i % 16); }

double bytes_per_step() {
  double small = 0;
  for (int i = 0; i < kSmallTensors; ++i) small += double(small_elements(i)) * 4;
  return small + double(kLargeTensors) * double(kLargeElements) * 4 / kLargeEvery;
}

std::string tensor_name(bool large, int i) {
  // Names in smdebug PyTorch's weights / gradients collections.
  const std::string layer = fmt::format("{}layer{}.weight", large ? "big_" : "", i);
  return i % 2 ? "gradient/" + layer : layer;
}

// A pool of deterministic random floats; a tensor's value at a step is a slice of it.
std::vector<float> make_pool(size_t n) {
  std::vector<float> pool(n);
  std::mt19937_64 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& v : pool) v = dist(rng);
  return pool;
}

int cmd_generate(const fs::path& dir, double size_mb, int workers) {
  const int64_t steps = std::max<int64_t>(2, std::llround(size_mb * 1e6 / bytes_per_step() / workers));
  const auto pool = make_pool(size_t(kLargeElements) * 2);
  const auto t0 = Clock::now();
  uint64_t bytes = 0;
  int64_t tensors = 0;
  for (int w = 0; w < workers; ++w) {
    vigil::writer::WriterOptions options;
    options.worker = fmt::format("worker_{}", w);
    options.num_workers = workers;
    options.write_end_marker = w == workers - 1;  // the job ends once every worker has written
    for (auto& m : options.save_config) m.save_interval = 1;
    auto writer = check(vigil::writer::TrialWriter::create(dir, options), "create");
    for (int64_t step = 0; step < steps; ++step) {
      check(writer->begin_step(vigil::Mode::Train), "begin_step");
      auto save = [&](bool large, int i, int64_t n) {
        const size_t offset = size_t((step * 7919 + i * 104729 + w * 15485863) % int64_t(pool.size() - size_t(n)));
        vigil::writer::TensorData data{.dtype = vigil::ElementType::Float32,
                                       .shape = {n / 64, 64},
                                       .bytes = std::as_bytes(std::span(pool.data() + offset, size_t(n)))};
        check(writer->save_tensor(tensor_name(large, i), data), "save_tensor");
        bytes += uint64_t(n) * 4;
        ++tensors;
      };
      for (int i = 0; i < kSmallTensors; ++i) save(false, i, small_elements(i));
      if (step % kLargeEvery == 0)
        for (int i = 0; i < kLargeTensors; ++i) save(true, i, kLargeElements);
      check(writer->end_step(), "end_step");
    }
    check(writer->close(), "close");
  }
  std::printf("%s\n", nlohmann::json{{"workload", "generate"},
                                     {"steps", steps},
                                     {"workers", workers},
                                     {"tensors", tensors},
                                     {"tensor_bytes", bytes},
                                     {"largest_tensor_bytes", kLargeElements * 4},
                                     {"seconds", seconds_since(t0)}}
                          .dump()
                          .c_str());
  return 0;
}

// The many-steps trial: a long job saving scalars and a few small tensors at every step, where the
// cost per step (index files, the evaluator's walk) matters more than the bytes. 11 tensors per
// step: 5 weights and 5 gradients of 64 float32, and the loss. With W workers, each writes every
// step (issue 31's one big trial with many workers).
int cmd_generate_steps(const fs::path& dir, int64_t steps, int workers) {
  constexpr int kTensors = 10;
  constexpr int64_t kElements = 64;
  const auto pool = make_pool(1 << 16);
  const auto t0 = Clock::now();
  uint64_t bytes = 0;
  int64_t tensors = 0;
  for (int w = 0; w < workers; ++w) {
    vigil::writer::WriterOptions options;
    if (workers > 1) {
      options.worker = fmt::format("worker_{}", w);
      options.num_workers = workers;
      options.write_end_marker = w == workers - 1;  // the job ends once every worker has written
    }
    for (auto& m : options.save_config) m.save_interval = 1;
    auto writer = check(vigil::writer::TrialWriter::create(dir, options), "create");
    for (int64_t step = 0; step < steps; ++step) {
      check(writer->begin_step(vigil::Mode::Train), "begin_step");
      for (int i = 0; i < kTensors; ++i) {
        const size_t offset = size_t((step * 131 + i * 977 + w * 7919) % int64_t(pool.size() - kElements));
        vigil::writer::TensorData data{.dtype = vigil::ElementType::Float32,
                                       .shape = {kElements},
                                       .bytes = std::as_bytes(std::span(pool.data() + offset, size_t(kElements)))};
        check(writer->save_tensor(tensor_name(false, i), data), "save_tensor");
        bytes += kElements * 4;
      }
      const float loss = 1.0f / float(step + 1);
      vigil::writer::TensorData data{.dtype = vigil::ElementType::Float32,
                                     .shape = {},
                                     .bytes = std::as_bytes(std::span(&loss, 1))};
      check(writer->save_tensor("CrossEntropyLoss_output_0", data), "save_tensor");  // the losses collection
      bytes += 4;
      tensors += kTensors + 1;
      check(writer->end_step(), "end_step");
    }
    check(writer->close(), "close");
  }
  std::printf("%s\n", nlohmann::json{{"workload", "generate-steps"},
                                     {"steps", steps},
                                     {"workers", workers},
                                     {"tensors", tensors},
                                     {"tensor_bytes", bytes},
                                     {"largest_tensor_bytes", kElements * 4},
                                     {"seconds", seconds_since(t0)}}
                          .dump()
                          .c_str());
  return 0;
}

// ---- raw reads and writes: the physical reference ----

std::vector<fs::path> event_files(const fs::path& trial) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(trial / "events"))
    if (e.is_regular_file() && e.path().filename().string().ends_with(".tfevents")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t read_whole(const fs::path& file, std::vector<char>& buffer) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("open " + file.string());
  struct stat st {};
  ::fstat(fd, &st);
  if (buffer.size() < size_t(st.st_size)) buffer.resize(size_t(st.st_size));
  uint64_t done = 0;
  while (done < uint64_t(st.st_size)) {
    const ssize_t n = ::read(fd, buffer.data() + done, size_t(st.st_size) - done);
    if (n <= 0) die("read " + file.string());
    done += uint64_t(n);
  }
  ::close(fd);
  return done;
}

int cmd_raw_read(const fs::path& trial) {
  const auto t0 = Clock::now();
  std::vector<char> buffer;
  uint64_t bytes = 0, sum = 0;
  for (const auto& f : event_files(trial)) {
    const uint64_t n = read_whole(f, buffer);
    bytes += n;
    for (uint64_t i = 0; i < n; i += 4096) sum += uint8_t(buffer[i]);  // the bytes are really there
  }
  std::printf("%s\n", nlohmann::json{{"workload", "raw-read"}, {"bytes", bytes}, {"checksum", sum}, {"seconds", seconds_since(t0)}}
                          .dump()
                          .c_str());
  return 0;
}

int cmd_raw_write(const fs::path& from, const fs::path& out) {
  // The same bytes as the trial's event files, in files of the same sizes; read first, not timed.
  std::vector<std::vector<char>> contents;
  for (const auto& f : event_files(from)) {
    std::vector<char> buffer;
    buffer.resize(read_whole(f, buffer));
    contents.push_back(std::move(buffer));
  }
  fs::remove_all(out);
  fs::create_directories(out);
  const auto t0 = Clock::now();
  uint64_t bytes = 0;
  for (size_t i = 0; i < contents.size(); ++i) {
    const fs::path file = out / fmt::format("{:06}.bin", i);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("open " + file.string());
    size_t done = 0;
    while (done < contents[i].size()) {
      const ssize_t n = ::write(fd, contents[i].data() + done, contents[i].size() - done);
      if (n <= 0) die("write " + file.string());
      done += size_t(n);
    }
    ::close(fd);
    bytes += done;
  }
  std::printf("%s\n", nlohmann::json{{"workload", "raw-write"}, {"bytes", bytes}, {"seconds", seconds_since(t0)}}.dump().c_str());
  return 0;
}

// ---- the full scan through the C++ API ----

int cmd_scan(const fs::path& path) {
  const auto t0 = Clock::now();
  auto trial = check(vigil::Trial::open(path), "open");
  const auto names = check(trial->tensor_names(), "tensor_names");
  const auto steps = check(trial->steps(), "steps");
  uint64_t bytes = 0, values = 0;
  double checksum = 0;
  for (int64_t step : steps)
    for (const auto& name : names) {
      auto workers = trial->tensor_workers(name, step);
      if (!workers) continue;  // not saved at this step
      for (const auto& worker : *workers) {
        // The value, then mean(|x|) with the host's reductions (numpy's semantics, vectorised).
        auto v = check(trial->value(name, step, vigil::Mode::Global, worker), "value");
        checksum += check(vigil::compute_reduction(v, vigil::ReductionOp::Mean, true), "mean").value;
        bytes += v.bytes().size();
        ++values;
      }
    }
  std::printf("%s\n", nlohmann::json{{"workload", "scan"},
                                     {"values", values},
                                     {"tensor_bytes", bytes},
                                     {"checksum", checksum},
                                     {"seconds", seconds_since(t0)}}
                          .dump()
                          .c_str());
  return 0;
}

// ---- live: index file -> status written ----

// The steps the status file's rule has triggers for.
std::vector<int64_t> triggered_steps(const fs::path& status_file) {
  std::ifstream in(status_file);
  if (!in) return {};
  try {
    const auto j = nlohmann::json::parse(in);
    std::vector<int64_t> steps;
    for (const auto& t : j.at("DebugRuleEvaluationStatuses").at(0).value("Triggers", nlohmann::json::array()))
      steps.push_back(t.at("step").get<int64_t>());
    return steps;
  } catch (const nlohmann::json::exception&) {
    return {};  // the evaluator replaces the file atomically, so this is not expected
  }
}

// The evaluator follows `dir`/trial while this writes `steps` steps with random 20-80 ms pauses;
// for each step, the time from the moment it can be judged to the moment the status file holds the
// rule's trigger for it. A step can be judged once its index file is published (end_step()
// returned), step 0 once the collection files are there too: the writer publishes them as the
// second step begins, as smdebug does. `python_rule`: a Python rule file with class
// FireAtEveryStep instead of the FullScan plugin rule. The trial folder exists (empty) when the
// evaluator starts, as SageMaker's rule container finds the job's output path; `startup_ms` passes
// before the first step, the training script's own start (its imports, model and data) while the
// evaluator gets its rules ready.
int cmd_live(const fs::path& dir, const std::string& vigil_exe, const std::string& plugins, int steps,
             const std::string& python_rule, int startup_ms) {
  if (steps < 2) die("live needs at least 2 steps");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path trial = dir / "trial";
  fs::create_directories(trial);
  const fs::path status_dir = dir / "status";
  fs::create_directories(status_dir);
  const fs::path status_file = status_dir / "status.json";

  const int inotify = ::inotify_init1(IN_CLOEXEC);
  if (inotify < 0 || ::inotify_add_watch(inotify, status_dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
    die("inotify on " + status_dir.string());

  std::vector<std::string> args = {vigil_exe, "evaluate", "--trial", trial.string(), "--plugins", plugins};
  if (python_rule.empty()) {
    args.insert(args.end(), {"--rule", "FullScan", "--param", "fire_above=-1"});
  } else {
    args.insert(args.end(), {"--rule", "FireAtEveryStep", "--param", "source_s3_uri=" + python_rule});
  }
  args.insert(args.end(), {"--status-file", status_file.string(), "--quiet"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The evaluator's output goes to a log file, never to our stdout (the driver reads it to the end).
  const std::string log = (dir / "evaluator.log").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) die("cannot start " + vigil_exe);
  posix_spawn_file_actions_destroy(&actions);
  g_child = pid;

  // Waits for a status file that holds `step`'s trigger; the latency in ms from now.
  auto wait_for_trigger = [&](int64_t step) {
    const auto t0 = Clock::now();
    while (true) {
      const auto st = triggered_steps(status_file);
      if (std::find(st.begin(), st.end(), step) != st.end()) break;
      if (seconds_since(t0) > 10) die(fmt::format("no status for step {} after 10 s (see {})", step, log));
      pollfd pfd{.fd = inotify, .events = POLLIN, .revents = 0};
      if (::poll(&pfd, 1, 100) > 0) {
        alignas(inotify_event) char buf[4096];
        (void)!::read(inotify, buf, sizeof buf);
      }
    }
    return seconds_since(t0) * 1000;
  };

  std::this_thread::sleep_for(std::chrono::milliseconds(startup_ms));
  vigil::writer::WriterOptions options;
  for (auto& m : options.save_config) m.save_interval = 1;
  auto writer = check(vigil::writer::TrialWriter::create(trial, options), "create");
  const auto pool = make_pool(1 << 16);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pause_ms(20, 80);
  std::vector<double> latencies_ms;
  double first_ms = 0;
  for (int64_t step = 0; step < steps; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));  // training between saves
    check(writer->begin_step(vigil::Mode::Train), "begin_step");
    if (step == 1) {
      first_ms = wait_for_trigger(0);  // the collection files have just been published
      latencies_ms.push_back(first_ms);
    }
    for (int i = 0; i < 10; ++i) {
      vigil::writer::TensorData data{.dtype = vigil::ElementType::Float32,
                                     .shape = {1024},
                                     .bytes = std::as_bytes(std::span(pool.data() + (step * 131 + i * 977) % 60000, 1024))};
      check(writer->save_tensor(tensor_name(false, i), data), "save_tensor");
    }
    check(writer->end_step(), "end_step");  // the step's index file has appeared when this returns
    if (step > 0) latencies_ms.push_back(wait_for_trigger(step));
  }
  check(writer->close(), "close");
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  g_child = 0;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto at = [&](double q) { return latencies_ms[size_t(q * double(latencies_ms.size() - 1))]; };
  std::printf("%s\n", nlohmann::json{{"workload", python_rule.empty() ? "live" : "live_python"},
                                     {"steps", latencies_ms.size()},
                                     {"startup_ms", startup_ms},
                                     {"latency_ms_first", first_ms},
                                     {"latency_ms_median", at(0.5)},
                                     {"latency_ms_p90", at(0.9)},
                                     {"latency_ms_max", latencies_ms.back()},
                                     {"evaluator_exit", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1}}
                          .dump()
                          .c_str());
  return 0;
}

void usage() {
  std::puts(
      "usage: vigil_bench generate DIR [--size-mb N] [--workers W]\n"
      "       vigil_bench generate-steps DIR [--steps N] [--workers W]\n"
      "       vigil_bench raw-read DIR\n"
      "       vigil_bench scan DIR\n"
      "       vigil_bench raw-write FROM OUT\n"
      "       vigil_bench live DIR --vigil EXE --plugins DIR [--steps N] [--python-rule FILE] [--startup-ms N]\n"
      "\n"
      "The workloads of bench/run_bench.py (scripts/bench.sh runs them all); each prints one JSON line.");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    usage();
    return args.empty() ? 2 : 0;
  }
  auto option = [&](const std::string& name, const std::string& fallback) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == name) return args[i + 1];
    return fallback;
  };
  const std::string& cmd = args[0];
  if (cmd == "generate" && args.size() >= 2)
    return cmd_generate(args[1], std::stod(option("--size-mb", "500")), std::stoi(option("--workers", "1")));
  if (cmd == "generate-steps" && args.size() >= 2)
    return cmd_generate_steps(args[1], std::stoll(option("--steps", "5000")), std::stoi(option("--workers", "1")));
  if (cmd == "raw-read" && args.size() == 2) return cmd_raw_read(args[1]);
  if (cmd == "scan" && args.size() == 2) return cmd_scan(args[1]);
  if (cmd == "raw-write" && args.size() == 3) return cmd_raw_write(args[1], args[2]);
  if (cmd == "live" && args.size() >= 2)
    return cmd_live(args[1], option("--vigil", ""), option("--plugins", ""), std::stoi(option("--steps", "100")),
                    option("--python-rule", ""), std::stoi(option("--startup-ms", "1000")));
  usage();
  return 2;
}
