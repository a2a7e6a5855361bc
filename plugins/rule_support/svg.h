// Small inline-SVG charts for the built-in rules' HTML reports (CreateXgboostReport, ProfilerReport):
// line charts, timelines, bar charts, histograms, box plots and heat maps, written as well-formed
// markup with every text escaped. No script, no external resource.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil::builtin::svg {

// Text helpers for the pages around the charts.
std::string html_escape(const std::string& text);
std::string format_number(double v);  // 6 significant digits, "nan"/"inf" as such

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // non-finite points are not drawn
};

struct Axes {
  std::string title;  // the chart's <title> (accessible name)
  std::string x_label, y_label;
  std::optional<std::pair<double, double>> x_range, y_range;  // default: the data's
};

// Lines with markers and a legend; `diagonal` adds the dashed y = x reference (ROC curves).
std::string line_chart(const Axes& axes, const std::vector<Series>& series, bool diagonal = false);

// At most `max_points` points (>= 4) that keep the shape of a long series: the points are cut into
// buckets of consecutive points and each bucket keeps its lowest and its highest point, so a spike
// survives. A series of at most `max_points` points is returned as is.
std::vector<std::pair<double, double>> downsample(const std::vector<std::pair<double, double>>& points,
                                                  size_t max_points);

// Lines over time, x in seconds (ticks read as m:ss or h:mm:ss), no markers; each series is
// downsampled to `max_points` first, so the markup stays bounded for any length.
std::string timeline(const Axes& axes, const std::vector<Series>& series, size_t max_points = 1000);

struct Bar {
  std::string label;
  double value;
};
// Vertical bars (labels under the axis) or horizontal bars (labels on the left, values at the bar ends).
std::string bar_chart(const Axes& axes, const std::vector<Bar>& bars, bool horizontal);

// Counts of `values` in `bins` equal-width bins. The `marked` values (outliers) are binned on the
// same axis and stacked on top in the "marked" colour; non-finite values are left out.
std::string histogram(const Axes& axes, const std::vector<double>& values, const std::vector<double>& marked,
                      int bins = 30);

// One box per entry: the box from p25 to p75 with the median, whiskers to lower and upper, and a
// dot at p95 when given (the profiler rules' box statistics, builtin-rules §1.4).
struct Box {
  std::string label;
  double lower, p25, p50, p75, upper;
  std::optional<double> p95;
};
std::string box_plot(const Axes& axes, const std::vector<Box>& boxes);

// A matrix of counts, darker for larger shares of each column; rows and columns labelled.
std::string heat_map(const Axes& axes, const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& column_labels, const std::vector<std::vector<int64_t>>& cells);

}  // namespace vigil::builtin::svg
