#include "profiler/proc_stats.h"

#include <charconv>

#include <fmt/format.h>

namespace vigil::profiler {
namespace {

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

template <typename Each>
void for_each_line(std::string_view text, Each each) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    each(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

std::optional<uint64_t> to_u64(std::string_view word) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

Error malformed(std::string_view file, std::string_view line) {
  return Error::invalid_argument(fmt::format("{}: malformed line '{}'", file, line.substr(0, 200)));
}

}  // namespace

Result<CpuSample> parse_proc_stat(std::string_view text) {
  CpuSample sample;
  bool saw_total = false;
  std::optional<Error> error;
  for_each_line(text, [&](std::string_view line) {
    if (error || !line.starts_with("cpu")) return;
    const auto words = split_words(line);
    // user nice system idle are there since Linux 2.6; iowait irq softirq steal may be absent.
    if (words.size() < 5) return error.emplace(malformed("/proc/stat", line)), void();
    uint64_t v[8] = {};
    for (size_t i = 1; i < words.size() && i <= 8; ++i) {
      const auto n = to_u64(words[i]);
      if (!n) return error.emplace(malformed("/proc/stat", line)), void();
      v[i - 1] = *n;
    }
    const CpuTicks ticks{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    const std::string_view name = words[0];
    if (name == "cpu") {
      sample.all = ticks;
      saw_total = true;
      return;
    }
    int index = -1;
    auto [end, ec] = std::from_chars(name.data() + 3, name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size() || index < 0)
      return error.emplace(malformed("/proc/stat", line)), void();
    sample.cores.emplace_back(index, ticks);
  });
  if (error) return fail(std::move(*error));
  if (!saw_total) return fail(Error::invalid_argument("/proc/stat: no 'cpu' line"));
  return sample;
}

namespace {
std::optional<double> share_percent(uint64_t part_before, uint64_t part_after, const CpuTicks& before,
                                    const CpuTicks& after) {
  if (after.total() <= before.total() || part_after < part_before) return std::nullopt;
  const double part = double(part_after - part_before);
  const double total = double(after.total() - before.total());
  return std::min(100.0, 100.0 * part / total);
}
}  // namespace

std::optional<double> cpu_utilization_percent(const CpuTicks& before, const CpuTicks& after) {
  return share_percent(before.busy(), after.busy(), before, after);
}

std::optional<double> iowait_percent(const CpuTicks& before, const CpuTicks& after) {
  return share_percent(before.iowait, after.iowait, before, after);
}

double MemorySample::used_percent() const {
  if (total_kb == 0) return 0;
  const uint64_t available = std::min(available_kb, total_kb);
  return 100.0 * double(total_kb - available) / double(total_kb);
}

Result<MemorySample> parse_meminfo(std::string_view text) {
  std::optional<uint64_t> total, available, free, buffers, cached;
  for_each_line(text, [&](std::string_view line) {
    const auto words = split_words(line);
    if (words.size() < 2) return;
    const auto value = to_u64(words[1]);
    if (!value) return;
    if (words[0] == "MemTotal:") total = value;
    else if (words[0] == "MemAvailable:") available = value;
    else if (words[0] == "MemFree:") free = value;
    else if (words[0] == "Buffers:") buffers = value;
    else if (words[0] == "Cached:") cached = value;
  });
  if (!total || *total == 0) return fail(Error::invalid_argument("/proc/meminfo: no MemTotal"));
  if (!available) {
    if (!free) return fail(Error::invalid_argument("/proc/meminfo: neither MemAvailable nor MemFree"));
    available = *free + buffers.value_or(0) + cached.value_or(0);
  }
  return MemorySample{*total, *available};
}

Result<std::vector<DiskCounters>> parse_diskstats(std::string_view text) {
  std::vector<DiskCounters> disks;
  std::optional<Error> error;
  for_each_line(text, [&](std::string_view line) {
    if (error) return;
    const auto words = split_words(line);
    if (words.empty()) return;
    // major minor name, then reads merged sectors_read ms writes merged sectors_written ...
    if (words.size() < 10) return error.emplace(malformed("/proc/diskstats", line)), void();
    const auto read = to_u64(words[5]);
    const auto written = to_u64(words[9]);
    if (!read || !written) return error.emplace(malformed("/proc/diskstats", line)), void();
    disks.push_back(DiskCounters{std::string(words[2]), *read * 512, *written * 512});
  });
  if (error) return fail(std::move(*error));
  return disks;
}

Result<std::vector<NetCounters>> parse_net_dev(std::string_view text) {
  std::vector<NetCounters> interfaces;
  std::optional<Error> error;
  for_each_line(text, [&](std::string_view line) {
    if (error) return;
    // Two header lines, then "  eth0: rx_bytes rx_packets ... (8 receive fields) tx_bytes ...".
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const auto name_words = split_words(line.substr(0, colon));
    const auto words = split_words(line.substr(colon + 1));
    if (name_words.size() != 1 || words.size() < 9) {
      if (line.find('|') != std::string_view::npos) return;  // a header line
      return error.emplace(malformed("/proc/net/dev", line)), void();
    }
    const auto received = to_u64(words[0]);
    const auto sent = to_u64(words[8]);
    if (!received || !sent) return error.emplace(malformed("/proc/net/dev", line)), void();
    interfaces.push_back(NetCounters{std::string(name_words[0]), *received, *sent});
  });
  if (error) return fail(std::move(*error));
  return interfaces;
}

std::optional<double> rate_per_second(uint64_t before, uint64_t after, double seconds) {
  if (after < before || !(seconds > 0)) return std::nullopt;
  return double(after - before) / seconds;
}

}  // namespace vigil::profiler
