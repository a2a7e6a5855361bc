// The host side of the extension "vigil.profiler/1" (vigil/profiler.h): a profiler rule's session
// reads the job's profiler output (a folder or an S3 prefix) through a ProfilerSource.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include <vigil/profiler.h>

#include "profiler/profiler_trial.h"

namespace vigil::plugin_host {

// What one profiler rule reads: its own ProfilerTrial (the readers keep listing state), and how to
// wait for a live job's data.
struct ProfilerSource {
  explicit ProfilerSource(profiler::ProfilerTrial trial, bool follow = true,
                          std::chrono::milliseconds poll_interval = std::chrono::milliseconds(1000))
      : trial(std::move(trial)), follow(follow), poll_interval(poll_interval) {}

  std::mutex mu;  // the extension's functions are [any-thread]; the readers are not
  profiler::ProfilerTrial trial;
  // false: what exists is all there will be (the job has ended, with or without its end marker).
  bool follow = true;
  // How often a blocked call lists the files again (smdebug sleeps 10 s; a local folder is cheap).
  std::chrono::milliseconds poll_interval;
};

// The extension's table (static, valid for the life of the process), offered in extensions.cpp.
const vigil_profiler_ext* profiler_extension();

}  // namespace vigil::plugin_host
