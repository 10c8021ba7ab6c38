// The SVG line chart: see svg_chart.h.
#include "daemon/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "daemon/page_format.h"

namespace iodrift::daemon {
namespace {

using page::Printf;
using page::Utc;
using page::UtcStyle;

// Plot geometry (SVG user units; the SVG scales to the page width).
constexpr double kWidth = 640;
constexpr double kHeight = 230;
constexpr double kLeft = 78;
constexpr double kRight = 32;      // room for half of the last x label
constexpr double kLegendRow = 16;  // the legend's rows above the plot
constexpr double kLegendLeft = 8;
constexpr double kCharWidth = 6.6;  // an 11 px legend character, generously
constexpr double kBottom = 42;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct Scale {
  double x_min, x_max, y_max, top;
  bool log_x = false;
  // Clamped to the plot: a value outside [x_min, x_max] (or NaN; on a log axis also 0 or below)
  // is drawn at the nearer edge, never thousands of units off the chart.
  double X(double x) const {
    const auto at = [this](double v) { return log_x ? std::log10(std::max(v, kMinLogX)) : v; };
    const double lo = at(x_min), span = at(x_max) - lo;
    double f = span > 0 ? (at(x) - lo) / span : 0.5;
    if (log_x && !(x > 0)) f = 0;
    if (!(f >= 0)) f = 0;
    f = std::min(f, 1.0);
    return kLeft + f * (kWidth - kLeft - kRight);
  }
  double Y(double y) const {
    return kHeight - kBottom - (y_max > 0 ? y / y_max : 0) * (kHeight - top - kBottom);
  }
};

void AppendText(std::string& out, double x, double y, const char* anchor, const std::string& text,
                const char* css_class = "axis") {
  out += "<text class=\"" + std::string(css_class) + "\" x=\"" + Num(x) + "\" y=\"" + Num(y) +
         "\" text-anchor=\"" + anchor + "\">" + HtmlEscape(text) + "</text>";
}

// A multi-line label: lines separated by '\n', one <tspan> each.
void AppendLines(std::string& out, double x, double y, const std::string& text) {
  out += "<text class=\"axis\" x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"middle\">";
  std::size_t start = 0;
  bool first = true;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "<tspan x=\"" + Num(x) + "\"" + (first ? "" : " dy=\"1.15em\"") + ">" +
           HtmlEscape(text.substr(start, end - start)) + "</tspan>";
    first = false;
    start = end + 1;
  }
  out += "</text>";
}

}  // namespace

std::string RenderChart(const Chart& chart) {
  double y_max = chart.y_min_span;
  for (const auto& s : chart.series) {
    for (const auto& p : s.points) {
      if (std::isfinite(p.y)) y_max = std::max(y_max, p.y);
    }
  }
  if (chart.reference_y) y_max = std::max(y_max, *chart.reference_y);
  y_max = y_max > 0 ? y_max * 1.08 : 1;
  double x_min = chart.x_min, x_max = chart.x_max;
  if (chart.log_x) {
    x_min = std::max(x_min, kMinLogX);
    x_max = std::max(x_max, kMinLogX);
    if (!(x_max > x_min)) {  // one point (or none): a factor 2 either side
      x_min /= 2;
      x_max = x_min * 4;
    }
  } else if (!(x_max > x_min)) {  // one point (or none): centre it in a one-minute window
    x_min -= 30;
    x_max = x_min + 60;
  }
  // Legend layout first: its rows decide where the plot starts.
  struct LegendItem {
    std::string label, css_class, color;
    bool dashed, fail;
    double x, y;
  };
  std::vector<LegendItem> legend;
  {
    double lx = kLegendLeft, ly = 14;
    auto place = [&](const std::string& label, const std::string& css_class,
                     const std::string& color, bool dashed, bool fail) {
      const double width = 28 + kCharWidth * static_cast<double>(label.size());
      if (lx > kLegendLeft && lx + width > kWidth - kLegendLeft) {
        lx = kLegendLeft;
        ly += kLegendRow;
      }
      legend.push_back({label, css_class, color, dashed, fail, lx, ly});
      lx += width + 8;
    };
    for (const auto& s : chart.series) place(s.label, s.css_class, s.color, s.dashed, false);
    if (!chart.failures.empty()) place("failed run", "failed", "", false, true);
  }
  const double top = (legend.empty() ? 14 : legend.back().y) + 20;
  const Scale sc{x_min, x_max, y_max, top, chart.log_x};
  const auto format_y = chart.format_y ? chart.format_y : [](double v) { return Printf("%g", v); };

  std::string out = "<svg class=\"chart\" id=\"" + HtmlEscape(chart.id) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + Num(kWidth) + " " +
                    Num(kHeight) + "\" role=\"img\" aria-label=\"" + HtmlEscape(chart.title) +
                    "\">";
  out += "<title>" + HtmlEscape(chart.title) + "</title>";
  // Grid and y axis labels: five lines from 0 to the top.
  const double plot_left = kLeft, plot_right = kWidth - kRight;
  const double plot_top = top, plot_bottom = kHeight - kBottom;
  out += "<g class=\"grid\">";
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max / 1.08 * i / 4;
    const double y = sc.Y(v);
    out += "<line x1=\"" + Num(plot_left) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(plot_right) +
           "\" y2=\"" + Num(y) + "\"/>";
    AppendText(out, plot_left - 6, y + 4, "end", format_y(v));
  }
  out += "</g>";
  // Axes.
  out += "<g class=\"axes\"><line x1=\"" + Num(plot_left) + "\" y1=\"" + Num(plot_top) +
         "\" x2=\"" + Num(plot_left) + "\" y2=\"" + Num(plot_bottom) + "\"/><line x1=\"" +
         Num(plot_left) + "\" y1=\"" + Num(plot_bottom) + "\" x2=\"" + Num(plot_right) +
         "\" y2=\"" + Num(plot_bottom) + "\"/></g>";
  // x ticks.
  std::vector<std::pair<double, std::string>> ticks = chart.x_ticks;
  if (ticks.empty()) {
    for (int i = 0; i <= 4; ++i) {
      if (chart.log_x) {
        const double x = x_min * std::pow(x_max / x_min, i / 4.0);
        ticks.emplace_back(std::clamp(x, x_min, x_max), Printf("%g", x));
        continue;
      }
      const double x = x_min + (x_max - x_min) * i / 4;
      ticks.emplace_back(x, Utc(x, UtcStyle::kMinute));
    }
  }
  out += "<g class=\"xticks\">";
  for (const auto& [x, label] : ticks) {
    if (x < x_min || x > x_max) continue;
    const double px = sc.X(x);
    out += "<line x1=\"" + Num(px) + "\" y1=\"" + Num(plot_bottom) + "\" x2=\"" + Num(px) +
           "\" y2=\"" + Num(plot_bottom + 4) + "\"/>";
    AppendLines(out, px, plot_bottom + 16, label);
  }
  out += "</g>";
  // Reference line and boot boundaries.
  if (chart.reference_y) {
    const double y = sc.Y(*chart.reference_y);
    out += "<line class=\"reference\" x1=\"" + Num(plot_left) + "\" y1=\"" + Num(y) + "\" x2=\"" +
           Num(plot_right) + "\" y2=\"" + Num(y) + "\"/>";
  }
  for (double b : chart.boots) {
    if (b < x_min || b > x_max) continue;
    const double x = sc.X(b);
    out += "<g class=\"boot\"><line x1=\"" + Num(x) + "\" y1=\"" + Num(plot_top) + "\" x2=\"" +
           Num(x) + "\" y2=\"" + Num(plot_bottom) + "\"/>";
    AppendText(out, x + 3, plot_top + 10, "start", "boot", "bootlabel");
    out += "</g>";
  }
  // Series: polylines split at gaps, then the markers on top.
  for (const auto& s : chart.series) {
    out += "<g class=\"series " + HtmlEscape(s.css_class) + "\" data-series=\"" +
           HtmlEscape(s.css_class) + "\" fill=\"" + HtmlEscape(s.color) + "\">";
    std::string line;
    std::size_t line_points = 0;
    auto flush = [&] {
      if (line_points >= 2) {
        out += "<polyline fill=\"none\" stroke=\"" + HtmlEscape(s.color) + "\"" +
               (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + line + "\"/>";
      }
      line.clear();
      line_points = 0;
    };
    for (const auto& p : s.points) {
      if (!std::isfinite(p.y)) {
        flush();
        continue;
      }
      if (!line.empty()) line += ' ';
      line += Num(sc.X(p.x)) + "," + Num(sc.Y(p.y));
      ++line_points;
    }
    flush();
    if (s.markers) {
      for (const auto& p : s.points) {
        if (!std::isfinite(p.y)) continue;
        out += "<circle class=\"pt\" cx=\"" + Num(sc.X(p.x)) + "\" cy=\"" + Num(sc.Y(p.y)) +
               "\" r=\"2.6\" data-i=\"" + std::to_string(p.index) + "\"><title>" +
               HtmlEscape(p.tip) + "</title></circle>";
      }
    }
    out += "</g>";
  }
  // Failed runs: red ticks on the x axis (paths, not circles: circles are data points).
  if (!chart.failures.empty()) {
    out += "<g class=\"failures\">";
    for (const auto& f : chart.failures) {
      const double x = sc.X(f.x);
      out += "<path class=\"fail\" d=\"M" + Num(x - 3) + " " + Num(plot_bottom - 3) + "L" +
             Num(x + 3) + " " + Num(plot_bottom + 3) + "M" + Num(x - 3) + " " +
             Num(plot_bottom + 3) + "L" + Num(x + 3) + " " + Num(plot_bottom - 3) + "\"><title>" +
             HtmlEscape(f.tip) + "</title></path>";
    }
    out += "</g>";
  }
  // Legend across the top.
  out += "<g class=\"legend\">";
  for (const auto& item : legend) {
    out += "<g class=\"legend-item\" data-series=\"" + HtmlEscape(item.css_class) + "\">";
    if (item.fail) {
      out += "<path class=\"fail\" d=\"M" + Num(item.x + 6) + " " + Num(item.y - 3) + "L" +
             Num(item.x + 12) + " " + Num(item.y + 3) + "M" + Num(item.x + 6) + " " +
             Num(item.y + 3) + "L" + Num(item.x + 12) + " " + Num(item.y - 3) + "\"/>";
    } else {
      out += "<line x1=\"" + Num(item.x) + "\" y1=\"" + Num(item.y) + "\" x2=\"" +
             Num(item.x + 18) + "\" y2=\"" + Num(item.y) + "\" stroke=\"" + HtmlEscape(item.color) +
             "\" stroke-width=\"3\"" + (item.dashed ? " stroke-dasharray=\"5 3\"" : "") + "/>";
    }
    AppendText(out, item.x + 22, item.y + 4, "start", item.label, "legend-label");
    out += "</g>";
  }
  out += "</g>";
  out += "</svg>";
  return out;
}

}  // namespace iodrift::daemon
