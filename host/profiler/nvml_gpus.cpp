#include "profiler/nvml_gpus.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace vigil::profiler {
namespace {

// The few NVML declarations used, from its stable C ABI (nvml.h): return code 0 is NVML_SUCCESS.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned gpu;
  unsigned memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

struct NvmlGpus::Api {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*device_count)(unsigned*) = nullptr;
  NvmlReturn (*device_by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;

  std::string describe(NvmlReturn code) const {
    const char* text = error_string ? error_string(code) : nullptr;
    return text ? fmt::format("{} (NVML error {})", text, code) : fmt::format("NVML error {}", code);
  }
};

Result<std::unique_ptr<NvmlGpus>> NvmlGpus::open(std::string_view library) {
  void* handle = ::dlopen(std::string(library).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return fail(Error::not_supported(fmt::format("cannot load {}: {}", library, why ? why : "unknown error")));
  }
  auto api = std::make_unique<Api>();
  auto resolve = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(handle, name));
    return slot != nullptr;
  };
  const bool complete = resolve(api->init, "nvmlInit_v2") && resolve(api->shutdown, "nvmlShutdown") &&
                        resolve(api->device_count, "nvmlDeviceGetCount_v2") &&
                        resolve(api->device_by_index, "nvmlDeviceGetHandleByIndex_v2") &&
                        resolve(api->utilization, "nvmlDeviceGetUtilizationRates") &&
                        resolve(api->memory, "nvmlDeviceGetMemoryInfo");
  (void)resolve(api->error_string, "nvmlErrorString");
  if (!complete) {
    ::dlclose(handle);
    return fail(Error::not_supported(fmt::format("{} lacks the NVML functions Vigil uses", library)));
  }
  if (const NvmlReturn r = api->init(); r != 0) {
    const std::string why = api->describe(r);
    ::dlclose(handle);
    return fail(Error::not_supported(fmt::format("nvmlInit failed: {}", why)));
  }
  unsigned count = 0;
  if (const NvmlReturn r = api->device_count(&count); r != 0 || count == 0) {
    const std::string why = r != 0 ? api->describe(r) : std::string("no devices");
    api->shutdown();
    ::dlclose(handle);
    return fail(Error::not_supported(fmt::format("NVML found no GPU: {}", why)));
  }
  return std::unique_ptr<NvmlGpus>(new NvmlGpus(handle, std::move(api), count));
}

NvmlGpus::NvmlGpus(void* handle, std::unique_ptr<Api> api, unsigned count)
    : handle_(handle), api_(std::move(api)), device_count_(count) {}

NvmlGpus::~NvmlGpus() {
  api_->shutdown();
  ::dlclose(handle_);
}

Result<std::vector<GpuSample>> NvmlGpus::sample() {
  std::vector<GpuSample> samples;
  std::string last_error;
  for (unsigned i = 0; i < device_count_; ++i) {
    NvmlDevice device = nullptr;
    NvmlUtilization utilization{};
    NvmlMemory memory{};
    NvmlReturn r = api_->device_by_index(i, &device);
    if (r == 0) r = api_->utilization(device, &utilization);
    if (r == 0) r = api_->memory(device, &memory);
    if (r != 0) {
      last_error = fmt::format("GPU {}: {}", i, api_->describe(r));
      continue;
    }
    const double used = memory.total ? 100.0 * double(memory.used) / double(memory.total) : 0.0;
    samples.push_back(GpuSample{i, double(utilization.gpu), used});
  }
  if (samples.empty()) return fail(Error::io("NVML", last_error));
  return samples;
}

}  // namespace vigil::profiler
