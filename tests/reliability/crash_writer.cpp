// The writer process of the reliability tests: one worker of the torture trial (torture_trial.h),
// continued with TrialWriter::resume() from wherever an earlier run of it was killed.
//
//   crash_writer --dir D --steps N [--worker-index W] [--num-workers K] [--big-elements E]
//                [--no-end-marker] [--progress-fd FD] [--max-step-delay-us U] [--seed S]
//
// Writes global steps up to N-1 and closes (with the end marker unless --no-end-marker). With
// --progress-fd it writes "<step>\n" to FD as each step begins and "p<step>\n" when its records are
// written and the step is about to be published, so a test can aim its SIGKILL.
// With --max-step-delay-us it sleeps 0..U microseconds after each step (no sleep for a third of
// the steps), and one step in 32 is slow (10-40 ms), so that a reader that fell behind catches up
// and waits at the step being written again. Exit status 0 when done, 1 on any writer error, 2 on bad arguments, 3 when the
// resumed step numbering is not the trial's.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include "torture_trial.h"

namespace {

struct Arguments {
  std::string dir;
  int64_t steps = -1;
  int worker_index = 0;
  int64_t num_workers = 1;
  int64_t big_elements = 1024;
  bool end_marker = true;
  int progress_fd = -1;
  int64_t max_step_delay_us = 0;
  uint64_t seed = 1;
};

bool parse(int argc, char** argv, Arguments& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--no-end-marker") {
      a.end_marker = false;
      continue;
    }
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    if (flag == "--dir") a.dir = value;
    else if (flag == "--steps") a.steps = std::atoll(value);
    else if (flag == "--worker-index") a.worker_index = std::atoi(value);
    else if (flag == "--num-workers") a.num_workers = std::atoll(value);
    else if (flag == "--big-elements") a.big_elements = std::atoll(value);
    else if (flag == "--progress-fd") a.progress_fd = std::atoi(value);
    else if (flag == "--max-step-delay-us") a.max_step_delay_us = std::atoll(value);
    else if (flag == "--seed") a.seed = std::strtoull(value, nullptr, 10);
    else return false;
  }
  return !a.dir.empty() && a.steps >= 0 && a.big_elements > 0;
}

void report_progress(int fd, std::string_view what, int64_t step) {
  if (fd < 0) return;
  const std::string line = std::string(what) + std::to_string(step) + "\n";
  ssize_t n;
  do n = ::write(fd, line.data(), line.size());
  while (n < 0 && errno == EINTR);
}

int fail_with(const vigil::Error& e) {
  std::fprintf(stderr, "crash_writer: %s\n", e.message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vigil;
  Arguments args;
  if (!parse(argc, argv, args)) {
    std::fprintf(stderr, "crash_writer: bad arguments (see the comment at the top of crash_writer.cpp)\n");
    return 2;
  }
  writer::WriterOptions options;
  options.worker = torture::worker_name(args.worker_index);
  options.num_workers = args.num_workers;
  options.write_end_marker = args.end_marker;
  for (auto& m : options.save_config) m.save_interval = 1;
  auto opened = writer::TrialWriter::resume(args.dir, options);
  if (!opened) return fail_with(opened.error());
  writer::TrialWriter& w = **opened;

  std::mt19937_64 rng(args.seed + uint64_t(args.worker_index) * 7919);
  for (int64_t step = w.global_step() + 1; step < args.steps; ++step) {
    if (auto r = w.begin_step(torture::mode_of(step)); !r) return fail_with(r.error());
    if (w.global_step() != step || w.mode_step() != torture::mode_step_of(step)) {
      std::fprintf(stderr, "crash_writer: resumed at global step %lld mode step %lld, expected %lld and %lld\n",
                   (long long)w.global_step(), (long long)w.mode_step(), (long long)step,
                   (long long)torture::mode_step_of(step));
      return 3;
    }
    report_progress(args.progress_fd, "", step);
    if (auto r = torture::write_step(w, step, args.worker_index, args.big_elements); !r) return fail_with(r.error());
    report_progress(args.progress_fd, "p", step);
    if (auto r = w.end_step(); !r) return fail_with(r.error());
    if (args.max_step_delay_us > 0) {
      if (rng() % 32 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(10 + rng() % 31));
      else if (rng() % 3 != 0)
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % uint64_t(args.max_step_delay_us + 1)));
    }
  }
  if (auto r = w.close(); !r) return fail_with(r.error());
  return 0;
}
