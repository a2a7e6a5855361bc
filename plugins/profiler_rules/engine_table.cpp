// The engines' shared parts: the report object, box statistics, configs from parameters, and the
// table ProfilerReport runs.
#include <algorithm>
#include <cctype>

#include "engines.h"
#include "statistics.h"
#include <vigil/sdk/text.hpp>

namespace vigil::profiler_rules {

RuleSummary Engine::summary() const {
  RuleSummary s;
  s.name = std::string(name());
  s.description = summary_;
  s.triggered = triggered_;
  s.violations = violations_;
  s.datapoints = datapoints_;
  s.parameters = parameters_;
  s.details = details_;
  if (!ever_judged_) s.no_data_reason = not_judged_.value_or("no window was evaluated");
  return s;
}

nlohmann::json box_json(const std::vector<double>& values, bool with_p05, bool with_max) {
  const builtin::BoxStats b = builtin::box_statistics(values);
  nlohmann::json o = {{"p25", b.p25}, {"p50", b.p50}, {"p75", b.p75}, {"p95", b.p95},
                      {"upper", b.upper}, {"lower", b.lower}};
  if (with_p05) o["p05"] = b.p05;
  if (with_max) o["max"] = b.max;
  return o;
}

BottleneckConfig CpuBottleneck::config(const ParamValues& p) {
  return {p.number("threshold"), p.number("gpu_threshold"), p.number("cpu_threshold"), p.integer("patience")};
}
BottleneckConfig IoBottleneck::config(const ParamValues& p) {
  return {p.number("threshold"), p.number("gpu_threshold"), p.number("io_threshold"), p.integer("patience")};
}
LowGpuUtilizationConfig LowGpuUtilization::config(const ParamValues& p) {
  return {p.number("threshold_p95"), p.number("threshold_p5"), p.integer("window"), p.integer("patience")};
}
GpuMemoryIncreaseConfig GpuMemoryIncrease::config(const ParamValues& p) {
  return {p.number("increase"), p.integer("patience"), p.integer("window")};
}
BatchSizeConfig BatchSize::config(const ParamValues& p) {
  return {p.number("cpu_threshold_p95"), p.number("gpu_threshold_p95"), p.number("gpu_memory_threshold_p95"),
          p.integer("patience"), p.integer("window"), false};
}
LoadBalancingConfig LoadBalancing::config(const ParamValues& p) {
  return {p.number("threshold"), p.integer("patience")};
}
MaxInitializationTimeConfig MaxInitializationTime::config(const ParamValues& p) {
  return {p.number("threshold"), false};
}
StepOutlierConfig StepOutlier::config(const ParamValues& p) {
  return {p.number("stddev"), p.text("mode"), p.integer("n_outliers")};
}
DataloaderConfig Dataloader::config(const ParamValues& p) {
  return {p.number("min_threshold"), p.number("max_threshold"), p.integer("patience")};
}

namespace {

template <class E>
std::unique_ptr<Engine> make(const ParamValues& p, bool inside_report) {
  return std::make_unique<E>(build_engine<E>(p, inside_report));
}

template <class E>
constexpr EngineType entry(bool configurable = true) {
  return {E::kName, E::kParams, &make<E>, configurable};
}

// §3.13's order. OverallFrameworkMetrics has no rules-config class, so no keys name it.
constexpr EngineType kTypes[] = {
    entry<CpuBottleneck>(),         entry<IoBottleneck>(),       entry<LowGpuUtilization>(),
    entry<StepOutlier>(),           entry<GpuMemoryIncrease>(),  entry<BatchSize>(),
    entry<MaxInitializationTime>(), entry<LoadBalancing>(),      entry<OverallSystemUsage>(),
    entry<Dataloader>(),            entry<OverallFrameworkMetrics>(false),
};

}  // namespace

std::span<const EngineType> engine_types() { return kTypes; }

const EngineType* find_engine_type(std::string_view name) {
  for (const EngineType& t : kTypes) {
    const std::string_view n = t.name;
    if (sdk::iequals(n, name)) return &t;
  }
  return nullptr;
}

}  // namespace vigil::profiler_rules
