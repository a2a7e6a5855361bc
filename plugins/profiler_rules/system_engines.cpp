// The rules over system metrics (builtin-rules §3.1-§3.6, §3.10).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engines.h"
#include "statistics.h"

namespace vigil::profiler_rules {

namespace {

constexpr const char* kGpuUtil = "GPUUtilization";
constexpr const char* kGpuMem = "GPUMemoryUtilization";
constexpr const char* kCpuUtil = "CPUUtilization";
constexpr size_t kListedBottlenecks = 1000;  // Details lists the latest ones only (the count is complete)

// The last `n` values (all when fewer).
std::vector<double> last(const std::vector<double>& v, int64_t n) {
  const size_t k = std::min(v.size(), static_cast<size_t>(std::max<int64_t>(n, 0)));
  return {v.end() - static_cast<std::ptrdiff_t>(k), v.end()};
}

std::string ts_key(double ts) { return fmt::format("{}", ts); }

}  // namespace

// ---- CPUBottleneck / IOBottleneck ----------------------------------------------------------------

bool Bottleneck::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  (void)w;
  begin_window();
  std::map<double, std::vector<double>> gpu, other;  // this window's snapshots
  for (const sdk::SystemMetric& e : events.system) {
    // A new snapshot starts when the timestamp moves by more than 20 ms (any dimension counts).
    if (std::abs(cur_snap_ - e.timestamp_s) > 0.02) {
      cur_snap_ = e.timestamp_s;
      ++datapoints_;
    }
    if (e.dimension == kGpuUtil) seen_gpu_ = true;
    if (e.dimension == kGpuUtil && e.value < c_.gpu_threshold) {
      auto [it, inserted] = gpu.try_emplace(cur_snap_);
      if (inserted) ++low_gpu_;
      it->second.push_back(e.value);
    } else if (e.dimension == dimension_ && e.value > c_.other_threshold) {
      other[cur_snap_].push_back(e.value);
    }
  }
  std::vector<double> window_bottlenecks;
  for (const auto& [snap, g] : gpu) {
    const auto it = other.find(snap);
    if (it == other.end()) continue;
    bottlenecks_[snap] = {static_cast<int64_t>(g.size()), static_cast<int64_t>(it->second.size())};
    window_bottlenecks.push_back(snap);
  }

  violations_ = static_cast<int64_t>(bottlenecks_.size());
  nlohmann::json listed = nlohmann::json::object();
  size_t skip = bottlenecks_.size() > kListedBottlenecks ? bottlenecks_.size() - kListedBottlenecks : 0;
  for (const auto& [snap, counts] : bottlenecks_) {
    if (skip > 0) {
      --skip;
      continue;
    }
    listed[ts_key(snap)] = {{"GPUs", counts.first}, {other_key_, counts.second}};
  }
  details_["bottlenecks"] = std::move(listed);
  details_["low_gpu_utilization"] = low_gpu_;

  if (!seen_gpu_) {
    cannot_judge("no GPU utilisation samples (a machine without GPUs?)");
    return false;
  }
  if (datapoints_ <= c_.patience) {
    cannot_judge(fmt::format("{} snapshots so far; the rule judges after more than patience = {}", datapoints_,
                             c_.patience));
    return false;
  }
  judged();
  const double ratio = 100.0 * static_cast<double>(bottlenecks_.size()) / static_cast<double>(datapoints_);
  details_["bottleneck_percent"] = ratio;
  // Not sticky: recomputed from the cumulative ratio every window (§3.1).
  if (!(ratio > c_.threshold)) return false;
  ++triggered_;
  FrameworkMetrics m;
  for (double snap : window_bottlenecks)
    add_events_containing(m, events.framework, static_cast<int64_t>(std::llround(snap * 1e6)));
  const nlohmann::json fm = m.to_json();
  for (const auto& [k, v] : fm.items()) details_[k] = v;
  fire({{"metric", fmt::format("snapshots with a GPU below {} % and {} above {} (% of snapshots)", c_.gpu_threshold,
                               dimension_, c_.other_threshold)},
        {"observed", ratio},
        {"threshold", c_.threshold},
        {"bottlenecks", bottlenecks_.size()},
        {"datapoints", datapoints_},
        {"window_bottlenecks", window_bottlenecks.size()}});
  return true;
}

// ---- LowGPUUtilization -----------------------------------------------------------------------------

bool LowGpuUtilization::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  begin_window();
  for (const sdk::SystemMetric& e : events.system)
    if (e.dimension == kGpuUtil) vals_[e.node_id][e.name].push_back(e.value);
  bool any = false;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [node, gpus] : vals_) {
    for (const auto& [gpu, v] : gpus) {
      datapoints_ = static_cast<int64_t>(v.size());
      if (static_cast<int64_t>(v.size()) <= c_.patience) continue;
      any = true;
      std::vector<double> recent = last(v, c_.window);
      std::sort(recent.begin(), recent.end());
      const double p95 = builtin::quantile_sorted(recent, 0.95);
      const double p5 = builtin::quantile_sorted(recent, 0.05);
      const char* kind = nullptr;
      if (p95 < c_.threshold_p95) kind = "under-utilised";
      else if (p95 > c_.threshold_p95 && p5 < c_.threshold_p5) kind = "fluctuating";
      if (!kind) continue;  // p95 == threshold_p95 is neither (§3.3)
      ++triggered_;
      ++violations_;
      nlohmann::json d = box_json(v);
      d["gpu_max"] = recent.back();
      d["gpu_95"] = p95;
      d["gpu_5"] = p5;
      details_[node][gpu] = std::move(d);
      details_["last_timestamp"] = w.start_us;
      items.push_back({{"node", node}, {"gpu", gpu}, {"kind", kind}, {"p95", p95}, {"p5", p5}});
    }
  }
  if (any) judged();
  else if (vals_.empty()) cannot_judge("no GPU utilisation samples (a machine without GPUs?)");
  else cannot_judge(fmt::format("no GPU has more than patience = {} samples yet", c_.patience));
  if (!items.empty())
    fire({{"metric", "GPUUtilization p95 and p5 over the latest window samples"},
          {"observed", items.front()["p95"]},
          {"threshold", c_.threshold_p95},
          {"threshold_p5", c_.threshold_p5},
          {"violations", items}});
  return fire_sticky();
}

// ---- GPUMemoryIncrease -------------------------------------------------------------------------------

bool GpuMemoryIncrease::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  begin_window();
  struct Latest {
    size_t len;
    double increase;
  };
  std::map<std::pair<std::string, std::string>, Latest> latest;  // this window's last violation per GPU
  const auto W = static_cast<size_t>(c_.window);
  for (const sdk::SystemMetric& e : events.system) {
    if (e.dimension != kGpuMem) continue;
    std::vector<double>& v = vals_[e.node_id][e.name];
    v.push_back(e.value);
    const size_t n = v.size();
    datapoints_ = static_cast<int64_t>(n);
    if (n <= W + 1) continue;
    // mean(v[-W:]) - mean(v[-W-1:-2]): the second slice holds W - 1 values (§3.4, copied).
    const double recent = builtin::mean(std::span<const double>(v).subspan(n - W, W));
    const double before = builtin::mean(std::span<const double>(v).subspan(n - W - 1, W - 1));
    const double d = recent - before;
    if (d > c_.increase && static_cast<int64_t>(n) > c_.patience) {
      ++triggered_;
      ++violations_;
      latest[{e.node_id, e.name}] = {n, d};
      details_["last_timestamp"] = w.start_us;
    }
  }
  bool any = false;
  for (const auto& [node, gpus] : vals_)
    for (const auto& [gpu, v] : gpus)
      any = any || (v.size() > W + 1 && static_cast<int64_t>(v.size()) > c_.patience);
  if (any) judged();
  else if (vals_.empty()) cannot_judge("no GPU memory samples (a machine without GPUs?)");
  else cannot_judge(fmt::format("no GPU has more than patience = {} (and window + 1) samples yet", c_.patience));
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [key, l] : latest) {
    const std::vector<double>& v = vals_[key.first][key.second];
    const std::vector<double> prefix(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(l.len));
    nlohmann::json d = box_json(prefix, /*with_p05=*/true);
    d["increase"] = l.increase;
    d["gpu_max"] = *std::max_element(prefix.begin(), prefix.end());
    details_[key.first][key.second] = std::move(d);
    items.push_back({{"node", key.first}, {"gpu", key.second}, {"increase", l.increase}});
  }
  if (!items.empty())
    fire({{"metric", fmt::format("rise of the {}-sample moving average of GPUMemoryUtilization (percentage points)",
                                 c_.window)},
          {"observed", items.front()["increase"]},
          {"threshold", c_.increase},
          {"violations", items}});
  return fire_sticky();
}

// ---- BatchSize ------------------------------------------------------------------------------------

bool BatchSize::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  begin_window();
  if (!first_timestamp_us_) first_timestamp_us_ = w.first_timestamp_us;
  // Per node: the sum of the cores' values per exact timestamp, in first-seen order.
  std::map<std::string, std::pair<std::vector<double>, std::map<double, double>>> sums;
  for (const sdk::SystemMetric& e : events.system) {
    if (e.dimension == kCpuUtil) {
      cores_.insert(e.name);
      auto& [order, by_ts] = sums[e.node_id];
      auto [it, inserted] = by_ts.try_emplace(e.timestamp_s, 0.0);
      if (inserted) order.push_back(e.timestamp_s);
      it->second += e.value;
    } else if (e.dimension == kGpuUtil) {
      gpu_util_[e.node_id][e.name].push_back(e.value);
    } else if (e.dimension == kGpuMem) {
      gpu_mem_[e.node_id][e.name].push_back(e.value);
    }
  }
  // |cores| counts every core ever seen, on any node (§3.5).
  for (auto& [node, s] : sums)
    for (double ts : s.first) cpu_[node].push_back(s.second[ts] / static_cast<double>(cores_.size()));

  bool any = false;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [node, cpu] : cpu_) {
    datapoints_ = static_cast<int64_t>(cpu.size());
    const auto n = static_cast<int64_t>(cpu.size());
    if (!(n > c_.window && n > c_.patience) || gpu_util_.empty()) continue;
    any = true;
    const double c95 = builtin::quantile(last(cpu, c_.window), 0.95);
    if (!(c95 < c_.cpu_threshold_p95)) continue;
    // A node with CPU data but no GPU data crashes the original (KeyError); Vigil skips it.
    const auto util = gpu_util_.find(node);
    const auto mem = gpu_mem_.find(node);
    if (util == gpu_util_.end() || mem == gpu_mem_.end()) continue;
    for (const auto& [gpu, u] : util->second) {
      if (!(static_cast<int64_t>(u.size()) > c_.window)) continue;
      const auto m = mem->second.find(gpu);
      if (m == mem->second.end()) continue;
      const double g95 = builtin::quantile(last(u, c_.window), 0.95);
      const double m95 = builtin::quantile(last(m->second, c_.window), 0.95);
      if (!(g95 < c_.gpu_threshold_p95 && m95 < c_.gpu_memory_threshold_p95)) continue;
      ++triggered_;
      ++violations_;
      // (The original computes the memory box's IQR from the utilisation's p25, a report-only bug
      // Vigil does not copy.)
      details_[node]["cpu"] = box_json(cpu);
      details_[node][gpu] = box_json(u);
      details_[node][gpu + "_memory"] = box_json(m->second);
      details_["last_timestamp"] = c_.inside_report ? *first_timestamp_us_ : w.start_us;
      items.push_back({{"node", node}, {"gpu", gpu}, {"cpu_p95", c95}, {"gpu_p95", g95}, {"gpu_memory_p95", m95}});
    }
  }
  if (any) judged();
  else if (gpu_util_.empty()) cannot_judge("no GPU utilisation samples (a machine without GPUs?)");
  else cannot_judge(fmt::format("no node has more than window = {} and patience = {} CPU samples yet", c_.window,
                                c_.patience));
  if (!items.empty())
    fire({{"metric", "p95 of CPU, GPU and GPU memory utilisation over the latest window samples"},
          {"observed", items.front()["gpu_p95"]},
          {"threshold", c_.gpu_threshold_p95},
          {"cpu_threshold_p95", c_.cpu_threshold_p95},
          {"gpu_memory_threshold_p95", c_.gpu_memory_threshold_p95},
          {"violations", items}});
  return fire_sticky();
}

// ---- LoadBalancing (the intended algorithm; see its description) -------------------------------------

bool LoadBalancing::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  (void)w;
  begin_window();
  static const std::vector<double> edges = [] {
    std::vector<double> e;
    for (int i = 0; i <= kBins; ++i) e.push_back(2.0 * i);
    return e;
  }();
  for (const sdk::SystemMetric& e : events.system) {
    if (e.dimension != kGpuUtil) continue;
    Gpu& g = gpus_[e.node_id][e.name];
    ++g.samples;
    datapoints_ = g.samples;
    // Histograms over fixed edges add up, so the cumulative one needs no stored values; values
    // above 98 fall outside the last edge and are dropped, as np.histogram drops them.
    if (const int64_t bin = builtin::histogram_bin(edges, e.value); bin >= 0) g.counts[static_cast<size_t>(bin)] += 1;
  }
  bool any = false;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [node, gpus] : gpus_) {
    for (const auto& [gpu, g] : gpus) {
      nlohmann::json counts = nlohmann::json::array();
      for (double c : g.counts) counts.push_back(static_cast<int64_t>(c));
      details_[node]["workloads"][gpu] = std::move(counts);
    }
    for (auto a = gpus.begin(); a != gpus.end(); ++a) {
      for (auto b = std::next(a); b != gpus.end(); ++b) {
        if (!(a->second.samples > c_.patience && b->second.samples > c_.patience)) continue;
        any = true;
        const double d = builtin::jensen_shannon_distance(a->second.counts, b->second.counts);
        if (!(d > c_.threshold)) continue;  // NaN (a histogram with nothing in 0..98) never fires
        ++violations_;
        items.push_back({{"node", node}, {"gpus", {a->first, b->first}}, {"distance", d}});
      }
    }
  }
  if (any) judged();
  else if (gpus_.empty()) cannot_judge("no GPU utilisation samples (a machine without GPUs?)");
  else cannot_judge(fmt::format("no node has two GPUs with more than patience = {} samples each yet", c_.patience));
  if (!items.empty()) {
    ++triggered_;
    fire({{"metric", "Jensen-Shannon distance between two GPUs' utilisation histograms"},
          {"observed", items.front()["distance"]},
          {"threshold", c_.threshold},
          {"violations", items}});
  }
  return fire_sticky();
}

// ---- OverallSystemUsage ----------------------------------------------------------------------------

bool OverallSystemUsage::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  begin_window();
  for (const sdk::SystemMetric& e : events.system) {
    // A sample on the boundary with the previous window was summed there already: adding it again
    // would double its timestamp's sum (the original does; the report's figures would be wrong).
    if (summed_until_ns_ && static_cast<int64_t>(e.timestamp_s * 1e9) <= *summed_until_ns_) continue;
    const char* metric = nullptr;
    if (e.dimension == kGpuMem) {
      metric = "GPU memory";
    } else if (e.dimension == kGpuUtil) {
      metric = "GPU";
      gpus_.insert(e.name);
    } else if (e.name == "MemoryUsedPercent") {
      metric = "CPU memory";
    } else if (e.dimension == kCpuUtil) {
      metric = "CPU";
      cores_.insert(e.name);
      if (!first_cpu_node_) first_cpu_node_ = e.node_id;
    } else if (e.dimension == "Algorithm") {
      metric = "Network";
    } else if (e.dimension == "I/OWaitPercentage") {
      metric = "I/O";
    }
    if (metric) sums_[metric][e.node_id][e.timestamp_s] += e.value;
  }
  summed_until_ns_ = w.end_us * 1000;
  if (sums_.empty()) {
    cannot_judge("no system metrics yet");
    return false;
  }
  judged();
  for (const auto& [metric, nodes] : sums_) {
    const size_t n = metric == std::string("GPU") || metric == std::string("GPU memory") ? gpus_.size()
                     : metric == std::string("CPU") || metric == std::string("I/O")      ? cores_.size()
                                                                                         : 1;
    if (n == 0) continue;  // GPU memory without any GPUUtilization: the original divides by zero
    for (const auto& [node, by_ts] : nodes) {
      std::vector<double> v;
      v.reserve(by_ts.size());
      for (const auto& [ts, sum] : by_ts) v.push_back(sum / static_cast<double>(n));
      std::sort(v.begin(), v.end());
      const auto stat = [](double x) { return std::round(std::max(x, 0.0) * 100) / 100; };
      details_[metric][node] = {{"max", stat(v.back())},
                                {"p99", stat(builtin::quantile_sorted(v, 0.99))},
                                {"p95", stat(builtin::quantile_sorted(v, 0.95))},
                                {"p50", stat(builtin::quantile_sorted(v, 0.50))},
                                {"min", stat(v.front())}};
    }
  }
  if (first_cpu_node_) datapoints_ = static_cast<int64_t>(sums_["CPU"][*first_cpu_node_].size());
  return false;  // never fires (§3.10)
}

}  // namespace vigil::profiler_rules
