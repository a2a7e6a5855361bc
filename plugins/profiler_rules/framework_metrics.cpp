#include "framework_metrics.h"

#include <algorithm>
#include <cctype>
#include <vigil/sdk/text.hpp>

namespace vigil::profiler_rules {

namespace {

using sdk::lower;

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Percent shares of a map's values (empty when they sum to 0).
nlohmann::json shares(const std::map<std::string, double>& m, double drop_at_or_below = -1) {
  double total = 0;
  for (const auto& [k, v] : m) total += v;
  nlohmann::json out = nlohmann::json::object();
  if (!(total > 0)) return out;
  std::map<std::string, double> kept;
  double kept_total = 0;
  for (const auto& [k, v] : m) {
    if (100 * v / total <= drop_at_or_below) continue;
    kept[k] = v;
    kept_total += v;
  }
  for (const auto& [k, v] : kept) out[k] = kept_total > 0 ? 100 * v / kept_total : 0.0;
  return out;
}

double sum_nested(const std::map<std::string, std::map<std::string, double>>& m) {
  double total = 0;
  for (const auto& [phase, ops] : m)
    for (const auto& [op, v] : ops) total += v;
  return total;
}

}  // namespace

std::optional<nlohmann::json> event_arg(const sdk::FrameworkEvent& e, const char* key) {
  if (e.args_json.find(key) == std::string::npos) return std::nullopt;  // most events: no parse
  const auto args = nlohmann::json::parse(e.args_json, nullptr, /*allow_exceptions=*/false);
  if (!args.is_object() || !args.contains(key)) return std::nullopt;
  return args[key];
}

std::optional<int64_t> event_step_num(const sdk::FrameworkEvent& e) {
  const auto v = event_arg(e, "step_num");
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<int64_t>();
  if (v->is_string()) {
    // Trace writers store args as strings ("12").
    try {
      return std::stoll(v->get<std::string>());
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void FrameworkMetrics::add(const sdk::FrameworkEvent& e) {
  const double dur = static_cast<double>(e.duration_us());
  const std::string phase = lower(e.phase);
  if (contains(phase, "cpu")) {
    cpu_[e.phase][e.name] += dur;
  } else if (contains(phase, "gpu")) {
    gpu_[e.phase][e.name] += dur;
  } else if (contains(e.phase, "Step")) {
    step_phases_[e.phase] += dur;
    if (with_others_ && event_step_num(e)) {
      first_step_start_ = std::min(first_step_start_.value_or(e.start_us), e.start_us);
      last_step_end_ = std::max(last_step_end_.value_or(e.end_us), e.end_us);
      // The sum includes the previous "others" and is divided by the number of GPU phases (§3.11:
      // copied). With no GPU phase the original divides by zero; Vigil divides by 1.
      double sum = 0;
      for (const auto& [k, v] : step_phases_) sum += v;
      const double gpu_count = gpu_.empty() ? 1.0 : static_cast<double>(gpu_.size());
      step_phases_["others"] = static_cast<double>(*last_step_end_ - *first_step_start_) - sum / gpu_count;
    }
  } else if (e.phase == "Forward-SubModuleInternal") {
    forward_ += dur;
  } else if (e.phase == "Backward-SubModuleInternal") {
    backward_ += dur;
  } else {
    // The extension carries no file type, so Horovod's events (file_type "" in smdebug) cannot be
    // told apart: every other phase counts as general.
    general_[e.phase] += dur;
  }
}

double FrameworkMetrics::cpu_total_us() const { return sum_nested(cpu_); }
double FrameworkMetrics::gpu_total_us() const { return sum_nested(gpu_); }

nlohmann::json FrameworkMetrics::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  // Each CPU/GPU phase's share of the CPU+GPU total. (smdebug's labels and values are misaligned
  // here, §3.12: a report-only bug that Vigil does not copy.)
  std::map<std::string, double> per_phase;
  for (const auto& [phase, ops] : cpu_)
    for (const auto& [op, v] : ops) per_phase[phase] += v;
  for (const auto& [phase, ops] : gpu_)
    for (const auto& [op, v] : ops) per_phase[phase] += v;
  out["ratio"] = shares(per_phase);
  const auto operators = [](const std::map<std::string, std::map<std::string, double>>& m) {
    std::map<std::string, double> by_op;
    for (const auto& [phase, ops] : m)
      for (const auto& [op, v] : ops) by_op[op] += v;
    return shares(by_op, 2.0);
  };
  out["CPU"] = operators(cpu_);
  out["CPU_total"] = cpu_total_us();
  out["GPU"] = operators(gpu_);
  out["GPU_total"] = gpu_total_us();
  out["phase"] = shares(step_phases_);
  out["general"] = shares(general_);
  out["forward_backward"] = shares({{"forward", forward_}, {"backward", backward_}});
  out["horovod"] = shares(horovod_, 2.0);
  return out;
}

void add_events_containing(FrameworkMetrics& m, std::span<const sdk::FrameworkEvent> events, int64_t b_us) {
  for (const auto& e : events)
    if (e.start_us < b_us && b_us < e.end_us) m.add(e);
}

void add_events_overlapping(FrameworkMetrics& m, std::span<const sdk::FrameworkEvent> events, int64_t b_us,
                            int64_t e_us) {
  for (const auto& e : events)
    if (e.end_us >= b_us && e.start_us <= e_us) m.add(e);
}

}  // namespace vigil::profiler_rules
