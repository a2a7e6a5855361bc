// The system monitor: a thread that samples the host every interval (CPU per core and in total,
// I/O wait, memory, disk and network throughput from /proc, GPUs through NVML) and writes the
// rows as SageMaker's system metrics files (system_metrics_writer.h). It runs inside training
// processes, so it must never harm one: every failure is logged once, a source that fails is
// dropped, a write that fails stops the monitor, and no exception leaves the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "profiler/node_id.h"
#include "profiler/nvml_gpus.h"
#include "profiler/proc_stats.h"
#include "profiler/profiler_config.h"
#include "profiler/system_metrics_writer.h"

namespace vigil::profiler {

// Everything read at one moment. A source that could not be read is nullopt.
struct HostSample {
  double timestamp_s = 0;  // seconds since the epoch (the rows' Timestamp)
  double monotonic_s = 0;  // a steady clock, for rates
  std::optional<CpuSample> cpu;
  std::optional<MemorySample> memory;
  std::optional<std::vector<DiskCounters>> disks;     // the disks counted (see SystemMonitor)
  std::optional<std::vector<NetCounters>> networks;   // the interfaces counted (not loopback)
  std::vector<GpuSample> gpus;
};

// The rows for the interval from `before` to `after` (docs/profiler.md lists them):
//   cpu     cpuN               CPUUtilization        % of core N busy
//   cpu     cpuN               I/OWaitPercentage     % of core N waiting on I/O
//   cpu     cpu                TotalCPUUtilization   % of all cores busy
//   memory  MemoryUsedPercent  MemoryUsedPercent     % of memory used (total - available)
//   disk    disk               ReadBytesPerSecond    bytes/s read from the disks
//   disk    disk               WriteBytesPerSecond   bytes/s written to the disks
//   network network           ReceiveBytesPerSecond bytes/s received on all interfaces but lo
//   network network           TransmitBytesPerSecond
//   gpu     gpuN               GPUUtilization        % of time a kernel ran on GPU N
//   gpu     gpuN               GPUMemoryUtilization  % of GPU N's memory used
[[nodiscard]] std::vector<SystemMetric> system_metrics_between(const HostSample& before, const HostSample& after);

struct SystemMonitorOptions {
  std::filesystem::path root;  // the profiler root: files go to <root>/system/incremental/...
  std::chrono::milliseconds interval{500};
  uint64_t rotate_max_file_size_bytes = 10485760;
  double rotate_file_close_interval_s = 60;
  // Empty: from resourceconfig.json, else the hostname (node_id.h).
  std::string node_id;
  std::string file_host;
  std::filesystem::path resource_config = resource_config_path();
  // Where the kernel's files are (tests point these at fixed trees).
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path sys_block = "/sys/block";
  std::string nvml_library = "libnvidia-ml.so.1";  // empty: no GPU sampling
  // Each message once; nullptr: stderr.
  std::function<void(const std::string&)> on_log;
};

// Interval, root (LocalPath) and rotation from a profiler config.
[[nodiscard]] SystemMonitorOptions system_monitor_options(const ProfilerConfig& config);

class SystemMonitor {
 public:
  explicit SystemMonitor(SystemMonitorOptions options);
  ~SystemMonitor();  // stop()
  SystemMonitor(const SystemMonitor&) = delete;
  SystemMonitor& operator=(const SystemMonitor&) = delete;

  // Starts the sampling thread; false (and a log) when it could not start. Once only.
  bool start();
  // Stops the thread and publishes the open file. Idempotent.
  void stop();

  uint64_t samples_written() const { return samples_written_.load(); }
  // True once a failure made the monitor stop on its own.
  bool stepped_aside() const { return stepped_aside_.load(); }

 private:
  void run(std::stop_token stop) noexcept;
  void sample_loop(std::stop_token stop);
  HostSample take_sample();
  void log(const std::string& message) noexcept;
  bool counted_disk(const std::string& device) const;

  SystemMonitorOptions options_;
  std::mutex wait_mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;
  std::atomic<uint64_t> samples_written_{0};
  std::atomic<bool> stepped_aside_{false};
  bool started_ = false;
  // The sampling thread's own state.
  std::optional<std::vector<std::string>> physical_disks_;  // from /sys/block; nullopt: unknown
  std::unique_ptr<NvmlGpus> gpus_;
  bool cpu_failed_ = false, memory_failed_ = false, disk_failed_ = false, network_failed_ = false, gpu_failed_ = false;
};

}  // namespace vigil::profiler
