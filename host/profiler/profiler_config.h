// The profiler configuration a SageMaker training container finds at $SMPROFILER_CONFIG_PATH
// (default /opt/ml/input/config/profilerconfig.json; format spec §8.4, sagemaker-api §7): the
// system-metrics interval, the output root and rotation, and the framework-profiling windows.
// Keys are case-insensitive as in smdebug; values are kept as written (smdebug lower-cases them
// too, so a LocalPath with capitals lands elsewhere there: docs/compatibility.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "format/sagemaker_container.h"

namespace vigil::profiler {

// One *ProfilingConfig string: a step range or a time range, plus the options of its kind.
struct MetricsConfig {
  bool enabled = false;  // the string was given, parsed, and names one kind of range
  std::optional<int64_t> start_step;  // step range; nullopt: the step at the first check
  int64_t num_steps = 1;
  std::optional<double> start_time;  // time range: seconds since the epoch
  std::optional<double> duration;    // seconds; nullopt: only the step at which start_time is reached
  bool is_time_range() const { return start_time.has_value(); }
  // DataloaderProfilingConfig: matched (case-insensitively) against metric names.
  std::string metrics_regex = ".*";
  // PythonProfilingConfig: "cprofile" or "pyinstrument"; "total_time", "cpu_time", "off_cpu_time"
  // or "default" (stored lower-case: they are names from a fixed set, not free text).
  std::string profiler_name = "cprofile";
  std::string cprofile_timer = "total_time";
};

struct ProfilerConfig {
  bool file_found = false;        // false: no file, every default, profiling off
  bool disable_profiler = false;  // DisableProfiler: system and framework profiling off
  bool has_profiling_parameters = false;  // ProfilingParameters present and not empty
  bool profiler_enabled = true;   // ProfilingParameters.ProfilerEnabled
  int64_t interval_ms = 500;      // ProfilingIntervalInMilliseconds
  std::filesystem::path local_path{std::string(format::sagemaker::kProfilerOutputDir)};
  uint64_t rotate_max_file_size_bytes = 10485760;
  double rotate_file_close_interval_s = 60;
  int64_t file_open_fail_threshold = 50;
  std::optional<int64_t> cpu_profiling_duration_s;  // SageMaker Profiler ("v2") keys, kept, unused
  std::optional<int64_t> smp_file_rotation_s;
  MetricsConfig detailed;        // DetailedProfilingConfig
  MetricsConfig dataloader;      // DataloaderProfilingConfig
  MetricsConfig python;          // PythonProfilingConfig
  MetricsConfig horovod;         // HorovodProfilingConfig
  MetricsConfig smdataparallel;  // SMDataparallelProfilingConfig
  // Configs disabled for a reason that smdebug also only logs (both kinds of range in one string):
  // each names its field.
  std::vector<std::string> problems;

  // The system monitor samples unless the profiler is disabled or ProfilerEnabled is false.
  bool system_monitor_enabled() const { return file_found && !disable_profiler && profiler_enabled; }
  // Framework profiling as smdebug decides it: off when DisableProfiler is set or
  // ProfilingParameters is missing or empty.
  bool framework_profiling_enabled() const { return file_found && !disable_profiler && has_profiling_parameters; }
};

// Parses the file's text. A bad value is InvalidArgument naming the field
// ("ProfilingParameters.ProfilingIntervalInMilliseconds: 300 is not one of 100, ...").
[[nodiscard]] Result<ProfilerConfig> parse_profiler_config(std::string_view json_text);

// Reads `path`; a missing file is the default (file_found false), not an error.
[[nodiscard]] Result<ProfilerConfig> load_profiler_config(const std::filesystem::path& path);

// $SMPROFILER_CONFIG_PATH, else the default path.
[[nodiscard]] std::filesystem::path profiler_config_path_from_environment();

// Re-reads the file whenever it changes (inode, size or mtime), so that an UpdateTrainingJob that
// rewrites it takes effect while training runs. A refused update keeps the last good config.
class ProfilerConfigWatcher {
 public:
  explicit ProfilerConfigWatcher(std::filesystem::path path);
  // true when the file changed and the new config was loaded; an error when it changed and was
  // refused (current() stays as it was; the same bad file is not reported again).
  [[nodiscard]] Result<bool> refresh();
  const ProfilerConfig& current() const { return current_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  struct FileIdentity {
    bool exists = false;
    ino_t inode = 0;
    off_t size = 0;
    timespec mtime{};
    bool operator==(const FileIdentity& o) const {
      return exists == o.exists && inode == o.inode && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
             mtime.tv_nsec == o.mtime.tv_nsec;
    }
  };
  static FileIdentity identify(const std::filesystem::path& path);

  std::filesystem::path path_;
  std::optional<FileIdentity> seen_;
  ProfilerConfig current_;
};

}  // namespace vigil::profiler
