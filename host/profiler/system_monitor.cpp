#include "profiler/system_monitor.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "common/file_read.h"
#include "common/os.h"

namespace vigil::profiler {
namespace {

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The counters of `after` summed over the names also in `before`, so that a device that appears or
// vanishes between samples does not look like a burst.
template <typename Counter, typename Field>
std::optional<double> summed_rate(const std::vector<Counter>& before, const std::vector<Counter>& after,
                                  std::string Counter::*name, Field field, double seconds) {
  uint64_t sum_before = 0, sum_after = 0;
  for (const auto& a : after)
    for (const auto& b : before)
      if (a.*name == b.*name) {
        if (a.*field < b.*field) return std::nullopt;
        sum_before += b.*field;
        sum_after += a.*field;
      }
  return rate_per_second(sum_before, sum_after, seconds);
}

}  // namespace

std::vector<SystemMetric> system_metrics_between(const HostSample& before, const HostSample& after) {
  std::vector<SystemMetric> rows;
  if (before.cpu && after.cpu) {
    for (const auto& [core, ticks] : after.cpu->cores) {
      for (const auto& [old_core, old_ticks] : before.cpu->cores) {
        if (old_core != core) continue;
        const std::string name = fmt::format("cpu{}", core);
        if (auto busy = cpu_utilization_percent(old_ticks, ticks)) rows.push_back({"cpu", name, "CPUUtilization", *busy});
        if (auto wait = iowait_percent(old_ticks, ticks)) rows.push_back({"cpu", name, "I/OWaitPercentage", *wait});
      }
    }
    if (auto busy = cpu_utilization_percent(before.cpu->all, after.cpu->all))
      rows.push_back({"cpu", "cpu", "TotalCPUUtilization", *busy});
  }
  if (after.memory) rows.push_back({"memory", "MemoryUsedPercent", "MemoryUsedPercent", after.memory->used_percent()});
  const double seconds = after.monotonic_s - before.monotonic_s;
  if (before.disks && after.disks) {
    if (auto r = summed_rate(*before.disks, *after.disks, &DiskCounters::device, &DiskCounters::read_bytes, seconds))
      rows.push_back({"disk", "disk", "ReadBytesPerSecond", *r});
    if (auto w = summed_rate(*before.disks, *after.disks, &DiskCounters::device, &DiskCounters::written_bytes, seconds))
      rows.push_back({"disk", "disk", "WriteBytesPerSecond", *w});
  }
  if (before.networks && after.networks) {
    if (auto r = summed_rate(*before.networks, *after.networks, &NetCounters::interface, &NetCounters::received_bytes,
                             seconds))
      rows.push_back({"network", "network", "ReceiveBytesPerSecond", *r});
    if (auto s = summed_rate(*before.networks, *after.networks, &NetCounters::interface, &NetCounters::sent_bytes, seconds))
      rows.push_back({"network", "network", "TransmitBytesPerSecond", *s});
  }
  for (const auto& gpu : after.gpus) {
    const std::string name = fmt::format("gpu{}", gpu.index);
    rows.push_back({"gpu", name, "GPUUtilization", gpu.utilization_percent});
    rows.push_back({"gpu", name, "GPUMemoryUtilization", gpu.memory_used_percent});
  }
  return rows;
}

SystemMonitorOptions system_monitor_options(const ProfilerConfig& config) {
  SystemMonitorOptions options;
  options.root = config.local_path;
  options.interval = std::chrono::milliseconds(config.interval_ms);
  options.rotate_max_file_size_bytes = config.rotate_max_file_size_bytes;
  options.rotate_file_close_interval_s = config.rotate_file_close_interval_s;
  return options;
}

SystemMonitor::SystemMonitor(SystemMonitorOptions options) : options_(std::move(options)) {}

SystemMonitor::~SystemMonitor() { stop(); }

void SystemMonitor::log(const std::string& message) noexcept {
  try {
    if (options_.on_log) options_.on_log(message);
    else std::fprintf(stderr, "vigil: system monitor: %s\n", message.c_str());
  } catch (...) {
    // A logger that throws must not take the training process down with it.
  }
}

bool SystemMonitor::start() {
  if (started_) return false;
  started_ = true;
  try {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
    return true;
  } catch (const std::exception& e) {
    log(fmt::format("cannot start the sampling thread: {}; no system metrics", e.what()));
    stepped_aside_ = true;
    return false;
  }
}

void SystemMonitor::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(wait_mutex_);
    thread_.request_stop();
  }
  wake_.notify_all();
  thread_.join();
}

void SystemMonitor::run(std::stop_token stop) noexcept {
  os::block_sigpipe_on_this_thread();
  os::name_this_thread("vigil-monitor");
  try {
    sample_loop(stop);
  } catch (const std::exception& e) {
    log(fmt::format("stopped by an internal error: {}", e.what()));
    stepped_aside_ = true;
  } catch (...) {
    log("stopped by an internal error");
    stepped_aside_ = true;
  }
}

bool SystemMonitor::counted_disk(const std::string& device) const {
  if (physical_disks_) return std::find(physical_disks_->begin(), physical_disks_->end(), device) != physical_disks_->end();
  // Without /sys/block: every device but the virtual ones (partitions may then count twice).
  return !(device.starts_with("loop") || device.starts_with("ram") || device.starts_with("zram"));
}

HostSample SystemMonitor::take_sample() {
  HostSample sample;
  sample.timestamp_s = seconds_since_epoch();
  sample.monotonic_s = monotonic_seconds();
  // Each source, read and parsed; the first failure is logged and the source dropped.
  auto read_source = [&](bool& failed, const char* relative, auto parse, auto& into) {
    if (failed) return;
    const auto path = options_.proc_root / relative;
    auto text = read_whole_file(path);
    auto parsed = text ? parse(*text) : decltype(parse(std::string_view{}))(fail(std::move(text.error())));
    if (!parsed) {
      failed = true;
      log(fmt::format("{}; no rows from {} from now on", parsed.error().message, path.string()));
      return;
    }
    into = std::move(*parsed);
  };
  read_source(cpu_failed_, "stat", parse_proc_stat, sample.cpu);
  read_source(memory_failed_, "meminfo", parse_meminfo, sample.memory);
  read_source(disk_failed_, "diskstats", parse_diskstats, sample.disks);
  read_source(network_failed_, "net/dev", parse_net_dev, sample.networks);
  if (sample.disks) std::erase_if(*sample.disks, [&](const DiskCounters& d) { return !counted_disk(d.device); });
  if (sample.networks) std::erase_if(*sample.networks, [](const NetCounters& n) { return n.interface == "lo"; });
  if (gpus_ && !gpu_failed_) {
    auto gpus = gpus_->sample();
    if (gpus) {
      sample.gpus = std::move(*gpus);
    } else {
      gpu_failed_ = true;
      log(fmt::format("{}; no GPU rows from now on", gpus.error().message));
    }
  }
  return sample;
}

void SystemMonitor::sample_loop(std::stop_token stop) {
  SystemNodeNames names{options_.node_id, options_.file_host};
  if (names.node_id.empty() || names.file_host.empty()) {
    auto host = current_host_from_resource_config(options_.resource_config);
    if (!host) log(fmt::format("{}; using the hostname", host.error().message));
    const auto derived = system_node_names(host ? *host : std::nullopt, local_hostname());
    if (names.node_id.empty()) names.node_id = derived.node_id;
    if (names.file_host.empty()) names.file_host = derived.file_host;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(options_.sys_block, ec)) {
    physical_disks_.emplace();
    for (const auto& entry : std::filesystem::directory_iterator(options_.sys_block, ec))
      if (std::filesystem::exists(entry.path() / "device", ec)) physical_disks_->push_back(entry.path().filename());
  }
  if (!options_.nvml_library.empty()) {
    auto gpus = NvmlGpus::open(options_.nvml_library);
    if (gpus) gpus_ = std::move(*gpus);
    else log(fmt::format("no GPU metrics: {}", gpus.error().message));
  }
  SystemMetricsWriter writer({options_.root, names.node_id, names.file_host, options_.rotate_max_file_size_bytes,
                              options_.rotate_file_close_interval_s});
  HostSample previous = take_sample();
  auto next = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    next += options_.interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + options_.interval;  // behind (a suspended process): skip, not burst
    {
      std::unique_lock lock(wait_mutex_);
      if (wake_.wait_until(lock, stop, next, [] { return false; }) || stop.stop_requested()) break;
    }
    HostSample current = take_sample();
    const auto rows = system_metrics_between(previous, current);
    previous = std::move(current);
    if (auto written = writer.write(previous.timestamp_s, rows); !written) {
      log(fmt::format("{}; the system monitor stops", written.error().message));
      stepped_aside_ = true;
      return;
    }
    ++samples_written_;
  }
  if (auto closed = writer.close(); !closed) {
    log(fmt::format("{}; the last system metrics file is lost", closed.error().message));
    stepped_aside_ = true;
  }
}

}  // namespace vigil::profiler
