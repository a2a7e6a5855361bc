#include "svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace vigil::builtin::svg {

namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

// Labels drawn in a chart: 4 significant digits (the tables and tooltips give 6).
std::string tick_text(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : format_number(v); }

// "Nice" tick spacing (1, 2 or 5 times a power of ten) for about `target` intervals.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  return step * magnitude;
}

// A finite, non-empty range: the data's (or [0, 1] without data), widened when it is a single value.
std::pair<double, double> usable_range(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0.0, 1.0};
  if (hi > lo) return {lo, hi};
  const double pad = lo == 0 ? 0.5 : std::fabs(lo) * 0.1;
  return {lo - pad, hi + pad};
}

// The range extended to whole ticks, and the ticks.
std::pair<std::pair<double, double>, std::vector<double>> nice_axis(std::pair<double, double> range, bool extend) {
  auto [lo, hi] = usable_range(range.first, range.second);
  const double step = nice_step(hi - lo, 5);
  if (extend) {
    lo = std::floor(lo / step) * step;
    hi = std::ceil(hi / step) * step;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && ticks.size() < 50; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return {{lo, hi}, ticks};
}

struct Frame {
  double width, height, left, right, top, bottom;
  double plot_w() const { return width - left - right; }
  double plot_h() const { return height - top - bottom; }
};

std::string open_svg(const Frame& f, const Axes& axes) {
  return fmt::format(
      "<svg class=\"chart\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">"
      "<title>{2}</title>\n",
      f.width, f.height, html_escape(axes.title));
}

std::string text(double x, double y, const std::string& s, const char* anchor, const std::string& extra = {}) {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>\n", x, y, anchor, extra,
                     html_escape(s));
}

// Horizontal grid lines at the y ticks, each labelled left of the plot.
template <class ToY>
std::string y_grid(const Frame& f, const std::vector<double>& ticks, ToY py) {
  std::string out;
  for (double t : ticks) {
    out += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", f.left, py(t),
                       f.left + f.plot_w(), py(t));
    out += text(f.left - 6, py(t) + 4, tick_text(t), "end");
  }
  return out;
}

// Tick marks under the plot at the x ticks, each labelled by `label`.
template <class ToX, class Label>
std::string x_ticks(const Frame& f, const std::vector<double>& ticks, ToX px, Label label) {
  std::string out;
  for (double t : ticks) {
    out += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", px(t),
                       f.top + f.plot_h(), f.top + f.plot_h() + 5);
    out += text(px(t), f.top + f.plot_h() + 18, label(t), "middle");
  }
  return out;
}

std::string axis_labels(const Frame& f, const Axes& axes) {
  std::string out;
  out += text(f.left + f.plot_w() / 2, f.height - 8, axes.x_label, "middle", " class=\"axis-label\"");
  out += text(14, f.top + f.plot_h() / 2, axes.y_label, "middle",
              fmt::format(" class=\"axis-label\" transform=\"rotate(-90 14 {:.1f})\"", f.top + f.plot_h() / 2));
  return out;
}

// What tells line_chart and timeline apart.
struct LineStyle {
  bool diagonal = false;
  bool markers = true;     // dots (with tooltips) on series of at most 60 points
  bool time_axis = false;  // x in seconds, ticks as clock durations
};

// Tick spacing for a span of seconds: whole seconds, minutes or hours a reader can add up.
double time_step(double span) {
  constexpr double kSteps[] = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  const double raw = span / 5;
  if (raw < 1) return nice_step(span, 5);
  for (double s : kSteps)
    if (s >= raw) return s;
  return std::ceil(raw / 86400) * 86400;
}

std::string time_text(double seconds) {
  if (!std::isfinite(seconds)) return format_number(seconds);
  const bool negative = seconds < 0;
  const double a = std::fabs(seconds);
  std::string out;
  if (a < 60 && a != std::floor(a)) {
    out = fmt::format("{:.4g}s", a);
  } else {
    const auto total = static_cast<int64_t>(std::llround(a));
    const int64_t h = total / 3600, m = total / 60 % 60, sec = total % 60;
    out = h ? fmt::format("{}:{:02}:{:02}", h, m, sec) : fmt::format("{}:{:02}", m, sec);
  }
  return negative ? "-" + out : out;
}

std::string draw_lines(const Axes& axes, const std::vector<Series>& series, const LineStyle& style) {
  const Frame f{720, 360, 70, 190, 20, 50};
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) {
        xlo = std::min(xlo, x), xhi = std::max(xhi, x);
        ylo = std::min(ylo, y), yhi = std::max(yhi, y);
      }
  std::pair<double, double> xr;
  std::vector<double> xticks;
  if (style.time_axis) {
    xr = usable_range(axes.x_range ? axes.x_range->first : xlo, axes.x_range ? axes.x_range->second : xhi);
    const double step = time_step(xr.second - xr.first);
    for (double t = std::ceil(xr.first / step) * step; t <= xr.second + step * 1e-9 && xticks.size() < 50; t += step)
      xticks.push_back(t);
  } else {
    std::tie(xr, xticks) = nice_axis(axes.x_range.value_or(std::pair{xlo, xhi}), false);
  }
  auto [yr, yticks] = nice_axis(axes.y_range.value_or(std::pair{ylo, yhi}), !axes.y_range.has_value());
  const auto px = [&](double x) { return f.left + (x - xr.first) / (xr.second - xr.first) * f.plot_w(); };
  const auto py = [&](double y) { return f.top + f.plot_h() - (y - yr.first) / (yr.second - yr.first) * f.plot_h(); };

  std::string out = open_svg(f, axes);
  out += y_grid(f, yticks, py);
  out += x_ticks(f, xticks, px, [&](double t) { return style.time_axis ? time_text(t) : tick_text(t); });
  out += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", f.left, f.top,
                     f.plot_w(), f.plot_h());
  if (style.diagonal)
    out += fmt::format("<line class=\"reference\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", px(0),
                       py(0), px(1), py(1));
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kPalette[i % kPaletteSize];
    std::string points;
    size_t drawn = 0;
    for (const auto& [x, y] : series[i].points)
      if (std::isfinite(x) && std::isfinite(y)) {
        points += fmt::format("{}{:.1f},{:.1f}", drawn ? " " : "", px(x), py(y));
        ++drawn;
      }
    out += fmt::format("<g class=\"series\"><title>{}</title>\n", html_escape(series[i].name));
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, points);
    if (style.markers && drawn <= 60)
      for (const auto& [x, y] : series[i].points)
        if (std::isfinite(x) && std::isfinite(y))
          out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>{}: ({}, {})</title></circle>\n",
                             px(x), py(y), color, html_escape(series[i].name), format_number(x), format_number(y));
    out += "</g>\n";
    const double ly = f.top + 10 + 18 * static_cast<double>(i);
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n",
                       f.width - f.right + 12, ly - 10, color);
    out += text(f.width - f.right + 30, ly, series[i].name, "start", " class=\"legend\"");
  }
  out += axis_labels(f, axes);
  return out + "</svg>\n";
}

// The labels under a row of bars or boxes: slanted when there are many, so that they do not overlap.
std::string category_label(double x, double y, const std::string& label, bool slanted) {
  if (slanted) return text(x, y, label, "end", fmt::format(" transform=\"rotate(-45 {:.1f} {:.1f})\"", x, y));
  return text(x, y, label, "middle");
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and newline are not allowed in HTML text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out.push_back(c);
    }
  }
  return out;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

std::string line_chart(const Axes& axes, const std::vector<Series>& series, bool diagonal) {
  return draw_lines(axes, series, {.diagonal = diagonal});
}

std::vector<std::pair<double, double>> downsample(const std::vector<std::pair<double, double>>& points,
                                                  size_t max_points) {
  max_points = std::max<size_t>(max_points, 4);
  if (points.size() <= max_points) return points;
  const size_t buckets = max_points / 2;
  std::vector<std::pair<double, double>> out;
  out.reserve(buckets * 2);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = points.size() * b / buckets, end = points.size() * (b + 1) / buckets;
    size_t lo = begin, hi = begin;
    for (size_t i = begin; i < end; ++i) {
      // NaN never wins a comparison, so a bucket with finite points keeps finite ones.
      if (points[i].second < points[lo].second || !std::isfinite(points[lo].second)) lo = i;
      if (points[i].second > points[hi].second || !std::isfinite(points[hi].second)) hi = i;
    }
    // In time order, so that the line does not double back.
    out.push_back(points[std::min(lo, hi)]);
    if (lo != hi) out.push_back(points[std::max(lo, hi)]);
  }
  return out;
}

std::string timeline(const Axes& axes, const std::vector<Series>& series, size_t max_points) {
  std::vector<Series> reduced;
  reduced.reserve(series.size());
  for (const auto& s : series) reduced.push_back({s.name, downsample(s.points, max_points)});
  return draw_lines(axes, reduced, {.markers = false, .time_axis = true});
}

std::string bar_chart(const Axes& axes, const std::vector<Bar>& bars, bool horizontal) {
  double lo = 0, hi = 0;
  for (const auto& b : bars)
    if (std::isfinite(b.value)) lo = std::min(lo, b.value), hi = std::max(hi, b.value);
  auto [vr, vticks] = nice_axis(axes.y_range.value_or(std::pair{lo, hi}), !axes.y_range.has_value());
  const auto n = static_cast<double>(std::max<size_t>(bars.size(), 1));
  std::string out;
  if (horizontal) {
    const Frame f{720, 60 + 22 * n, 200, 80, 10, 50};
    const auto px = [&](double v) { return f.left + (v - vr.first) / (vr.second - vr.first) * f.plot_w(); };
    out = open_svg(f, axes);
    for (double t : vticks) {
      out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", px(t),
                         f.top, f.top + f.plot_h());
      out += text(px(t), f.top + f.plot_h() + 16, tick_text(t), "middle");
    }
    const double band = f.plot_h() / n;
    for (size_t i = 0; i < bars.size(); ++i) {
      const double y = f.top + band * static_cast<double>(i);
      const double v = std::isfinite(bars[i].value) ? bars[i].value : 0;
      const double x0 = px(std::min(0.0, v)), x1 = px(std::max(0.0, v));
      out += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}: {}</title></rect>\n",
                         x0, y + band * 0.15, x1 - x0, band * 0.7, html_escape(bars[i].label),
                         format_number(bars[i].value));
      out += text(f.left - 6, y + band * 0.5 + 4, bars[i].label, "end");
      out += text(x1 + 4, y + band * 0.5 + 4, tick_text(bars[i].value), "start", " class=\"value\"");
    }
    out += fmt::format("<line class=\"axis\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", px(0),
                       f.top, f.top + f.plot_h());
    // The value axis is horizontal here: swap the labels.
    out += text(f.left + f.plot_w() / 2, f.height - 8, axes.y_label, "middle", " class=\"axis-label\"");
    return out + "</svg>\n";
  }
  const bool slanted = bars.size() > 8;
  const Frame f{720, slanted ? 400.0 : 360.0, 70, 20, 20, slanted ? 110.0 : 50.0};
  const auto py = [&](double v) { return f.top + f.plot_h() - (v - vr.first) / (vr.second - vr.first) * f.plot_h(); };
  out = open_svg(f, axes);
  out += y_grid(f, vticks, py);
  const double band = f.plot_w() / n;
  for (size_t i = 0; i < bars.size(); ++i) {
    const double x = f.left + band * static_cast<double>(i);
    const double v = std::isfinite(bars[i].value) ? bars[i].value : 0;
    const double y0 = py(std::max(0.0, v)), y1 = py(std::min(0.0, v));
    out += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}: {}</title></rect>\n",
                       x + band * 0.1, y0, band * 0.8, y1 - y0, html_escape(bars[i].label), format_number(bars[i].value));
    const double lx = x + band * 0.5, ly = f.top + f.plot_h() + 16;
    out += category_label(lx, ly, bars[i].label, slanted);
    if (bars.size() <= 20) out += text(lx, y0 - 4, tick_text(bars[i].value), "middle", " class=\"value\"");
  }
  out += fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", f.left, py(0),
                     f.left + f.plot_w(), py(0));
  out += axis_labels(f, axes);
  return out + "</svg>\n";
}

std::string histogram(const Axes& axes, const std::vector<double>& values, const std::vector<double>& marked,
                      int bins) {
  bins = std::clamp(bins, 1, 200);
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* list : {&values, &marked})
    for (double v : *list)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const auto range = usable_range(lo, hi);
  const double width = (range.second - range.first) / bins;
  std::vector<int64_t> plain(static_cast<size_t>(bins), 0), flagged(static_cast<size_t>(bins), 0);
  const auto bin_of = [&](double v) {
    return static_cast<size_t>(std::clamp(static_cast<int>((v - range.first) / width), 0, bins - 1));
  };
  for (double v : values)
    if (std::isfinite(v)) ++plain[bin_of(v)];
  for (double v : marked)
    if (std::isfinite(v)) ++flagged[bin_of(v)];
  int64_t top = 0;
  for (size_t b = 0; b < plain.size(); ++b) top = std::max(top, plain[b] + flagged[b]);

  const Frame f{720, 360, 70, 20, 20, 50};
  auto [xr, xticks] = nice_axis(range, false);
  auto [yr, yticks] = nice_axis({0.0, static_cast<double>(std::max<int64_t>(top, 1))}, true);
  const auto px = [&](double x) { return f.left + (x - xr.first) / (xr.second - xr.first) * f.plot_w(); };
  const auto py = [&](double y) { return f.top + f.plot_h() - (y - yr.first) / (yr.second - yr.first) * f.plot_h(); };
  std::string out = open_svg(f, axes);
  out += y_grid(f, yticks, py);
  out += x_ticks(f, xticks, px, tick_text);
  for (size_t b = 0; b < plain.size(); ++b) {
    const double x0 = px(range.first + width * static_cast<double>(b)), x1 = px(range.first + width * static_cast<double>(b + 1));
    const std::string bin = fmt::format("[{}, {})", format_number(range.first + width * static_cast<double>(b)),
                                        format_number(range.first + width * static_cast<double>(b + 1)));
    if (plain[b])
      out += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}: {}</title></rect>\n",
                         x0, py(static_cast<double>(plain[b])), std::max(x1 - x0 - 1, 0.5),
                         py(0) - py(static_cast<double>(plain[b])), html_escape(bin), plain[b]);
    if (flagged[b])
      out += fmt::format("<rect class=\"bar marked\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}: {} marked</title></rect>\n",
                         x0, py(static_cast<double>(plain[b] + flagged[b])), std::max(x1 - x0 - 1, 0.5),
                         py(static_cast<double>(plain[b])) - py(static_cast<double>(plain[b] + flagged[b])),
                         html_escape(bin), flagged[b]);
  }
  out += fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", f.left, py(0),
                     f.left + f.plot_w(), py(0));
  out += axis_labels(f, axes);
  return out + "</svg>\n";
}

std::string box_plot(const Axes& axes, const std::vector<Box>& boxes) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& b : boxes)
    for (double v : {b.lower, b.p25, b.p50, b.p75, b.upper, b.p95.value_or(NAN)})
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  auto [yr, yticks] = nice_axis(axes.y_range.value_or(std::pair{lo, hi}), !axes.y_range.has_value());
  const bool slanted = boxes.size() > 8;
  const Frame f{720, slanted ? 400.0 : 360.0, 70, 20, 20, slanted ? 110.0 : 50.0};
  const auto py = [&](double v) {
    return f.top + f.plot_h() - (std::clamp(v, yr.first, yr.second) - yr.first) / (yr.second - yr.first) * f.plot_h();
  };
  std::string out = open_svg(f, axes);
  out += y_grid(f, yticks, py);
  const double band = f.plot_w() / static_cast<double>(std::max<size_t>(boxes.size(), 1));
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes[i];
    const double cx = f.left + band * (static_cast<double>(i) + 0.5), half = std::min(band * 0.3, 30.0);
    out += category_label(cx, f.top + f.plot_h() + 16, b.label, slanted);
    // A box with a non-finite quartile has nothing honest to draw; its label stays, its tooltip says why.
    if (!std::isfinite(b.p25) || !std::isfinite(b.p50) || !std::isfinite(b.p75)) continue;
    const std::string tip = fmt::format("{}: lower {}, p25 {}, p50 {}, p75 {}, upper {}{}", b.label, format_number(b.lower),
                                        format_number(b.p25), format_number(b.p50), format_number(b.p75),
                                        format_number(b.upper), b.p95 ? ", p95 " + format_number(*b.p95) : "");
    out += fmt::format("<g class=\"box\"><title>{}</title>\n", html_escape(tip));
    if (std::isfinite(b.lower) && std::isfinite(b.upper)) {
      out += fmt::format("<line class=\"whisker\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", cx,
                         py(b.lower), py(b.upper));
      for (double v : {b.lower, b.upper})
        out += fmt::format("<line class=\"whisker\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                           cx - half / 2, py(v), cx + half / 2, py(v));
    }
    out += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>\n", cx - half,
                       py(b.p75), 2 * half, std::max(py(b.p25) - py(b.p75), 1.0));
    out += fmt::format("<line class=\"median\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", cx - half,
                       py(b.p50), cx + half, py(b.p50));
    if (b.p95 && std::isfinite(*b.p95))
      out += fmt::format("<circle class=\"p95\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>\n", cx, py(*b.p95));
    out += "</g>\n";
  }
  out += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", f.left, f.top,
                     f.plot_w(), f.plot_h());
  out += axis_labels(f, axes);
  return out + "</svg>\n";
}

std::string heat_map(const Axes& axes, const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& column_labels, const std::vector<std::vector<int64_t>>& cells) {
  const double n_rows = static_cast<double>(std::max<size_t>(row_labels.size(), 1));
  const double n_cols = static_cast<double>(std::max<size_t>(column_labels.size(), 1));
  const double cell = std::clamp(420.0 / std::max(n_rows, n_cols), 12.0, 48.0);
  const Frame f{100 + cell * n_cols + 20, 40 + cell * n_rows + 20, 100, 20, 40, 20};
  std::string out = open_svg(f, axes);
  std::vector<int64_t> column_sums(column_labels.size(), 0);
  for (const auto& row : cells)
    for (size_t j = 0; j < row.size() && j < column_sums.size(); ++j) column_sums[j] += row[j];
  for (size_t i = 0; i < cells.size(); ++i) {
    for (size_t j = 0; j < cells[i].size() && j < column_labels.size(); ++j) {
      const double share = column_sums[j] ? static_cast<double>(cells[i][j]) / static_cast<double>(column_sums[j]) : 0;
      const int shade = static_cast<int>(std::lround(255 - 200 * share));
      const double x = f.left + cell * static_cast<double>(j), y = f.top + cell * static_cast<double>(i);
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"rgb({},{},255)\" stroke=\"#ffffff\">"
          "<title>label {}, predicted {}: {}</title></rect>\n",
          x, y, cell, cell, shade, shade, html_escape(row_labels[i]), html_escape(column_labels[j]), cells[i][j]);
      if (cell >= 20)
        out += text(x + cell / 2, y + cell / 2 + 4, std::to_string(cells[i][j]), "middle",
                    share > 0.6 ? " class=\"cell dark\"" : " class=\"cell\"");
    }
    out += text(f.left - 6, f.top + cell * (static_cast<double>(i) + 0.5) + 4, row_labels[i], "end");
  }
  for (size_t j = 0; j < column_labels.size(); ++j)
    out += text(f.left + cell * (static_cast<double>(j) + 0.5), f.top - 6, column_labels[j], "middle");
  out += text(f.left + cell * n_cols / 2, f.top - 24, axes.x_label, "middle", " class=\"axis-label\"");
  out += text(14, f.top + cell * n_rows / 2, axes.y_label, "middle",
              fmt::format(" class=\"axis-label\" transform=\"rotate(-90 14 {:.1f})\"", f.top + cell * n_rows / 2));
  return out + "</svg>\n";
}

}  // namespace vigil::builtin::svg
