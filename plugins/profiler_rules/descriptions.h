// The profiler rules' documentation (Markdown), published through their descriptors into docs/rules.md.
#pragma once

namespace vigil::profiler_rules {

#define VIGIL_PROFILER_WINDOWS                                                                                  \
  "**Windows.** The rule runs over the job's profiler data, not a tensor trial: invocation *k* covers "         \
  "[T0 + *k*·S, T0 + (*k*+1)·S] µs, with T0 the first system or framework file timestamp and S = "            \
  "`scan_interval_us`. System samples are kept when start ≤ timestamp ≤ end (a sample on a boundary is seen "   \
  "by both windows) and framework events when they overlap the window (an event spanning a boundary is seen "  \
  "twice), as in SageMaker. State is cumulative across windows. Parameters are checked as SageMaker's rules "   \
  "config checks them: percentiles in [0, 100], the other numbers > 0.\n\n"

inline constexpr const char* kCpuBottleneckDescription =
    "Detects GPUs that are idle while CPU cores are saturated (SageMaker's CPUBottleneck).\n\n" VIGIL_PROFILER_WINDOWS
    "**Snapshots.** System samples are grouped into snapshots: a new one starts when a sample's timestamp differs "
    "by more than 0.02 s from the current snapshot's; every sample counts, whatever its dimension (Datapoints = "
    "snapshots so far). A snapshot is a *bottleneck* when some GPU's `GPUUtilization` is below `gpu_threshold` and "
    "some core's `CPUUtilization` is above `cpu_threshold` (per core, not averaged).\n\n"
    "**Verdict.** A window fires when snapshots > `patience` and 100·bottlenecks/snapshots > `threshold` (both "
    "strict), over the cumulative counts. Not sticky: the ratio is recomputed every window. Without any GPU sample, "
    "or with too few snapshots, the window is not judged.\n\n"
    "**Defaults.** The implementation's: `patience` 1000 (SageMaker's docs say 100).\n\n"
    "**Report (inside ProfilerReport).** Violations = bottleneck snapshots, Details.bottlenecks (the latest 1000, "
    "with the counts of idle GPUs and busy cores), low_gpu_utilization, and the framework metrics (ratio, CPU, "
    "GPU, phase, general, forward_backward) of the events containing this window's bottleneck timestamps. The "
    "original's misaligned `ratio` labels are not copied.\n\n"
    "**Evidence.** The window, the bottleneck percentage, `threshold`, the snapshot and bottleneck counts.";

inline constexpr const char* kIoBottleneckDescription =
    "Detects GPUs that are idle while the CPU waits on I/O (SageMaker's IOBottleneck).\n\n" VIGIL_PROFILER_WINDOWS
    "**Verdict.** As CPUBottleneck, with the second condition `I/OWaitPercentage` > `io_threshold`: snapshots (a new "
    "one when the timestamp moves by more than 0.02 s) where some GPU is below `gpu_threshold` and the I/O wait is "
    "above `io_threshold` are bottlenecks, and a window fires when snapshots > `patience` and the cumulative "
    "bottleneck percentage > `threshold`. Not sticky. Without GPU samples or with too few snapshots the window is "
    "not judged.\n\n"
    "**Defaults.** The implementation's: `gpu_threshold` 10 (SageMaker's docs and docstring say 70).\n\n"
    "**Evidence.** The window, the bottleneck percentage, `threshold`, the snapshot and bottleneck counts.";

inline constexpr const char* kLowGpuUtilizationDescription =
    "Detects a GPU that is under-used or whose use fluctuates (SageMaker's LowGPUUtilization).\n\n" VIGIL_PROFILER_WINDOWS
    "**Verdict.** Every window, for each GPU of each node with more than `patience` `GPUUtilization` samples, the "
    "p95 and p5 (numpy's linear quantile) of its latest `window` samples are compared: p95 < `threshold_p95` is a "
    "violation (under-used); p95 > `threshold_p95` with p5 < `threshold_p5` is a violation (fluctuating); a p95 "
    "equal to `threshold_p95` is neither. Every GPU is judged again in every window, so a GPU that stays idle adds "
    "a violation per window. Sticky: once a violation happened, every later window fires. Without GPU samples, or "
    "with no GPU past `patience`, the window is not judged.\n\n"
    "**Report.** Details[node][gpu]: gpu_max, gpu_95, gpu_5 over the window, box statistics over all samples; "
    "last_timestamp.\n\n"
    "**Evidence.** The window and each violating GPU with its kind, p95 and p5, and both thresholds.";

inline constexpr const char* kGpuMemoryIncreaseDescription =
    "Detects a steady rise in GPU memory use (SageMaker's GPUMemoryIncrease).\n\n" VIGIL_PROFILER_WINDOWS
    "**Verdict.** For every `GPUMemoryUtilization` sample of a GPU (not once per window), with *v* the GPU's samples "
    "so far and *n* = |*v*| > `window` + 1: *d* = mean(last `window` samples) − mean(*v*[−`window`−1 : −2]). As in "
    "the original, the second slice holds `window` − 1 samples, ending two before the last. *d* > `increase` "
    "(absolute percentage points) with *n* > `patience` is a violation. Sticky. Without GPU memory samples or with "
    "too few, the window is not judged.\n\n"
    "**Defaults.** The implementation's: `increase` 5, `patience` 1000, `window` 10 (SageMaker's docs say 10, 100 "
    "and 500).\n\n"
    "**Report.** Details[node][gpu]: increase, gpu_max, p05, p25, p50, p75, p95, upper, lower; last_timestamp.\n\n"
    "**Evidence.** The window, each violating GPU's increase, and `increase`.";

inline constexpr const char* kBatchSizeDescription =
    "Detects CPU, GPU and GPU memory that are all under-used, which suggests a larger batch or a smaller instance "
    "(SageMaker's BatchSize).\n\n" VIGIL_PROFILER_WINDOWS
    "**Verdict.** Per node, the `CPUUtilization` values of each exact timestamp are summed and divided by the "
    "number of cores ever seen on any node. For a node with more than `window` and more than `patience` such "
    "averages whose p95 over the latest `window` is below `cpu_threshold_p95`, each GPU with more than `window` "
    "samples whose p95 utilisation is below `gpu_threshold_p95` and p95 memory below `gpu_memory_threshold_p95` "
    "(over their latest `window`) is a violation. Sticky. A node with CPU data but no GPU data crashes the "
    "original; Vigil skips it. Without GPU samples or with too few CPU samples, the window is not judged.\n\n"
    "**Defaults.** The implementation's: `patience` 1000 (SageMaker's docs say 100).\n\n"
    "**Report.** Details[node]: box statistics of cpu, of each gpu and of `<gpu>_memory` (the original computes the "
    "memory IQR from the utilisation's p25, a report-only bug not copied); last_timestamp (the window start, T0 "
    "inside ProfilerReport).\n\n"
    "**Evidence.** The window and each violating GPU's three p95 values with the thresholds.";

inline constexpr const char* kLoadBalancingDescription =
    "Detects GPUs of a node that carry different workloads (SageMaker's LoadBalancing, **as intended**).\n\n" VIGIL_PROFILER_WINDOWS
    "**Verdict.** Per GPU, a cumulative histogram of `GPUUtilization` with edges 0, 2, …, 98 (49 bins; values above "
    "98 are dropped, as np.histogram drops them). Each window, every pair of GPUs of a node that both have more "
    "than `patience` samples is compared by the Jensen–Shannon distance √(½KL(h₁‖m) + ½KL(h₂‖m)), m = (h₁ + h₂)/2, "
    "natural log, histograms normalised (scipy's entropy). A distance above `threshold` is a violation, and a "
    "window with one fires (RuleTriggered + 1). Sticky. A pair whose histogram is empty (all samples above 98) "
    "is not compared. With no such pair (one GPU, no GPU, too few samples), the window is not judged.\n\n"
    "**Deliberate divergence.** SageMaker's implementation never fires: an indentation slip compares every GPU "
    "with itself only (its test confirms 0 violations with threshold 0). Vigil implements the intended comparison "
    "of different GPUs.\n\n"
    "**Defaults.** The implementation's `threshold` 0.2 (the value inside ProfilerReport; SageMaker's rules config "
    "and docs use 0.5 when the rule runs on its own) and `patience` 1000 (the docs say 10).\n\n"
    "**Report.** Details[node].workloads[gpu]: the histogram counts.\n\n"
    "**Evidence.** The window and each unbalanced pair with its distance, and `threshold`.";

inline constexpr const char* kMaxInitializationTimeDescription =
    "Detects a training loop that has not started after too long (SageMaker's MaxInitializationTime).\n\n" VIGIL_PROFILER_WINDOWS
    "**Verdict.** A window fires when (window start − T0) > `threshold` minutes and no step event (\"Step:ModeKeys\" "
    "in the event name) has been seen yet, this window's included. Not sticky: once a step appears it stops firing. "
    "Inside ProfilerReport the original never advances the sub-rule's clock, so there it **can never fire**; Vigil "
    "copies this.\n\n"
    "**Report.** Datapoints = step events; Details: job_start and job_end (the first and last system timestamps, "
    "s), step_num.first and step_num.last (step start times, µs).\n\n"
    "**Evidence.** The window, the minutes elapsed and `threshold`.";

inline constexpr const char* kStepOutlierDescription =
    "Detects steps that take unusually long (SageMaker's StepOutlier).\n\n" VIGIL_PROFILER_WINDOWS
    "**Steps.** Events whose name contains \"Step:ModeKeys\", plus those named `mode` when it is set (`mode` adds "
    "events, it does not filter). Durations (s) and args.step_num are kept per node and event name; an event "
    "spanning a window boundary is counted in both windows, as in the original.\n\n"
    "**Verdict.** For each node and event name with more than 100 durations *v*: thr = mean(*v*) + `stddev`·std(*v*) "
    "(population std); the durations above thr are outliers. More than `n_outliers` outliers add them to Violations "
    "and fire (RuleTriggered + 1); every window re-judges the cumulative durations. Sticky. With no node past 100 "
    "durations, the window is not judged. Deprecated by SageMaker for TF ≥ 2.11 and PyTorch ≥ 2.0.\n\n"
    "**Defaults.** The implementation's: `stddev` 3 (SageMaker's docs say 5).\n\n"
    "**Report.** Details.step_details[node]: step_stats (mean, max, p99, p95, p50, min), number_of_outliers, phase, "
    "stddev (of the durations, 2 decimals), a 100-bin histogram of the other durations and the outlier steps; a later "
    "event name overwrites the node's entry. The framework metrics of this window's outlier steps.\n\n"
    "**Evidence.** The window and each firing node and phase with its outlier count, threshold, mean and std.";

inline constexpr const char* kDataloaderDescription =
    "Detects a number of parallel data-loader processes that does not suit the CPU cores (SageMaker's Dataloader; "
    "PyTorch only).\n\n" VIGIL_PROFILER_WINDOWS
    "**Data.** The cores are the `CPUUtilization` names of the first window that has any. Events of phase "
    "`DataLoaderIterInitialize` give pin_memory and num_workers; events of phase `DataLoaderWorker` or "
    "`DataLoaderIter` count as datapoints, give a duration, and their args.pid is counted per second of their "
    "start. TensorFlow's `DataIterator` events are ignored, as in the original.\n\n"
    "**Verdict.** After each window with such seconds, the numbers of distinct pids per second are appended to a "
    "cumulative list P (emptied beyond 1000 entries); med = int(median(P)), truncated. With |P| > `patience`, med "
    "< cores·`min_threshold`/100 is a violation, and so is med > cores·`max_threshold`/100. Sticky: any violation "
    "sets RuleTriggered = 1 and every later window fires. Before that, the window is not judged.\n\n"
    "**Parameters.** `patience` is the implementation's parameter; SageMaker's rules config does not expose it.\n\n"
    "**Report.** Details: pin_memory, num_workers, prefetch, cores, dataloaders (= med), dataloading_time (p25, p50, "
    "p95 and a 100-bin histogram).\n\n"
    "**Evidence.** The window, med, the crossed bound and the number of cores.";

inline constexpr const char* kOverallSystemUsageDescription =
    "Statistics of the system metrics; never fires (SageMaker's OverallSystemUsage).\n\n" VIGIL_PROFILER_WINDOWS
    "**Report.** Per node, the values of each exact timestamp are summed, cumulatively, for CPU (`CPUUtilization`), "
    "GPU (`GPUUtilization`), CPU memory (name `MemoryUsedPercent`), GPU memory (`GPUMemoryUtilization`), I/O "
    "(`I/OWaitPercentage`) and Network (dimension `Algorithm`). Details[metric][node] = max, p99, p95, p50 and min "
    "of the sums divided by the number of cores (CPU, I/O), of GPUs (GPU, GPU memory) or 1, clamped at 0 and "
    "rounded to 2 decimals. GPU memory without any GPU utilisation sample (a division by zero in the original) is "
    "left out. A sample on a window boundary arrives in both windows and is added twice to its timestamp's sum, as "
    "in the original. Datapoints = the timestamps of the first node with CPU data.";

inline constexpr const char* kOverallFrameworkMetricsDescription =
    "Where the framework's time goes; never fires (SageMaker's OverallFrameworkMetrics, which SageMaker runs only "
    "inside ProfilerReport).\n\n" VIGIL_PROFILER_WINDOWS
    "**Report.** Cumulative event time by category: operators of CPU phases (\"cpu\" in the phase) and GPU phases, "
    "step phases (\"Step\" in the phase, with the original's `others` = step span − Σ step phases / GPU phases, the "
    "sum including the previous `others`; with no GPU phase Vigil divides by 1 where the original divides by zero), "
    "forward and backward sub-modules, and the other phases (general). Details: ratio (each CPU/GPU phase's share "
    "of their total), CPU and GPU (operator shares above 2 %, renormalised), CPU_total and GPU_total (µs), phase, "
    "general and forward_backward (%). Horovod's events cannot be told apart (the host's events carry no file "
    "type), so `horovod` stays empty and they count as general.";

inline constexpr const char* kProfilerReportDescription =
    "Runs every profiler rule on the same data and writes SageMaker's profiling report (SageMaker's "
    "ProfilerReport).\n\n" VIGIL_PROFILER_WINDOWS
    "**Sub-rules,** in this order, with the implementation defaults: CPUBottleneck, IOBottleneck, "
    "LowGPUUtilization, StepOutlier, GPUMemoryIncrease, BatchSize, MaxInitializationTime (which can never fire "
    "here, as in the original), LoadBalancing (threshold 0.2, the intended algorithm), OverallSystemUsage, "
    "Dataloader, OverallFrameworkMetrics. The data of each window is read once and given to all of them.\n\n"
    "**Parameters.** `<RuleName>_<param>` keys override a sub-rule's parameter (`CPUBottleneck_cpu_threshold: "
    "\"80\"`); the rule name is case-insensitive and canonicalised. A key without `_`, an unknown rule (any of the "
    "ten above but OverallFrameworkMetrics), an unknown parameter or a value that fails the sub-rule's checks "
    "refuses the configuration, naming the key. `opt_out_telemetry` is accepted and ignored (Vigil sends "
    "nothing). SageMaker's newer nested `custom_rule_parameters` form is not read.\n\n"
    "**Verdict.** Never mid-run. When the data ends: IssuesFound if any sub-rule fired in any window, else "
    "NoIssuesFound. A sub-rule that fails is logged and left out (the original crashes the whole rule).\n\n"
    "**Output.** After every window, in `<output>/<configuration name>/profiler-output/`: "
    "`profiler-reports/<RuleName>.json` per sub-rule (RuleTriggered, Violations, Datapoints, RuleParameters as "
    "`name:value` lines, Details) and `profiler-report.html` (job summary, rules summary, system timelines, step "
    "durations and outliers, data-loader times, phase and operator totals), each written to a temporary file and "
    "renamed. No notebook is written.\n\n"
    "**Evidence.** At the end, the sub-rules that fired with their counts.";

#undef VIGIL_PROFILER_WINDOWS

}  // namespace vigil::profiler_rules
