// Small inline-SVG charts for CreateXgboostReport: line charts, bar charts and heat maps, written as
// well-formed markup with every text escaped. No script, no external resource.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil::builtin::xgboost::svg {

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

struct Bar {
  std::string label;
  double value;
};
// Vertical bars (labels under the axis) or horizontal bars (labels on the left, values at the bar ends).
std::string bar_chart(const Axes& axes, const std::vector<Bar>& bars, bool horizontal);

// A matrix of counts, darker for larger shares of each column; rows and columns labelled.
std::string heat_map(const Axes& axes, const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& column_labels, const std::vector<std::vector<int64_t>>& cells);

}  // namespace vigil::builtin::xgboost::svg
