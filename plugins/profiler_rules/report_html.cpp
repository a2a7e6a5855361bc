// PLACEHOLDER, replaced at merge: a trivial page (title, verdict and each rule's counters) so that
// ProfilerReport has something to write until the real renderer lands.
#include "report_html.h"

#include <fmt/format.h>

namespace vigil::profiler_rules {

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}
}  // namespace

std::string render_profiler_report_html(const ReportData& data) {
  std::string html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>" + escape(data.title) +
                     "</title></head><body><h1>" + escape(data.title) + "</h1><p>" + escape(data.verdict) +
                     "</p><table><tr><th>Rule</th><th>Triggered</th><th>Violations</th><th>Datapoints</th></tr>";
  for (const RuleSummary& r : data.rules)
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", escape(r.name), r.triggered,
                        r.violations, r.datapoints);
  return html + "</table></body></html>\n";
}

}  // namespace vigil::profiler_rules
