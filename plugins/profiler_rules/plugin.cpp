// The "profiler" family plugin: SageMaker's profiler rules (builtin-rules §3), one VIGIL_PLUGIN.
#include "descriptions.h"
#include "rules.h"

using namespace vigil::profiler_rules;

VIGIL_PLUGIN("vigil.builtin.profiler", "1.0.0",
             VIGIL_RULE(EngineRule<BatchSize>, "vigil.builtin.BatchSize", "BatchSize", kBatchSizeDescription),
             VIGIL_RULE(EngineRule<CpuBottleneck>, "vigil.builtin.CPUBottleneck", "CPUBottleneck",
                        kCpuBottleneckDescription),
             VIGIL_RULE(EngineRule<Dataloader>, "vigil.builtin.Dataloader", "Dataloader", kDataloaderDescription),
             VIGIL_RULE(EngineRule<GpuMemoryIncrease>, "vigil.builtin.GPUMemoryIncrease", "GPUMemoryIncrease",
                        kGpuMemoryIncreaseDescription),
             VIGIL_RULE(EngineRule<IoBottleneck>, "vigil.builtin.IOBottleneck", "IOBottleneck",
                        kIoBottleneckDescription),
             VIGIL_RULE(EngineRule<LoadBalancing>, "vigil.builtin.LoadBalancing", "LoadBalancing",
                        kLoadBalancingDescription),
             VIGIL_RULE(EngineRule<LowGpuUtilization>, "vigil.builtin.LowGPUUtilization", "LowGPUUtilization",
                        kLowGpuUtilizationDescription),
             VIGIL_RULE(EngineRule<MaxInitializationTime>, "vigil.builtin.MaxInitializationTime",
                        "MaxInitializationTime", kMaxInitializationTimeDescription),
             VIGIL_RULE(EngineRule<OverallSystemUsage>, "vigil.builtin.OverallSystemUsage", "OverallSystemUsage",
                        kOverallSystemUsageDescription),
             VIGIL_RULE(EngineRule<StepOutlier>, "vigil.builtin.StepOutlier", "StepOutlier", kStepOutlierDescription),
             VIGIL_RULE(EngineRule<OverallFrameworkMetrics>, "vigil.builtin.OverallFrameworkMetrics",
                        "OverallFrameworkMetrics", kOverallFrameworkMetricsDescription),
             VIGIL_RULE(ProfilerReport, "vigil.builtin.ProfilerReport", "ProfilerReport", kProfilerReportDescription));
