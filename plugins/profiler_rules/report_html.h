// PLACEHOLDER, replaced at merge: the real renderer of ProfilerReport's page is written in another
// worktree. Only the declaration below is the contract.
#pragma once

#include <string>

#include "report_data.h"

namespace vigil::profiler_rules {
std::string render_profiler_report_html(const ReportData& data);
}  // namespace vigil::profiler_rules
