// ProfilerReport's page (plugins/profiler_rules/report_html.h) rendered from ReportData built here:
// markup balance, escaping of user strings, charts for present data and "No data" notes for absent
// data, the rules table's order, and a bounded size for very long jobs. The browser check of the
// same sample is the ctest rules_profiler_report_in_browser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "profiler_report_sample.h"
#include "report_html.h"
#include "svg.h"

namespace vigil {
namespace {

using profiler_rules::render_profiler_report_html;
using profiler_rules::ReportData;

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
  return n;
}

// The markup of <section id="id"> up to its end.
std::string section(const std::string& html, const std::string& id) {
  const size_t begin = html.find("<section id=\"" + id + "\">");
  if (begin == std::string::npos) return {};
  const size_t end = html.find("</section>", begin);
  return html.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The <details> block of the per-rule section whose summary names `rule`.
std::string rule_block(const std::string& html, const std::string& rule) {
  const size_t name = html.find("(" + rule + ")</summary>");
  if (name == std::string::npos) return {};
  const size_t begin = html.rfind("<details", name);
  return html.substr(begin, html.find("</details>", name) - begin);
}

// Every element closed in order (void elements and "/>" aside; script and style are raw text).
// Returns an empty string when balanced, else what went wrong.
std::string tag_balance(const std::string& html) {
  static const std::vector<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link"};
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 4, "<!--") == 0) {
      i = html.find("-->", i);
      if (i == std::string::npos) return "unclosed comment";
      continue;
    }
    const size_t end = html.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    if (html[i + 1] == '!') {
      i = end + 1;
      continue;
    }
    const bool closing = html[i + 1] == '/';
    size_t n = i + (closing ? 2 : 1);
    std::string name;
    while (n < end && (std::isalnum(static_cast<unsigned char>(html[n])) || html[n] == '-')) name += html[n++];
    if (name.empty()) return "bare '<' at " + std::to_string(i);
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> at " + std::to_string(i) + " closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      open.pop_back();
      i = end + 1;
    } else if (name == "script" || name == "style") {
      const size_t close = html.find("</" + name + ">", end);
      if (close == std::string::npos) return "unclosed <" + name + ">";
      i = close + name.size() + 3;
    } else {
      if (html[end - 1] != '/' && std::find(kVoid.begin(), kVoid.end(), name) == kVoid.end()) open.push_back(name);
      i = end + 1;
    }
  }
  return open.empty() ? std::string{} : "unclosed <" + open.back() + ">";
}

TEST(ProfilerReportHtml, SampleIsBalancedAndSelfContained) {
  const std::string html = render_profiler_report_html(test::sample_report_data());
  EXPECT_EQ(tag_balance(html), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"job-summary", "system-usage", "framework-metrics", "rules-summary", "step-durations", "rule-details"})
    EXPECT_FALSE(section(html, id).empty()) << id;
  EXPECT_EQ(count(html, "<section"), count(html, "</section>"));
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  // Nothing fetched: no external reference of any kind.
  for (const char* external : {"http://", "https://", " src=", "<link", "@import", "url("})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  // The browser check reads these.
  EXPECT_NE(html.find("document.body.dataset.rendered = \"ok\""), std::string::npos);
  EXPECT_NE(html.find("window.onerror"), std::string::npos);
  EXPECT_NE(html.find("data-script-errors"), std::string::npos);
}

TEST(ProfilerReportHtml, UserStringsAreEscapedEverywhere) {
  const std::string html = render_profiler_report_html(test::sample_report_data());
  const std::string escaped = "&lt;script&gt;alert(1)&lt;/script&gt;";
  // The hostile node name reaches legends, step keys, Details keys and box labels; the parameter the table.
  EXPECT_GE(count(html, escaped), 5u);
  EXPECT_EQ(count(html, "alert(1)"), count(html, escaped)) << "alert(1) appears unescaped";
  EXPECT_EQ(html.find(test::kHostileText), std::string::npos);
  // The page's own two scripts, no third.
  EXPECT_EQ(count(html, "<script"), 2u);
  // The parameter's line is one of GPUMemoryIncrease's lines in the rules table.
  EXPECT_NE(section(html, "rules-summary").find("increase:5<br/>patience:" + escaped + "<br/>window:10"), std::string::npos);
}

TEST(ProfilerReportHtml, ChartsForPresentDataNotesForAbsentData) {
  const ReportData d = test::sample_report_data();
  const std::string html = render_profiler_report_html(d);
  EXPECT_EQ(count(section(html, "job-summary"), "<svg"), 1u);
  // CPU, GPU, GPU memory, memory and I/O wait drawn; network and disk have no samples.
  const std::string system = section(html, "system-usage");
  EXPECT_EQ(count(system, "<svg"), 5u);
  EXPECT_NE(system.find("No data: no network samples were recorded"), std::string::npos);
  EXPECT_NE(system.find("No data: no disk samples were recorded"), std::string::npos);
  EXPECT_EQ(count(system, "<g class=\"series\">"), d.cpu.size() + d.gpu.size() + d.gpu_memory.size() + d.memory.size() +
                                                      d.io_wait.size());
  // OverallSystemUsage's statistics table: one row per metric and node, columns min to max.
  EXPECT_NE(system.find("<td>CPU / algo-1</td><td>5</td><td>60</td><td>90</td><td>95</td><td>98</td>"), std::string::npos);
  EXPECT_EQ(count(section(html, "framework-metrics"), "<svg"), 2u);
  // 30 operators: the 20 largest and one bar for the rest.
  EXPECT_NE(section(html, "framework-metrics").find("10 others"), std::string::npos);

  const std::string steps = section(html, "step-durations");
  EXPECT_EQ(count(steps, "<svg"), d.step_durations.size() + 1);  // + the data-loader histogram
  // algo-1's TRAIN key: its five outliers drawn in the marked colour and listed with their steps.
  const std::string train = steps.substr(steps.find("<h3>algo-1 Step:ModeKeys.TRAIN</h3>"));
  EXPECT_NE(train.find("class=\"bar marked\""), std::string::npos);
  EXPECT_NE(train.find("5 outlier steps"), std::string::npos);
  for (int64_t s : d.outlier_steps.at("algo-1 Step:ModeKeys.TRAIN"))
    EXPECT_NE(train.find("<tr><td>" + std::to_string(s) + "</td>"), std::string::npos) << s;
  const std::string eval = steps.substr(steps.find("<h3>algo-1 Step:ModeKeys.EVAL</h3>"));
  EXPECT_NE(eval.find("No outlier steps."), std::string::npos);

  // Box statistics as box plots and tables; other Details as tables.
  const std::string gpu = rule_block(html, "LowGPUUtilization");
  EXPECT_EQ(count(gpu, "<svg"), 1u);
  EXPECT_EQ(count(gpu, "<g class=\"box\">"), 3u);
  EXPECT_NE(gpu.find("<td>algo-1 / gpu1</td>"), std::string::npos);
  EXPECT_EQ(count(rule_block(html, "BatchSize"), "<g class=\"box\">"), 3u);
  EXPECT_EQ(count(rule_block(html, "CPUBottleneck"), "<svg"), 0u);
  EXPECT_NE(rule_block(html, "CPUBottleneck").find("bottlenecks / 1596668300 / CPUs"), std::string::npos);
  EXPECT_NE(rule_block(html, "LoadBalancing").find("0, 4, 10, 30, 56"), std::string::npos);
  EXPECT_NE(rule_block(html, "Dataloader").find("No data: no DataLoader events"), std::string::npos);

  EXPECT_EQ(static_cast<int>(count(html, "<svg")), test::kSampleCharts);
  EXPECT_EQ(html.find(">nan<"), std::string::npos);
}

TEST(ProfilerReportHtml, RulesTableSortedByTimesTriggered) {
  const ReportData d = test::sample_report_data();
  const std::string table = section(render_profiler_report_html(d), "rules-summary");
  // Each rule's row, in the table's order, with its triggered count from the data.
  std::vector<std::pair<size_t, int64_t>> rows;
  for (const auto& r : d.rules) {
    const size_t at = table.find(">" + r.name + "<");
    ASSERT_NE(at, std::string::npos) << r.name;
    rows.emplace_back(at, r.triggered);
    const size_t row_end = table.find("</tr>", at);
    const std::string row = table.substr(at, row_end - at);
    EXPECT_NE(row.find("<td data-value=\"" + std::to_string(r.violations) + "\">"), std::string::npos) << r.name;
    EXPECT_NE(row.find("<td data-value=\"" + std::to_string(r.datapoints) + "\">"), std::string::npos) << r.name;
    const char* verdict = r.no_data_reason ? "No data: " : r.triggered > 0 ? ">Triggered<" : ">Not triggered<";
    EXPECT_NE(row.find(verdict), std::string::npos) << r.name;
  }
  std::sort(rows.begin(), rows.end());
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].second, rows[i].second) << "row " << i;
  // Ties keep ProfilerReport's sub-rule order: IOBottleneck (2nd) before GPUMemoryIncrease (5th).
  EXPECT_LT(table.find(">IOBottleneck<"), table.find(">GPUMemoryIncrease<"));
  EXPECT_NE(table.find("id=\"rules-table\""), std::string::npos);
}

TEST(ProfilerReportHtml, EmptyDataGivesNotesNotCharts) {
  const std::string html = render_profiler_report_html(test::empty_report_data());
  EXPECT_EQ(tag_balance(html), "");
  EXPECT_EQ(count(html, "<svg"), 0u);
  for (const char* id : {"job-summary", "system-usage", "framework-metrics", "step-durations", "rule-details"})
    EXPECT_NE(section(html, id).find("class=\"nodata\""), std::string::npos) << id;
  EXPECT_NE(section(html, "system-usage").find("No data: no GPU utilisation samples"), std::string::npos);
  EXPECT_NE(section(html, "step-durations").find("No data: no step events"), std::string::npos);
  EXPECT_NE(section(html, "step-durations").find("No data: no data-loader events"), std::string::npos);
  // Each rule's reason in its row of the rules table.
  EXPECT_EQ(count(section(html, "rules-summary"), "No data: no profiler data was recorded"),
            test::empty_report_data().rules.size());
  for (const char* bad : {"nan", "NaN", "inf"}) EXPECT_EQ(html.find(std::string(">") + bad), std::string::npos) << bad;

  // No rule at all, no title: still a page, still notes.
  const std::string bare = render_profiler_report_html(ReportData{});
  EXPECT_EQ(tag_balance(bare), "");
  EXPECT_NE(section(bare, "rules-summary").find("No data: no rule reported"), std::string::npos);
}

TEST(ProfilerReportHtml, LongJobStaysBounded) {
  ReportData d = test::sample_report_data();
  const size_t small = render_profiler_report_html(d).size();
  constexpr int kPoints = 1'000'000;
  auto& cpu = d.cpu.front().points;
  cpu.clear();
  for (int i = 0; i < kPoints; ++i) cpu.emplace_back(i * 0.1, 50 + 40 * std::sin(i * 1e-4) + (i == 654'321 ? 9 : 0));
  auto& steps = d.step_durations["algo-1 Step:ModeKeys.TRAIN"];
  auto& outliers = d.outlier_steps["algo-1 Step:ModeKeys.TRAIN"];
  steps.clear(), outliers.clear();
  for (int64_t s = 0; s < kPoints; ++s) {
    steps.emplace_back(s, s % 100 == 7 ? 2.0 : 0.1 + 1e-7 * static_cast<double>(s % 1000));
    if (s % 100 == 7) outliers.push_back(s);
  }
  d.dataloader_durations_s.assign(kPoints, 0.03);
  const std::string html = render_profiler_report_html(d);
  EXPECT_EQ(tag_balance(html), "");
  EXPECT_LT(html.size(), small + 200'000) << "a million points must not grow the page by more than the bounds allow";
  EXPECT_NE(html.find("10000 outlier steps (red in the histogram), the 50 longest listed"), std::string::npos);
  // The CPU chart's first polyline has at most the timeline's bound of points, and keeps the spike.
  const std::string system = section(html, "system-usage");
  const size_t pts = system.find("points=\"");
  const std::string points = system.substr(pts, system.find('"', pts + 8) - pts);
  EXPECT_LE(count(points, ","), 1000u);
  EXPECT_GT(count(points, ","), 500u);
}

// The chart module's additions (plugins/rule_support/svg.h).
namespace svg = builtin::svg;

TEST(ProfilerReportSvg, DownsampleKeepsExtremesInOrderAndBounds) {
  std::vector<std::pair<double, double>> points;
  for (int i = 0; i < 100'000; ++i) points.emplace_back(i, i == 31'337 ? 1000.0 : i == 77'000 ? -1000.0 : std::sin(i * 0.01));
  const auto out = svg::downsample(points, 200);
  EXPECT_LE(out.size(), 200u);
  EXPECT_GE(out.size(), 100u);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end())) << "time order";
  EXPECT_NE(std::find(out.begin(), out.end(), std::pair{31'337.0, 1000.0}), out.end());
  EXPECT_NE(std::find(out.begin(), out.end(), std::pair{77'000.0, -1000.0}), out.end());
  const std::vector<std::pair<double, double>> few{{0, 1}, {1, 2}, {2, 3}};
  EXPECT_EQ(svg::downsample(few, 200), few);
}

TEST(ProfilerReportSvg, HistogramStacksMarkedValues) {
  const std::string chart = svg::histogram({.title = "h"}, {1, 1, 1, 2, 2, 3}, {10, 10}, 10);
  EXPECT_EQ(count(chart, "class=\"bar\""), 3u);  // bins of 1, 2 and 3
  EXPECT_EQ(count(chart, "class=\"bar marked\""), 1u);
  EXPECT_NE(chart.find(": 2 marked</title>"), std::string::npos);
  EXPECT_NE(chart.find(": 3</title>"), std::string::npos);
  // One repeated value still gives a finite axis.
  const std::string flat = svg::histogram({.title = "flat"}, {5, 5, 5}, {}, 10);
  EXPECT_EQ(flat.find("nan"), std::string::npos);
  EXPECT_EQ(count(flat, "class=\"bar\""), 1u);
}

TEST(ProfilerReportSvg, TimelineReadsAsClockAndBoxPlotDrawsEachBox) {
  const std::string t = svg::timeline({.title = "t"}, {{"a", {{0, 1}, {1800, 2}, {3600, 3}}}});
  EXPECT_NE(t.find(">30:00</text>"), std::string::npos);
  EXPECT_NE(t.find(">1:00:00</text>"), std::string::npos);
  EXPECT_EQ(count(t, "<circle"), 0u);
  const std::string b = svg::box_plot({.title = "b"}, {{"x", 0, 1, 2, 3, 4, 3.5}, {"y", 1, 2, 3, 4, 5, std::nullopt}});
  EXPECT_EQ(count(b, "<g class=\"box\">"), 2u);
  EXPECT_EQ(count(b, "class=\"p95\""), 1u);
  EXPECT_EQ(count(b, "class=\"median\""), 2u);
}

}  // namespace
}  // namespace vigil
