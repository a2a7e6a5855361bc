// ProfilerReport's HTML page (builtin-rules §3.13): one self-contained file (inline CSS, inline SVG
// charts, one small inline script that makes the rules table sortable), rendered from ReportData.
#pragma once

#include <string>

#include "report_data.h"

namespace vigil::profiler_rules {

// The whole page. Every text from the data is escaped; long series are downsampled and long lists
// cut, so the page stays bounded whatever the job's length. Absent data gives a "No data" note.
std::string render_profiler_report_html(const ReportData& data);

}  // namespace vigil::profiler_rules
