// /proc parsing on fixed texts, and the rows computed from two samples.
#include "profiler/proc_stats.h"

#include "profiler/system_monitor.h"
#include "test_support.h"

namespace vigil::profiler {
namespace {

constexpr std::string_view kStatBefore =
    "cpu  100 0 100 700 100 0 0 0 0 0\n"
    "cpu0 50 0 50 350 50 0 0 0 0 0\n"
    "cpu1 50 0 50 350 50 0 0 0 0 0\n"
    "intr 12345 0 0\n"
    "ctxt 999\n"
    "btime 1700000000\n";
TEST(ProcStat, ParsesTotalAndCores) {
  auto s = parse_proc_stat(kStatBefore);
  ASSERT_VIGIL_OK(s);
  EXPECT_EQ(s->all.user, 100u);
  EXPECT_EQ(s->all.idle, 700u);
  EXPECT_EQ(s->all.iowait, 100u);
  EXPECT_EQ(s->all.total(), 1000u);
  EXPECT_EQ(s->all.busy(), 200u);
  ASSERT_EQ(s->cores.size(), 2u);
  EXPECT_EQ(s->cores[1].first, 1);
  EXPECT_EQ(s->cores[1].second.idle, 350u);
}

TEST(ProcStat, OldKernelsWithFourFieldsAndOfflineCores) {
  auto s = parse_proc_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu3 0 0 0 9\n");
  ASSERT_VIGIL_OK(s);
  EXPECT_EQ(s->all.total(), 10u);
  EXPECT_EQ(s->all.iowait, 0u);
  ASSERT_EQ(s->cores.size(), 2u);
  EXPECT_EQ(s->cores[1].first, 3);
}

TEST(ProcStat, RefusesMalformedText) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("intr 1 2\n"));
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 x 4\n"));
  EXPECT_FALSE(parse_proc_stat("cpu 1 2\n"));
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 3 4\ncpuX 1 2 3 4\n"));
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 3 4\ncpu-1 1 2 3 4\n"));
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 3 -4\n"));
}

TEST(ProcStat, UtilizationAndIoWait) {
  const CpuTicks before{100, 0, 100, 700, 100};
  const CpuTicks after{150, 0, 130, 780, 140};  // 200 ticks: 80 busy, 80 idle, 40 iowait
  EXPECT_DOUBLE_EQ(*cpu_utilization_percent(before, after), 40.0);
  EXPECT_DOUBLE_EQ(*iowait_percent(before, after), 20.0);
  EXPECT_FALSE(cpu_utilization_percent(after, after));   // no tick passed
  EXPECT_FALSE(cpu_utilization_percent(after, before));  // counters went backwards
}

constexpr std::string_view kMeminfo =
    "MemTotal:       16000000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:    4000000 kB\n"
    "Buffers:          500000 kB\n"
    "Cached:          2000000 kB\n"
    "HugePages_Total:       0\n";

TEST(Meminfo, UsedPercentFromMemAvailable) {
  auto m = parse_meminfo(kMeminfo);
  ASSERT_VIGIL_OK(m);
  EXPECT_EQ(m->total_kb, 16000000u);
  EXPECT_EQ(m->available_kb, 4000000u);
  EXPECT_DOUBLE_EQ(m->used_percent(), 75.0);
}

TEST(Meminfo, OldKernelsWithoutMemAvailable) {
  auto m = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 350 kB\n");
  ASSERT_VIGIL_OK(m);
  EXPECT_DOUBLE_EQ(m->used_percent(), 50.0);
  EXPECT_FALSE(parse_meminfo("MemFree: 100 kB\n"));
  EXPECT_FALSE(parse_meminfo("MemTotal: 0 kB\nMemFree: 0 kB\n"));
  EXPECT_FALSE(parse_meminfo("MemTotal: 100 kB\n"));
}

constexpr std::string_view kDiskstats =
    "   7       0 loop0 10 0 20 1 0 0 0 0 0 4 4 0 0 0 0\n"
    " 259       0 nvme0n1 5000 100 80000 900 2000 300 40000 800 0 1200 1700 0 0 0 0 0 0\n"
    " 259       1 nvme0n1p1 4000 100 60000 700 1500 300 30000 600 0 1000 1300 0 0 0 0\n"
    "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n";

TEST(Diskstats, BytesFromSectors) {
  auto d = parse_diskstats(kDiskstats);
  ASSERT_VIGIL_OK(d);
  ASSERT_EQ(d->size(), 4u);
  EXPECT_EQ((*d)[1].device, "nvme0n1");
  EXPECT_EQ((*d)[1].read_bytes, 80000u * 512);
  EXPECT_EQ((*d)[1].written_bytes, 40000u * 512);
  EXPECT_EQ((*d)[3].device, "sda");
  EXPECT_EQ((*d)[3].read_bytes, 3u * 512);
  EXPECT_EQ((*d)[3].written_bytes, 7u * 512);
  EXPECT_FALSE(parse_diskstats("8 0 sda 1 2 3\n"));
  EXPECT_FALSE(parse_diskstats("8 0 sda 1 2 x 4 5 6 7 8 9 10\n"));
  auto empty = parse_diskstats("\n");
  ASSERT_VIGIL_OK(empty);
  EXPECT_TRUE(empty->empty());
}

constexpr std::string_view kNetDev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
    "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
    "  eth0: 123456 100 0 0 0 0 0 0 654321 200 0 0 0 0 0 0\n"
    "docker0:5 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n";

TEST(NetDev, BytesPerInterface) {
  auto n = parse_net_dev(kNetDev);
  ASSERT_VIGIL_OK(n);
  ASSERT_EQ(n->size(), 3u);
  EXPECT_EQ((*n)[1].interface, "eth0");
  EXPECT_EQ((*n)[1].received_bytes, 123456u);
  EXPECT_EQ((*n)[1].sent_bytes, 654321u);
  EXPECT_EQ((*n)[2].interface, "docker0");  // no space after a long name's colon
  EXPECT_EQ((*n)[2].sent_bytes, 7u);
  EXPECT_FALSE(parse_net_dev("eth0: 1 2 3\n"));
  EXPECT_FALSE(parse_net_dev("eth0: 1 2 3 4 5 6 7 8 x 1\n"));
}

TEST(Rates, PerSecond) {
  EXPECT_DOUBLE_EQ(*rate_per_second(100, 1100, 0.5), 2000.0);
  EXPECT_FALSE(rate_per_second(100, 50, 1));
  EXPECT_FALSE(rate_per_second(100, 200, 0));
}

const SystemMetric* find_row(const std::vector<SystemMetric>& rows, std::string_view name, std::string_view dimension) {
  for (const auto& r : rows)
    if (r.name == name && r.dimension == dimension) return &r;
  return nullptr;
}

TEST(SystemMetrics, RowsBetweenTwoSamples) {
  HostSample before, after;
  before.monotonic_s = 10;
  after.monotonic_s = 12;
  before.cpu = *parse_proc_stat(kStatBefore);
  after.cpu = *parse_proc_stat(
      "cpu  200 0 200 1400 200 0 0 0\n"
      "cpu0 100 0 100 350 50 0 0 0\n"     // 100 ticks, all busy
      "cpu1 50 0 50 650 250 0 0 0\n");    // 500 ticks: 300 idle, 200 iowait
  after.memory = MemorySample{1000, 250};
  before.disks = std::vector<DiskCounters>{{"sda", 1000, 2000}, {"sdb", 0, 0}};
  after.disks = std::vector<DiskCounters>{{"sda", 3000, 2000}, {"sdc", 999999, 999999}};  // sdc is new
  before.networks = std::vector<NetCounters>{{"eth0", 0, 100}};
  after.networks = std::vector<NetCounters>{{"eth0", 4000, 100}};
  after.gpus = {GpuSample{0, 87, 41.5}, GpuSample{1, 0, 2}};

  const auto rows = system_metrics_between(before, after);
  auto value = [&](std::string_view name, std::string_view dim) -> double {
    const auto* r = find_row(rows, name, dim);
    EXPECT_NE(r, nullptr) << name << " " << dim;
    return r ? r->value : -1;
  };
  EXPECT_DOUBLE_EQ(value("cpu0", "CPUUtilization"), 100.0);
  EXPECT_DOUBLE_EQ(value("cpu0", "I/OWaitPercentage"), 0.0);
  EXPECT_DOUBLE_EQ(value("cpu1", "CPUUtilization"), 0.0);
  EXPECT_DOUBLE_EQ(value("cpu1", "I/OWaitPercentage"), 40.0);
  EXPECT_DOUBLE_EQ(value("cpu", "TotalCPUUtilization"), 20.0);  // 200 busy of 1000
  EXPECT_DOUBLE_EQ(value("MemoryUsedPercent", "MemoryUsedPercent"), 75.0);
  EXPECT_DOUBLE_EQ(value("disk", "ReadBytesPerSecond"), 1000.0);
  EXPECT_DOUBLE_EQ(value("disk", "WriteBytesPerSecond"), 0.0);
  EXPECT_DOUBLE_EQ(value("network", "ReceiveBytesPerSecond"), 2000.0);
  EXPECT_DOUBLE_EQ(value("network", "TransmitBytesPerSecond"), 0.0);
  EXPECT_DOUBLE_EQ(value("gpu0", "GPUUtilization"), 87.0);
  EXPECT_DOUBLE_EQ(value("gpu0", "GPUMemoryUtilization"), 41.5);
  EXPECT_DOUBLE_EQ(value("gpu1", "GPUUtilization"), 0.0);
  for (const auto& r : rows) {
    if (r.name.starts_with("cpu")) {
      EXPECT_EQ(r.type, "cpu");
    }
    if (r.name.starts_with("gpu")) {
      EXPECT_EQ(r.type, "gpu");
    }
  }
  EXPECT_EQ(find_row(rows, "MemoryUsedPercent", "MemoryUsedPercent")->type, "memory");
  EXPECT_EQ(rows.size(), 4u + 1 + 1 + 2 + 2 + 4);
}

TEST(SystemMetrics, MissingSourcesGiveNoRows) {
  HostSample before, after;
  after.monotonic_s = 1;
  EXPECT_TRUE(system_metrics_between(before, after).empty());
}

}  // namespace
}  // namespace vigil::profiler
