// ReportData samples for ProfilerReport's page: the unit tests (profiler_report_html_test.cpp) and
// the browser check (write_profiler_report_sample.cpp) render the same data.
#pragma once

#include <string>

#include "report_data.h"

namespace vigil::test {

// A user string that must come out escaped wherever it appears (a node name and a parameter).
inline const std::string kHostileText = "<script>alert(1)</script>";

// Two nodes (algo-1 and kHostileText) with CPU, GPU, GPU-memory, memory and I/O-wait series (no
// network, no disk), three step keys (one with outliers), data-loader times, phase and operator
// times, and the eleven sub-rules with Details in the shapes of builtin-rules §3.1–3.12.
profiler_rules::ReportData sample_report_data();

// The page this sample gives has exactly this many charts (a test checks the count by section):
// job phases 1, timelines 5 (cpu, gpu, gpu memory, memory, I/O wait), phase and operator bars 2,
// step histograms 3, data-loader histogram 1, box plots 3 (LowGPUUtilization, BatchSize,
// GPUMemoryIncrease).
inline constexpr int kSampleCharts = 15;

// A job with nothing recorded: every rule has a no-data reason, no series, no steps.
profiler_rules::ReportData empty_report_data();

}  // namespace vigil::test
