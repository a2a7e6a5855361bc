// One system metrics sample (format spec §8.6): a JSON line of the system/incremental/... files, as
// the system monitor writes it (system_metrics_writer.h) and the readers return it
// (system_metrics_reader.h).
#pragma once

#include <cstdint>
#include <string>

namespace vigil::profiler {

struct SystemMetric {
  std::string type;       // "cpu", "memory", "gpu", "disk", "network"
  std::string name;       // "cpu0", "gpu1", "MemoryUsedPercent"; "" where a line has none
  std::string dimension;  // "CPUUtilization", "GPUMemoryUtilization", ...
  double value = 0;
  // Where and when: read from each line; the writer stamps every row of a sample with its own.
  std::string node_id;     // "algo-1"
  double timestamp_s = 0;  // seconds since the epoch
  // The timestamp as smdebug compares it: whole ns, truncated.
  int64_t timestamp_ns() const { return int64_t(timestamp_s * 1e9); }

  friend bool operator==(const SystemMetric&, const SystemMetric&) = default;
};

}  // namespace vigil::profiler
