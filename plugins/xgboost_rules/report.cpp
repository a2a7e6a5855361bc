#include "report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "html_page.h"  // plugins/rule_support
#include "svg.h"

namespace vigil::builtin::xgboost {

using svg::format_number;
using svg::html_escape;

namespace {

// Classes shown in the confusion matrix, and class series in the accuracy plot.
constexpr size_t kMaxMatrixClasses = 30;
constexpr size_t kMaxClassSeries = 10;
constexpr size_t kMaxImportanceBars = 20;
constexpr int kHistogramBins = 20;
constexpr int kLabelBins = 10;
// The Confusion rule's defaults, applied in the confusion-matrix evaluation.
constexpr double kMinDiag = 0.9, kMaxOffDiag = 0.1;

std::string class_name(int64_t c) { return c < 0 ? std::string("none") : std::to_string(c); }

// A histogram bin's start as a chart label: fixed decimals that resolve a tenth of the bin width,
// so that neighbouring labels differ and an edge that is zero up to rounding reads 0.
std::string bin_label(const std::vector<double>& edges, size_t i) {
  const double width = edges.size() > 1 ? edges[1] - edges[0] : 1;
  const int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(width))), 0, 12);
  std::string out = fmt::format("{:.{}f}", edges[i], decimals);
  if (out.find_first_not_of("-0.") == std::string::npos && out.front() == '-') out.erase(0, 1);  // "-0.00"
  return out;
}

std::string percent(double share) { return std::isfinite(share) ? fmt::format("{:.1f} %", 100 * share) : "n/a"; }

using Page = builtin::HtmlPage;

constexpr const char* kStyle = R"css(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
nav ul { columns: 2; } .na { color: #777; font-style: italic; } .meta { color: #555; }
table.data { border-collapse: collapse; margin: 1em 0; } table.data th, table.data td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
table.data th { background: #f3f3f3; } table.data td:first-child { text-align: left; }
svg.chart { display: block; margin: 1em 0; font-size: 11px; } svg.chart text { fill: #333; }
svg.chart .grid { stroke: #e5e5e5; } svg.chart .tick, svg.chart .axis { stroke: #555; }
svg.chart .frame { fill: none; stroke: #999; } svg.chart .reference { stroke: #999; stroke-dasharray: 4 4; }
svg.chart .bar { fill: #1f77b4; } svg.chart .axis-label { font-size: 12px; font-weight: bold; }
svg.chart .cell.dark { fill: #fff; } .violation { color: #b00020; } .ok { color: #1b7f3b; }
)css";

void section_overview(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("overview", "Overview");
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"Steps with data", std::to_string(d.steps.size())});
  if (!d.steps.empty())
    rows.push_back({"Steps", fmt::format("{} to {}", d.steps.front(), d.steps.back())});
  const char* task_name = task.task == Task::Binary       ? "binary classification"
                          : task.task == Task::Multiclass ? "multiclass classification"
                          : task.task == Task::Regression ? "regression"
                                                          : "unknown";
  rows.push_back({"Task", fmt::format("{} ({})", task_name, task.reason)});
  rows.push_back({"Metrics", std::to_string(d.metrics.size())});
  rows.push_back({"Validation labels at the last step",
                  d.lp_step >= 0 ? fmt::format("{} at step {}", d.labels.size(), d.lp_step) : std::string("none")});
  page.table({"Item", "Value"}, rows);
  page.close_section();
}

void section_hyperparameters(Page& page, const ReportData& d) {
  page.open_section("hyperparameters", "Hyperparameters");
  if (d.hyperparameters.empty()) {
    page.note("na", "Not available", "no tensor hyperparameters/* was saved (collection hyperparameters, saved at step 0)");
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [k, v] : d.hyperparameters) rows.push_back({k, v});
    page.table({"Hyperparameter", "Value"}, rows);
  }
  page.close_section();
}

void section_label_distribution(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("label-distribution", "Label distribution");
  if (d.lp_step < 0 || d.labels.empty()) {
    page.note("na", "Not available", "no tensor labels was saved (collection labels: the validation labels)");
    page.close_section();
    return;
  }
  page.paragraph(fmt::format("The {} validation labels saved at step {}.", d.labels.size(), d.lp_step));
  if (task.task == Task::Binary || task.task == Task::Multiclass) {
    std::map<int64_t, int64_t> counts;
    for (double v : d.labels) ++counts[class_of_label(v)];
    std::vector<svg::Bar> bars;
    std::vector<std::vector<std::string>> rows;
    for (const auto& [c, n] : counts) {
      bars.push_back({class_name(c), static_cast<double>(n)});
      rows.push_back({class_name(c), std::to_string(n),
                      percent(static_cast<double>(n) / static_cast<double>(d.labels.size()))});
    }
    page.add(svg::bar_chart({.title = "Label distribution", .x_label = "class", .y_label = "labels"}, bars, false));
    page.table({"Class", "Labels", "Share"}, rows);
  } else {
    auto [edges, counts] = histogram(d.labels, kHistogramBins);
    if (edges.empty()) {
      page.note("na", "Not available", "the labels hold no finite value");
    } else {
      std::vector<svg::Bar> bars;
      for (size_t i = 0; i < counts.size(); ++i)
        bars.push_back({bin_label(edges, i), static_cast<double>(counts[i])});
      page.add(svg::bar_chart({.title = "Label histogram", .x_label = "label (bin start)", .y_label = "labels"}, bars,
                              false));
    }
  }
  page.close_section();
}

void section_loss(Page& page, const ReportData& d) {
  page.open_section("loss", "Loss and metrics versus step");
  if (d.metrics.empty()) {
    page.note("na", "Not available", "no metric was saved (collection metrics: tensors such as train-rmse, validation-logloss)");
    page.close_section();
    return;
  }
  std::vector<svg::Series> series;
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, points] : d.metrics) {
    svg::Series s{name, {}};
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& [step, v] : points) {
      s.points.emplace_back(static_cast<double>(step), v);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    series.push_back(std::move(s));
    rows.push_back({name, std::to_string(points.size()), format_number(points.front().second),
                    format_number(points.back().second), std::isfinite(lo) ? format_number(lo) : "n/a",
                    std::isfinite(hi) ? format_number(hi) : "n/a"});
  }
  page.add(svg::line_chart({.title = "Metrics versus step", .x_label = "step (boosting round)", .y_label = "value"},
                           series));
  page.table({"Metric", "Steps", "First", "Last", "Min", "Max"}, rows);
  page.close_section();
}

void section_importance(Page& page, const ReportData& d) {
  page.open_section("feature-importance", "Feature importance");
  if (d.importance.empty()) {
    page.note("na", "Not available", "no tensor feature_importance/<type>/<feature> was saved (collection feature_importance)");
    page.close_section();
    return;
  }
  page.paragraph(fmt::format("Normalised importances (each type sums to 1) saved at step {}.", d.importance_step));
  // weight, gain and cover first, as XGBoost lists them; other types after.
  std::vector<std::string> types;
  for (const char* t : {"weight", "gain", "cover", "total_gain", "total_cover"})
    if (d.importance.contains(t)) types.emplace_back(t);
  for (const auto& [t, _] : d.importance)
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  for (const auto& type : types) {
    std::vector<std::pair<std::string, double>> features(d.importance.at(type).begin(), d.importance.at(type).end());
    std::stable_sort(features.begin(), features.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    page.add(fmt::format("<h3 id=\"feature-importance-{}\">{}</h3>\n", html_escape(type), html_escape(type)));
    std::vector<svg::Bar> bars;
    for (size_t i = 0; i < features.size() && i < kMaxImportanceBars; ++i)
      bars.push_back({features[i].first, features[i].second});
    if (features.size() > kMaxImportanceBars)
      page.paragraph(fmt::format("The {} largest of {} features.", kMaxImportanceBars, features.size()));
    page.add(svg::bar_chart({.title = "Feature importance (" + type + ")", .y_label = "importance (" + type + ")"},
                            bars, true));
  }
  page.close_section();
}

void section_confusion(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("confusion-matrix", "Confusion matrix");
  if (task.task != Task::Binary && task.task != Task::Multiclass) {
    page.note("na", "Not available", d.lp_step < 0 ? "no labels and predictions were saved"
                                     : "the confusion matrix needs a classification task");
    page.close_section();
    return;
  }
  const Classification c = classify(d.labels, d.predictions, d.prediction_shape, task.task);
  if (c.classes.empty()) {
    page.note("na", "Not available", fmt::format("the predictions (shape {}) do not give one class per label ({} labels)",
                                   fmt::join(d.prediction_shape, "x"), d.labels.size()));
    page.close_section();
    return;
  }
  page.paragraph(fmt::format("Validation labels (rows) against predicted classes (columns) at step {}{}.", d.lp_step,
                             task.task == Task::Binary ? "; a probability above 0.5 predicts class 1" : ""));
  const size_t shown = std::min(c.classes.size(), kMaxMatrixClasses);
  if (shown < c.classes.size())
    page.paragraph(fmt::format("The first {} of {} classes are shown.", shown, c.classes.size()));
  std::vector<std::string> names;
  for (size_t i = 0; i < shown; ++i) names.push_back(class_name(c.classes[i]));
  std::vector<std::vector<int64_t>> cells;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < shown; ++i) {
    cells.emplace_back(c.matrix[i].begin(), c.matrix[i].begin() + static_cast<std::ptrdiff_t>(shown));
    std::vector<std::string> row{names[i]};
    for (size_t j = 0; j < shown; ++j) row.push_back(std::to_string(c.matrix[i][j]));
    rows.push_back(std::move(row));
  }
  page.add(svg::heat_map({.title = "Confusion matrix", .x_label = "predicted class", .y_label = "label"}, names, names,
                         cells));
  std::vector<std::string> header{"label \\ predicted"};
  header.insert(header.end(), names.begin(), names.end());
  page.table(header, rows, "data confusion");

  page.add("<h3 id=\"confusion-evaluation\">Evaluation of the confusion matrix</h3>\n");
  page.paragraph(fmt::format("Accuracy: {} ({} of {} labels).",
                             percent(static_cast<double>(c.correct) / static_cast<double>(c.total)), c.correct,
                             c.total));
  std::vector<std::vector<std::string>> stats;
  std::vector<std::string> violations;
  for (size_t i = 0; i < c.classes.size(); ++i) {
    int64_t row_sum = 0, column_sum = 0, off_max = 0;
    for (size_t j = 0; j < c.classes.size(); ++j) {
      row_sum += c.matrix[i][j];
      column_sum += c.matrix[j][i];
      if (j != i) off_max = std::max(off_max, c.matrix[j][i]);
    }
    const double tp = static_cast<double>(c.matrix[i][i]);
    const double precision = column_sum ? tp / static_cast<double>(column_sum) : NAN;
    const double recall = row_sum ? tp / static_cast<double>(row_sum) : NAN;
    const double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : NAN;
    stats.push_back({class_name(c.classes[i]), std::to_string(row_sum), std::to_string(column_sum),
                     format_number(precision), format_number(recall), format_number(f1)});
    if (column_sum > 0) {
      const double off_share = static_cast<double>(off_max) / static_cast<double>(column_sum);
      if (precision < kMinDiag || off_share > kMaxOffDiag)
        violations.push_back(fmt::format("predicted class {}: diagonal share {} (minimum {}), largest off-diagonal "
                                         "share {} (maximum {})",
                                         class_name(c.classes[i]), format_number(precision), format_number(kMinDiag),
                                         format_number(off_share), format_number(kMaxOffDiag)));
    }
  }
  page.table({"Class", "Labels", "Predicted", "Precision", "Recall", "F1"}, stats);
  page.paragraph(fmt::format(
      "Check of the Confusion rule's defaults (per predicted class: diagonal share at least {}, every off-diagonal "
      "share at most {}):",
      format_number(kMinDiag), format_number(kMaxOffDiag)));
  if (violations.empty()) {
    page.add("<p class=\"ok\">Every predicted class passes.</p>\n");
  } else {
    page.add("<ul class=\"violation\">\n");
    for (const auto& v : violations) page.add("<li>" + html_escape(v) + "</li>\n");
    page.add("</ul>\n");
  }
  page.close_section();
}

void section_class_accuracy(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("class-accuracy", "Accuracy per class over iterations");
  if ((task.task != Task::Binary && task.task != Task::Multiclass) || d.class_accuracy.empty()) {
    page.note("na", "Not available", "needs a classification task with labels and predictions saved at several steps");
    page.close_section();
    return;
  }
  page.paragraph("For each class, the share of its validation labels predicted right at each saved step.");
  std::vector<svg::Series> series;
  std::vector<std::vector<std::string>> rows;
  for (const auto& [cls, points] : d.class_accuracy) {
    if (series.size() < kMaxClassSeries) {
      svg::Series s{"class " + class_name(cls), {}};
      for (const auto& [step, v] : points) s.points.emplace_back(static_cast<double>(step), v);
      series.push_back(std::move(s));
    }
    rows.push_back({class_name(cls), format_number(points.front().second), format_number(points.back().second)});
  }
  if (d.class_accuracy.size() > kMaxClassSeries)
    page.paragraph(fmt::format("The plot shows the first {} of {} classes.", kMaxClassSeries, d.class_accuracy.size()));
  page.add(svg::line_chart({.title = "Accuracy per class",
                            .x_label = "step (boosting round)",
                            .y_label = "accuracy",
                            .y_range = std::pair{0.0, 1.0}},
                           series));
  page.table({"Class", "First", "Last"}, rows);
  page.close_section();
}

void section_roc(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("roc", "ROC curve");
  if (task.task != Task::Binary) {
    page.note("na", "Not available", "the ROC curve needs a binary classification with probability predictions");
    page.close_section();
    return;
  }
  const auto scores = positive_scores(d.predictions, d.prediction_shape, d.labels.size());
  const auto roc = scores.size() == d.labels.size() ? roc_curve(d.labels, scores) : std::nullopt;
  if (!roc) {
    page.note("na", "Not available", "the labels need both classes 0 and 1, with one score per label");
    page.close_section();
    return;
  }
  page.paragraph(fmt::format("At step {}: {} positive and {} negative labels; area under the curve (AUC) {}.",
                             d.lp_step, roc->positives, roc->negatives, format_number(roc->auc)));
  page.add(svg::line_chart({.title = "ROC curve",
                            .x_label = "false positive rate",
                            .y_label = "true positive rate",
                            .x_range = std::pair{0.0, 1.0},
                            .y_range = std::pair{0.0, 1.0}},
                           {{fmt::format("AUC {}", format_number(roc->auc)), roc->points}}, true));
  page.close_section();
}

void section_residuals(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("residuals", "Residual distribution at the last step");
  const auto r = task.task == Task::Regression ? residuals(d.labels, d.predictions) : std::vector<double>{};
  if (r.empty()) {
    page.note("na", "Not available", task.task == Task::Regression ? "the predictions do not give one value per label"
                                                     : "residuals need a regression task");
    page.close_section();
    return;
  }
  double sum = 0, sum_abs = 0, sum_sq = 0;
  size_t n = 0;
  for (double v : r)
    if (std::isfinite(v)) sum += v, sum_abs += std::fabs(v), sum_sq += v * v, ++n;
  const double mean = n ? sum / static_cast<double>(n) : NAN;
  page.paragraph(fmt::format("Residual = label - prediction, over the {} validation labels at step {}.", r.size(),
                             d.lp_step));
  auto [edges, counts] = histogram(r, kHistogramBins);
  if (!edges.empty()) {
    std::vector<svg::Bar> bars;
    for (size_t i = 0; i < counts.size(); ++i) bars.push_back({bin_label(edges, i), static_cast<double>(counts[i])});
    page.add(svg::bar_chart({.title = "Residual histogram", .x_label = "residual (bin start)", .y_label = "labels"},
                            bars, false));
  }
  double var = 0;
  for (double v : r)
    if (std::isfinite(v)) var += (v - mean) * (v - mean);
  page.table({"Statistic", "Value"},
             {{"Mean residual", format_number(mean)},
              {"Standard deviation", format_number(n ? std::sqrt(var / static_cast<double>(n)) : NAN)},
              {"Mean absolute error", format_number(n ? sum_abs / static_cast<double>(n) : NAN)},
              {"Root mean squared error", format_number(n ? std::sqrt(sum_sq / static_cast<double>(n)) : NAN)},
              {"Non-finite residuals", std::to_string(r.size() - n)}});
  page.close_section();
}

void section_error_per_bin(Page& page, const ReportData& d, const TaskInfo& task) {
  page.open_section("error-per-label-bin", "Absolute validation error per label bin");
  const auto r = task.task == Task::Regression ? residuals(d.labels, d.predictions) : std::vector<double>{};
  auto [edges, counts] = histogram(d.labels, kLabelBins);
  if (r.empty() || edges.empty()) {
    page.note("na", "Not available", task.task == Task::Regression ? "needs finite labels with one prediction each"
                                                     : "the error per label bin needs a regression task");
    page.close_section();
    return;
  }
  // Each label's bin, as np.histogram assigns it; mean |residual| per bin.
  std::vector<double> sums(counts.size(), 0);
  std::vector<int64_t> used(counts.size(), 0);
  const double lo = edges.front(), hi = edges.back();
  for (size_t i = 0; i < d.labels.size(); ++i) {
    const double y = d.labels[i];
    if (!std::isfinite(y) || !std::isfinite(r[i])) continue;
    auto b = static_cast<size_t>(std::clamp((y - lo) / (hi - lo) * kLabelBins, 0.0, double(kLabelBins - 1)));
    while (b > 0 && y < edges[b]) --b;
    while (b + 1 < counts.size() && y >= edges[b + 1]) ++b;
    sums[b] += std::fabs(r[i]);
    ++used[b];
  }
  std::vector<svg::Bar> bars;
  std::vector<std::vector<std::string>> rows;
  for (size_t b = 0; b < counts.size(); ++b) {
    const double mae = used[b] ? sums[b] / static_cast<double>(used[b]) : NAN;
    const std::string bin = fmt::format("[{}, {}{}", format_number(edges[b]), format_number(edges[b + 1]),
                                        b + 1 == counts.size() ? "]" : ")");
    bars.push_back({bin_label(edges, b), used[b] ? mae : 0});
    rows.push_back({bin, std::to_string(used[b]), used[b] ? format_number(mae) : "n/a"});
  }
  page.paragraph(fmt::format("Labels at step {} in {} equal-width bins; mean |label - prediction| per bin.", d.lp_step,
                             kLabelBins));
  page.add(svg::bar_chart({.title = "Absolute error per label bin", .x_label = "label (bin start)",
                           .y_label = "mean absolute error"},
                          bars, false));
  page.table({"Label bin", "Labels", "Mean absolute error"}, rows);
  page.close_section();
}

}  // namespace

std::string render_report(const ReportData& d) {
  const TaskInfo task = detect_task(d.hyperparameters, d.labels, d.predictions, d.prediction_shape);
  Page page;
  section_overview(page, d, task);
  section_hyperparameters(page, d);
  section_label_distribution(page, d, task);
  section_loss(page, d);
  section_importance(page, d);
  section_confusion(page, d, task);
  section_class_accuracy(page, d, task);
  section_roc(page, d, task);
  section_residuals(page, d, task);
  section_error_per_bin(page, d, task);
  const std::string title = "XGBoost training report" + (d.configuration_name.empty() ? "" : ": " + d.configuration_name);
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  out += "<meta name=\"generator\" content=\"Vigil CreateXgboostReport\"/>\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(title) + "</h1>\n";
  out += "<p class=\"meta\">Written by Vigil's CreateXgboostReport rule from the tensors saved by the XGBoost hook. "
         "Self-contained: every plot is inline SVG.</p>\n";
  out += "<nav>\n<ul>\n" + page.toc() + "</ul>\n</nav>\n";
  out += page.body();
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace vigil::builtin::xgboost
