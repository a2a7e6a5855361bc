#include "report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>
#include <set>

#include "html_page.h"  // plugins/rule_support
#include "statistics.h"
#include "svg.h"

namespace vigil::profiler_rules {

namespace {

using nlohmann::json;
using vigil::builtin::svg::format_number;
using vigil::builtin::svg::html_escape;
namespace svg = vigil::builtin::svg;

// Bounds that keep the page's size independent of the job's length.
constexpr size_t kTimelinePoints = 1000;   // per series
constexpr size_t kTimelineSeries = 16;     // per chart (the legend's height)
constexpr int kHistogramBins = 40;
constexpr size_t kOutliersListed = 50;     // per step key
constexpr size_t kOperatorBars = 20;
constexpr size_t kDetailRows = 200;        // per details table
constexpr size_t kBoxes = 40;              // per box plot
constexpr size_t kArrayValuesShown = 20;

constexpr const char* kStyle = R"css(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin-top: 1.5em; } nav ul { columns: 3; } .meta { color: #555; }
.nodata { color: #777; font-style: italic; } .violation { color: #b00020; font-weight: bold; } .ok { color: #1b7f3b; }
.verdict { font-size: 1.2em; }
table.data { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
table.data th, table.data td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; vertical-align: top; }
table.data th { background: #f3f3f3; } table.data td:first-child, table.data td.text { text-align: left; }
table.sortable th { cursor: pointer; } table.sortable th:hover { background: #e6e6e6; }
details.rule { border: 1px solid #ddd; border-radius: 4px; padding: 0.3em 0.8em; margin: 0.8em 0; }
details.rule > summary { cursor: pointer; font-weight: bold; font-size: 1.1em; }
svg.chart { display: block; margin: 1em 0; font-size: 11px; } svg.chart text { fill: #333; }
svg.chart .grid { stroke: #e5e5e5; } svg.chart .tick, svg.chart .axis { stroke: #555; }
svg.chart .frame { fill: none; stroke: #999; } svg.chart .bar { fill: #1f77b4; } svg.chart .bar.marked { fill: #d62728; }
svg.chart .whisker { stroke: #333; } svg.chart .median { stroke: #ff7f0e; stroke-width: 2; } svg.chart .p95 { fill: #d62728; }
svg.chart .axis-label { font-size: 12px; font-weight: bold; }
)css";

// Records script errors in the DOM before anything else runs, so that a browser test can read them.
constexpr const char* kErrorHook = R"js(
window.onerror = function (message, source, line) {
  var root = document.documentElement;
  var before = root.getAttribute("data-script-errors");
  root.setAttribute("data-script-errors", (before ? before + "; " : "") + message + " (line " + line + ")");
};
)js";

// The page's one interaction: a click on a header of the rules table sorts by that column (again:
// the other way). The marker at the end says the script ran to completion.
constexpr const char* kScript = R"js(
(function () {
  function key(cell, numeric) {
    if (!numeric) return cell.textContent.toLowerCase();
    var v = parseFloat(cell.getAttribute("data-value"));
    return isNaN(v) ? -Infinity : v;
  }
  function sortBy(table, column, head) {
    var numeric = head.getAttribute("data-type") === "number";
    var descending = head.getAttribute("data-order") !== "desc";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
      return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("data-order");
    head.setAttribute("data-order", descending ? "desc" : "asc");
  }
  var table = document.getElementById("rules-table");
  if (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (head, column) {
      head.addEventListener("click", function () { sortBy(table, column, head); });
    });
  }
  document.body.dataset.rendered = "ok";
})();
)js";

// ---- text ---------------------------------------------------------------------------------------

// A value in a table: "n/a" rather than "nan" for a statistic that has no data.
std::string value_text(double v) { return std::isnan(v) ? "n/a" : format_number(v); }

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  const double a = std::fabs(seconds);
  const std::string sign = seconds < 0 ? "-" : "";
  if (a < 1e-3) return fmt::format("{}{:.3g} µs", sign, a * 1e6);
  if (a < 1) return fmt::format("{}{:.3g} ms", sign, a * 1e3);
  if (a < 60) return fmt::format("{}{:.3g} s", sign, a);
  const auto total = static_cast<int64_t>(std::llround(a));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  return h ? fmt::format("{}{} h {:02} min {:02} s", sign, h, m, s) : fmt::format("{}{} min {:02} s", sign, m, s);
}

std::string timestamp_text(double epoch_s) {
  if (!std::isfinite(epoch_s)) return "n/a";
  const auto t = static_cast<std::time_t>(std::floor(epoch_s));
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return format_number(epoch_s);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// Details' numbers get 12 significant digits: they include epoch seconds and microseconds.
std::string json_scalar_text(const json& v) {
  if (v.is_null()) return "n/a";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) {
    const double x = v.get<double>();
    return std::isfinite(x) ? fmt::format("{:.12g}", x) : value_text(x);
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}


// ---- page ---------------------------------------------------------------------------------------

using Page = builtin::HtmlPage;

const RuleSummary* find_rule(const ReportData& d, const std::string& name) {
  for (const auto& r : d.rules)
    if (r.name == name) return &r;
  return nullptr;
}

// Per-rule sections in the order of the report's sections (§3.13); rules not listed follow in the
// data's order. OverallSystemUsage and OverallFrameworkMetrics have their own sections.
struct RuleHeading {
  const char* rule;
  const char* heading;
};
constexpr RuleHeading kRuleHeadings[] = {
    {"StepOutlier", "Step duration outliers"},     {"Dataloader", "Data loading"},
    {"LowGPUUtilization", "GPU utilisation"},      {"BatchSize", "Batch size"},
    {"CPUBottleneck", "CPU bottlenecks"},          {"IOBottleneck", "I/O bottlenecks"},
    {"LoadBalancing", "Load balancing"},           {"GPUMemoryIncrease", "GPU memory"},
    {"MaxInitializationTime", "Initialisation time"},
};
bool has_own_section(const std::string& rule) { return rule == "OverallSystemUsage" || rule == "OverallFrameworkMetrics"; }

// ---- Details (rule-specific JSON) ---------------------------------------------------------------

// A Details tree flattened into what the page shows: box statistics (a box plot and a table), tables
// of objects that hold numbers only (one table per set of keys), and the remaining values by path.
struct FlatDetails {
  struct Row {
    std::string path;
    std::vector<std::pair<std::string, std::string>> cells;
  };
  std::vector<svg::Box> boxes;
  std::vector<Row> box_rows;
  std::map<std::vector<std::string>, std::vector<Row>> numeric_tables;  // keys -> rows
  std::vector<std::pair<std::string, std::string>> values;               // path -> text
};

// Statistics columns from the smallest to the largest (Details' keys come sorted by name).
int statistic_rank(const std::string& key) {
  static const char* const kOrder[] = {"lower", "min", "p05", "p5", "gpu_5", "p25", "p50", "mean", "p75",
                                       "p95", "gpu_95", "p99", "max", "gpu_max", "upper"};
  for (size_t i = 0; i < std::size(kOrder); ++i)
    if (key == kOrder[i]) return static_cast<int>(i);
  return static_cast<int>(std::size(kOrder));
}

// An object's items in statistics order, the others after them by name.
std::vector<std::pair<std::string, const json*>> ordered_items(const json& v) {
  std::vector<std::pair<std::string, const json*>> items;
  for (const auto& [k, x] : v.items()) items.emplace_back(k, &x);
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return statistic_rank(a.first) < statistic_rank(b.first); });
  return items;
}

bool is_box(const json& v) {
  return v.is_object() && v.contains("p25") && v.contains("p50") && v.contains("p75") && v["p25"].is_number() &&
         v["p50"].is_number() && v["p75"].is_number();
}

bool numbers_only(const json& v) {
  if (!v.is_object() || v.empty()) return false;
  return std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number() || x.is_null(); });
}

std::string join_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + " / " + key; }

std::string array_text(const json& a) {
  if (a.empty()) return "(none)";
  std::string out = a.size() > kArrayValuesShown ? fmt::format("{} values: ", a.size()) : "";
  for (size_t i = 0; i < a.size() && i < kArrayValuesShown; ++i) out += (i ? ", " : "") + json_scalar_text(a[i]);
  if (a.size() > kArrayValuesShown) out += ", …";
  return out;
}

void flatten(const json& v, const std::string& path, FlatDetails& out) {
  const auto number = [](const json& x) { return x.is_number() ? x.get<double>() : NAN; };
  if (is_box(v)) {
    FlatDetails::Row row{path, {}};
    for (const auto& [k, x] : ordered_items(v)) row.cells.emplace_back(k, json_scalar_text(*x));
    out.box_rows.push_back(std::move(row));
    const double p25 = number(v["p25"]), p75 = number(v["p75"]);
    // Without the rule's own whiskers, Tukey's: 1.5 IQR beyond the quartiles (builtin-rules §1.4).
    const double lower = v.contains("lower") ? number(v["lower"]) : p25 - 1.5 * (p75 - p25);
    const double upper = v.contains("upper") ? number(v["upper"]) : p75 + 1.5 * (p75 - p25);
    std::optional<double> p95;
    if (v.contains("p95") && v["p95"].is_number()) p95 = number(v["p95"]);
    out.boxes.push_back({path.empty() ? "(all)" : path, lower, p25, number(v["p50"]), p75, upper, p95});
    return;
  }
  if (numbers_only(v)) {
    std::vector<std::string> keys;
    FlatDetails::Row row{path, {}};
    for (const auto& [k, x] : ordered_items(v)) {
      keys.push_back(k);
      row.cells.emplace_back(k, json_scalar_text(*x));
    }
    out.numeric_tables[keys].push_back(std::move(row));
    return;
  }
  if (v.is_object()) {
    if (v.empty()) out.values.emplace_back(path, "(empty)");
    for (const auto& [k, x] : v.items()) flatten(x, join_path(path, k), out);
    return;
  }
  if (v.is_array()) {
    const bool scalars = std::all_of(v.begin(), v.end(), [](const json& x) { return !x.is_structured(); });
    if (scalars) {
      out.values.emplace_back(path, array_text(v));
    } else {
      for (size_t i = 0; i < v.size(); ++i) flatten(v[i], join_path(path, std::to_string(i)), out);
    }
    return;
  }
  out.values.emplace_back(path, json_scalar_text(v));
}

// Rows beyond kDetailRows are counted, not shown.
void cut_note(Page& page, size_t total) {
  if (total > kDetailRows)
    page.add(fmt::format("<p class=\"meta\">{} more rows not shown.</p>\n", total - kDetailRows));
}

void render_details(Page& page, const RuleSummary& rule) {
  FlatDetails flat;
  flatten(rule.details, "", flat);
  if (flat.boxes.empty() && flat.numeric_tables.empty() && flat.values.empty()) {
    page.note("nodata", "No data", "the rule recorded no details");
    return;
  }
  if (!flat.boxes.empty()) {
    std::vector<svg::Box> boxes(flat.boxes.begin(), flat.boxes.begin() + std::min(flat.boxes.size(), kBoxes));
    page.add(svg::box_plot({.title = rule.name + ": box statistics", .y_label = "value"}, boxes));
    if (flat.boxes.size() > kBoxes)
      page.add(fmt::format("<p class=\"meta\">The plot shows the first {} of {} entries; the table lists them all.</p>\n",
                           kBoxes, flat.boxes.size()));
  }
  // Box rows and numeric objects: one table per set of keys, columns in the keys' order.
  std::map<std::vector<std::string>, std::vector<FlatDetails::Row>> tables = flat.numeric_tables;
  for (auto& row : flat.box_rows) {
    std::vector<std::string> keys;
    for (const auto& [k, _] : row.cells) keys.push_back(k);
    tables[keys].push_back(row);
  }
  for (const auto& [keys, rows] : tables) {
    std::vector<std::string> header{"Entry"};
    header.insert(header.end(), keys.begin(), keys.end());
    std::vector<std::vector<std::string>> cells;
    for (size_t i = 0; i < rows.size() && i < kDetailRows; ++i) {
      std::vector<std::string> r{rows[i].path.empty() ? "(all)" : rows[i].path};
      for (const auto& [_, text] : rows[i].cells) r.push_back(text);
      cells.push_back(std::move(r));
    }
    page.table(header, cells);
    cut_note(page, rows.size());
  }
  if (!flat.values.empty()) {
    std::vector<std::vector<std::string>> cells;
    for (size_t i = 0; i < flat.values.size() && i < kDetailRows; ++i)
      cells.push_back({flat.values[i].first.empty() ? "(value)" : flat.values[i].first, flat.values[i].second});
    page.table({"Detail", "Value"}, cells);
    cut_note(page, flat.values.size());
  }
}

// ---- sections -----------------------------------------------------------------------------------

void section_summary(Page& page, const ReportData& d) {
  page.open_section("job-summary", "Training job summary");
  const bool any = d.job_start_s || d.job_end_s || d.first_step_start_s || d.last_step_end_s;
  if (!any) {
    page.note("nodata", "No data", "no system metrics and no step events were recorded, so the job's start, end and phases are unknown");
    page.close_section();
    return;
  }
  const auto ts = [](const std::optional<double>& t) { return t ? timestamp_text(*t) : std::string("n/a"); };
  const auto span = [](const std::optional<double>& a, const std::optional<double>& b) {
    return a && b ? std::optional<double>(*b - *a) : std::nullopt;
  };
  const auto init = span(d.job_start_s, d.first_step_start_s), loop = span(d.first_step_start_s, d.last_step_end_s),
             fin = span(d.last_step_end_s, d.job_end_s), total = span(d.job_start_s, d.job_end_s);
  const auto dur = [](const std::optional<double>& s) { return s ? duration_text(*s) : std::string("n/a"); };
  const auto share = [&](const std::optional<double>& s) {
    return s && total && *total > 0 ? fmt::format("{:.1f} %", 100 * *s / *total) : std::string("n/a");
  };
  page.table({"Event", "Time"}, {{"Job start", ts(d.job_start_s)},
                                 {"First step start", ts(d.first_step_start_s)},
                                 {"Last step end", ts(d.last_step_end_s)},
                                 {"Job end", ts(d.job_end_s)}});
  page.table({"Phase", "Duration", "Share of the job"}, {{"Initialisation", dur(init), share(init)},
                                                         {"Training loop", dur(loop), share(loop)},
                                                         {"Finalisation", dur(fin), share(fin)},
                                                         {"Total", dur(total), share(total)}});
  if (init && loop && fin)
    page.add(svg::bar_chart({.title = "Job phases", .y_label = "seconds"},
                            {{"Initialisation", *init}, {"Training loop", *loop}, {"Finalisation", *fin}}, true));
  else
    page.paragraph("The phases need both the system metrics (job start and end) and the step events (first and last step).");
  page.close_section();
}

struct TimelineSpec {
  const std::vector<TimeSeries> ReportData::*series;
  const char* title;
  const char* y_label;
  const char* missing;
  bool percent;
};

void timeline_chart(Page& page, const ReportData& d, const TimelineSpec& spec) {
  const auto& all = d.*spec.series;
  std::vector<svg::Series> drawn;
  double top = 0;
  for (const auto& s : all) {
    bool finite = false;
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) finite = true, top = std::max(top, y);
    if (finite && drawn.size() < kTimelineSeries) drawn.push_back({s.label, s.points});
  }
  page.heading(spec.title);
  if (drawn.empty()) {
    page.note("nodata", "No data", spec.missing);
    return;
  }
  svg::Axes axes{.title = spec.title, .x_label = "time since the job's first sample", .y_label = spec.y_label};
  if (spec.percent) axes.y_range = std::pair{0.0, std::max(100.0, std::ceil(top))};
  page.add(svg::timeline(axes, drawn, kTimelinePoints));
  if (all.size() > drawn.size())
    page.add(fmt::format("<p class=\"meta\">{} of {} series drawn.</p>\n", drawn.size(), all.size()));
}

void section_system(Page& page, const ReportData& d) {
  page.open_section("system-usage", "System usage");
  if (const RuleSummary* r = find_rule(d, "OverallSystemUsage")) {
    page.paragraph("Statistics per metric and node, from OverallSystemUsage.");
    if (r->no_data_reason) page.note("nodata", "No data", *r->no_data_reason);
    else render_details(page, *r);
  } else {
    page.note("nodata", "No data", "the OverallSystemUsage rule did not report");
  }
  static const TimelineSpec kSpecs[] = {
      {&ReportData::cpu, "CPU utilisation", "percent", "no CPU utilisation samples were recorded", true},
      {&ReportData::gpu, "GPU utilisation", "percent", "no GPU utilisation samples were recorded (no GPU, or no GPU metrics)", true},
      {&ReportData::gpu_memory, "GPU memory utilisation", "percent", "no GPU memory samples were recorded", true},
      {&ReportData::memory, "CPU memory used", "percent", "no CPU memory samples were recorded", true},
      {&ReportData::io_wait, "I/O wait", "percent", "no I/O wait samples were recorded", true},
      {&ReportData::network, "Network", "value", "no network samples were recorded", false},
      {&ReportData::disk, "Disk", "value", "no disk samples were recorded", false},
  };
  for (const auto& spec : kSpecs) timeline_chart(page, d, spec);
  page.close_section();
}

// Horizontal bars of total times (µs in, seconds shown), largest first; beyond `limit` the rest is one bar.
void time_bars(Page& page, const std::string& title, const std::map<std::string, double>& times, size_t limit) {
  std::vector<std::pair<std::string, double>> sorted;
  double total = 0;
  for (const auto& [k, v] : times)
    if (std::isfinite(v)) sorted.emplace_back(k, v), total += v;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<svg::Bar> bars;
  std::vector<std::vector<std::string>> rows;
  double rest = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i < limit) {
      bars.push_back({sorted[i].first, sorted[i].second / 1e6});
      rows.push_back({sorted[i].first, duration_text(sorted[i].second / 1e6),
                      total > 0 ? fmt::format("{:.1f} %", 100 * sorted[i].second / total) : "n/a"});
    } else {
      rest += sorted[i].second;
    }
  }
  if (sorted.size() > limit) {
    const std::string label = fmt::format("{} others", sorted.size() - limit);
    bars.push_back({label, rest / 1e6});
    rows.push_back({label, duration_text(rest / 1e6), total > 0 ? fmt::format("{:.1f} %", 100 * rest / total) : "n/a"});
  }
  page.add(svg::bar_chart({.title = title, .y_label = "total time (s)"}, bars, true));
  page.table({"Name", "Total time", "Share"}, rows);
}

void section_framework(Page& page, const ReportData& d) {
  page.open_section("framework-metrics", "Framework metrics");
  page.heading("Time per training phase");
  if (d.phase_time_us.empty()) page.note("nodata", "No data", "no framework events were recorded");
  else time_bars(page, "Time per training phase", d.phase_time_us, kOperatorBars);
  page.heading("Time per operator");
  if (d.operator_time_us.empty()) page.note("nodata", "No data", "no framework events were recorded");
  else time_bars(page, "Time per operator", d.operator_time_us, kOperatorBars);
  if (const RuleSummary* r = find_rule(d, "OverallFrameworkMetrics")) {
    page.heading("OverallFrameworkMetrics");
    if (r->no_data_reason) page.note("nodata", "No data", *r->no_data_reason);
    else render_details(page, *r);
  }
  page.close_section();
}

std::string verdict_html(const RuleSummary& r) {
  if (r.no_data_reason) return "<span class=\"nodata\">No data: " + html_escape(*r.no_data_reason) + "</span>";
  return r.triggered > 0 ? "<span class=\"violation\">Triggered</span>" : "<span class=\"ok\">Not triggered</span>";
}

std::string rule_anchor(size_t index) { return fmt::format("rule-{}", index); }

void section_rules(Page& page, const ReportData& d) {
  page.open_section("rules-summary", "Rules summary");
  if (d.rules.empty()) {
    page.note("nodata", "No data", "no rule reported");
    page.close_section();
    return;
  }
  page.paragraph("The rules sorted by the number of times they triggered; click a column header to sort by it.");
  std::vector<size_t> order(d.rules.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d.rules[a].triggered > d.rules[b].triggered; });
  std::string t = "<table class=\"data sortable\" id=\"rules-table\">\n<thead><tr><th>Rule</th><th>Verdict</th>"
                  "<th data-type=\"number\">Triggered</th><th data-type=\"number\">Violations</th>"
                  "<th data-type=\"number\">Datapoints</th><th>Parameters</th><th>Description</th></tr></thead>\n<tbody>\n";
  for (size_t i : order) {
    const RuleSummary& r = d.rules[i];
    std::string params;
    size_t start = 0;
    while (start <= r.parameters.size()) {
      const size_t end = std::min(r.parameters.find('\n', start), r.parameters.size());
      const std::string line = r.parameters.substr(start, end - start);
      if (!line.empty()) params += (params.empty() ? "" : "<br/>") + html_escape(line);
      start = end + 1;
    }
    const std::string name = has_own_section(r.name) ? html_escape(r.name)
                                                     : fmt::format("<a href=\"#{}\">{}</a>", rule_anchor(i), html_escape(r.name));
    t += fmt::format("<tr><td>{}</td><td class=\"text\">{}</td><td data-value=\"{}\">{}</td><td data-value=\"{}\">{}</td>"
                     "<td data-value=\"{}\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>\n",
                     name, verdict_html(r), r.triggered, r.triggered, r.violations, r.violations, r.datapoints,
                     r.datapoints, params.empty() ? "(defaults)" : params, html_escape(r.description));
  }
  page.add(t + "</tbody>\n</table>\n");
  page.close_section();
}

void stats_table(Page& page, std::vector<double> values, const std::string& unit_note) {
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  page.table({"Count", "Mean", "Min", "p50", "p95", "p99", "Max"},
             {{std::to_string(values.size()), duration_text(sum / static_cast<double>(values.size())),
               duration_text(values.front()), duration_text(builtin::quantile_sorted(values, 0.50)),
               duration_text(builtin::quantile_sorted(values, 0.95)), duration_text(builtin::quantile_sorted(values, 0.99)),
               duration_text(values.back())}});
  if (!unit_note.empty()) page.paragraph(unit_note);
}

void section_steps(Page& page, const ReportData& d) {
  page.open_section("step-durations", "Step durations");
  bool any = false;
  for (const auto& [key, steps] : d.step_durations) {
    std::vector<double> all, plain, outliers;
    std::vector<std::pair<int64_t, double>> listed;
    const auto found = d.outlier_steps.find(key);
    const std::set<int64_t> outlier_set = found == d.outlier_steps.end()
                                              ? std::set<int64_t>{}
                                              : std::set<int64_t>(found->second.begin(), found->second.end());
    for (const auto& [step, seconds] : steps) {
      if (!std::isfinite(seconds)) continue;
      all.push_back(seconds);
      if (outlier_set.count(step)) outliers.push_back(seconds), listed.emplace_back(step, seconds);
      else plain.push_back(seconds);
    }
    if (all.empty()) continue;
    any = true;
    page.heading(key);
    page.add(svg::histogram({.title = "Step durations: " + key, .x_label = "step duration (s)", .y_label = "steps"}, plain,
                            outliers, kHistogramBins));
    stats_table(page, all, "");
    if (listed.empty()) {
      page.paragraph("No outlier steps.");
      continue;
    }
    page.paragraph(fmt::format("{} outlier steps (red in the histogram){}:", listed.size(),
                               listed.size() > kOutliersListed ? fmt::format(", the {} longest listed", kOutliersListed) : ""));
    std::stable_sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < listed.size() && i < kOutliersListed; ++i)
      rows.push_back({std::to_string(listed[i].first), duration_text(listed[i].second)});
    page.table({"Step", "Duration"}, rows);
  }
  if (!any) page.note("nodata", "No data", "no step events (Step:ModeKeys) were recorded");

  page.heading("Data loading");
  std::vector<double> loads;
  for (double v : d.dataloader_durations_s)
    if (std::isfinite(v)) loads.push_back(v);
  if (loads.empty()) {
    page.note("nodata", "No data", "no data-loader events were recorded");
  } else {
    page.add(svg::histogram({.title = "Data-loader times", .x_label = "data-loader time (s)", .y_label = "events"}, loads,
                            {}, kHistogramBins));
    stats_table(page, loads, "");
  }
  page.close_section();
}

void rule_block(Page& page, const RuleSummary& r, size_t index, const std::string& heading) {
  page.add(fmt::format("<details class=\"rule\" id=\"{}\" open=\"open\">\n<summary>{}</summary>\n", rule_anchor(index),
                       html_escape(heading)));
  page.add("<p>" + verdict_html(r) + "</p>\n");
  if (!r.description.empty()) page.paragraph(r.description);
  page.table({"Triggered", "Violations", "Datapoints"},
             {{std::to_string(r.triggered), std::to_string(r.violations), std::to_string(r.datapoints)}});
  // Without data the verdict line above already gives the reason.
  if (!r.no_data_reason) render_details(page, r);
  page.add("</details>\n");
}

void section_rule_details(Page& page, const ReportData& d) {
  page.open_section("rule-details", "Rule details");
  std::vector<bool> shown(d.rules.size(), false);
  for (size_t i = 0; i < d.rules.size(); ++i) shown[i] = has_own_section(d.rules[i].name);
  for (const auto& h : kRuleHeadings)
    for (size_t i = 0; i < d.rules.size(); ++i)
      if (!shown[i] && d.rules[i].name == h.rule) {
        rule_block(page, d.rules[i], i, fmt::format("{} ({})", h.heading, h.rule));
        shown[i] = true;
      }
  for (size_t i = 0; i < d.rules.size(); ++i)
    if (!shown[i]) rule_block(page, d.rules[i], i, d.rules[i].name);
  if (d.rules.empty()) page.note("nodata", "No data", "no rule reported");
  page.close_section();
}

std::string verdict_banner(const std::string& verdict) {
  if (verdict == "IssuesFound") return "<p class=\"verdict violation\">Issues found</p>\n";
  if (verdict == "NoIssuesFound") return "<p class=\"verdict ok\">No issues found</p>\n";
  if (verdict == "InProgress") return "<p class=\"verdict\">In progress: the job is still being analysed</p>\n";
  return "<p class=\"verdict\">Verdict: " + html_escape(verdict.empty() ? "unknown" : verdict) + "</p>\n";
}

}  // namespace

std::string render_profiler_report_html(const ReportData& d) {
  Page page;
  section_summary(page, d);
  section_system(page, d);
  section_framework(page, d);
  section_rules(page, d);
  section_steps(page, d);
  section_rule_details(page, d);
  const std::string title = "Profiler report" + (d.title.empty() ? "" : ": " + d.title);
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  out += "<meta name=\"generator\" content=\"Vigil ProfilerReport\"/>\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n";
  out += std::string("<script>") + kErrorHook + "</script>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(title) + "</h1>\n" + verdict_banner(d.verdict);
  out += "<p class=\"meta\">Written by Vigil's ProfilerReport rule from the job's system metrics and framework events. "
         "Self-contained: every chart is inline SVG.</p>\n";
  out += "<nav>\n<ul>\n" + page.toc() + "</ul>\n</nav>\n";
  out += page.body();
  out += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace vigil::profiler_rules
