// The kernel's counters the system monitor samples, parsed from the text of /proc files by pure
// functions (so tests feed them fixed texts), and the metric rows computed from two samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::profiler {

// One "cpu" or "cpuN" line of /proc/stat, in clock ticks.
struct CpuTicks {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  // guest and guest_nice are already counted in user and nice.
  uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  uint64_t busy() const { return total() - idle - iowait; }
};

struct CpuSample {
  CpuTicks all;                                 // the "cpu" line
  std::vector<std::pair<int, CpuTicks>> cores;  // "cpuN" lines by N (offline cores are absent)
};

// /proc/stat. An error when there is no "cpu" line or a cpu line is malformed.
[[nodiscard]] Result<CpuSample> parse_proc_stat(std::string_view text);

// Percent of the ticks between `before` and `after` spent busy, and waiting on I/O; nullopt when
// no tick passed (or the counters went backwards, as after a CPU hotplug).
[[nodiscard]] std::optional<double> cpu_utilization_percent(const CpuTicks& before, const CpuTicks& after);
[[nodiscard]] std::optional<double> iowait_percent(const CpuTicks& before, const CpuTicks& after);

// /proc/meminfo in kB: MemTotal and MemAvailable (older kernels without MemAvailable:
// MemFree + Buffers + Cached).
struct MemorySample {
  uint64_t total_kb = 0;
  uint64_t available_kb = 0;
  double used_percent() const;
};
[[nodiscard]] Result<MemorySample> parse_meminfo(std::string_view text);

// /proc/diskstats: bytes read and written per device (the kernel counts 512-byte sectors whatever
// the device's own sector size).
struct DiskCounters {
  std::string device;
  uint64_t read_bytes = 0;
  uint64_t written_bytes = 0;
};
[[nodiscard]] Result<std::vector<DiskCounters>> parse_diskstats(std::string_view text);

// /proc/net/dev: bytes received and sent per interface.
struct NetCounters {
  std::string interface;
  uint64_t received_bytes = 0;
  uint64_t sent_bytes = 0;
};
[[nodiscard]] Result<std::vector<NetCounters>> parse_net_dev(std::string_view text);

// Per-second rate of a counter between two samples `seconds` apart; nullopt for a counter that went
// backwards (a device replaced) or no time passed.
[[nodiscard]] std::optional<double> rate_per_second(uint64_t before, uint64_t after, double seconds);

}  // namespace vigil::profiler
