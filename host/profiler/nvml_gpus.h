// GPU utilisation and memory through NVML, opened at run time (dlopen) so that Vigil neither links
// nor needs the NVIDIA driver: on a machine without it, open() fails and the monitor writes no GPU
// rows.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::profiler {

struct GpuSample {
  unsigned index = 0;
  double utilization_percent = 0;  // nvmlDeviceGetUtilizationRates().gpu: time a kernel ran
  double memory_used_percent = 0;  // nvmlDeviceGetMemoryInfo(): used / total
};

class NvmlGpus {
 public:
  // Loads `library`, initialises NVML and counts the devices. NotSupported when the library is
  // absent or NVML finds no driver.
  [[nodiscard]] static Result<std::unique_ptr<NvmlGpus>> open(std::string_view library = "libnvidia-ml.so.1");
  ~NvmlGpus();
  NvmlGpus(const NvmlGpus&) = delete;
  NvmlGpus& operator=(const NvmlGpus&) = delete;

  unsigned device_count() const { return device_count_; }
  // One entry per device that answered; an error only when none did.
  [[nodiscard]] Result<std::vector<GpuSample>> sample();

 private:
  struct Api;
  NvmlGpus(void* handle, std::unique_ptr<Api> api, unsigned count);
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  unsigned device_count_ = 0;
};

}  // namespace vigil::profiler
