// A general server-rendered line chart: one <svg class="chart"> element with a y grid and axis
// labels, x ticks (multi-line labels allowed), a polyline per series (split where a value is
// missing), a <circle class="pt"> per data point with a <title> tooltip, failed-run marks on the
// x axis, boot boundaries, an optional reference line and a legend across the top.
//
// It knows nothing of probes: the status page (status_page.cpp) builds Chart values from probe
// histories and styles them with the CSS in status_assets.cpp (classes: grid, axes, xticks,
// reference, boot, series, pt, fail, legend). Every text that reaches the SVG (id, title, labels,
// tooltips, colours, classes) is HTML-escaped.
//
// Pure rendering: no I/O, no clock. Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace iodrift::daemon {

struct ChartPoint {
  double x = 0;           // seconds on the chart's x axis (status page: history.h MonotonicTimes)
  double y = 0;           // NaN: no value (a gap in the line)
  std::size_t index = 0;  // the point's index in its history (data-i, for the hover readout)
  std::string tip;        // tooltip text (escaped when rendered)
};

struct ChartSeries {
  std::string label;
  std::string css_class;  // "figure", "baseline", ...; also the legend's key
  std::string color;
  bool dashed = false;
  bool markers = true;  // a <circle class="pt"> per finite point
  std::vector<ChartPoint> points;
};

struct ChartMark {  // a failed run: a red tick on the x axis
  double x = 0;
  std::string tip;
};

inline constexpr double kMinLogX = 1e-9;  // the smallest x a log axis shows

struct Chart {
  std::string id;  // unique in the page; the <svg id>
  std::string title;
  double x_min = 0;
  double x_max = 0;
  double y_min_span = 0;              // the y axis reaches at least this high
  std::optional<double> reference_y;  // a thin horizontal line (e.g. ratio 1.0)
  std::function<std::string(double)> format_y;
  std::vector<double> boots;  // x of boot boundaries inside [x_min, x_max]
  // Log x axis (e.g. uptime from a minute to months): x is placed by log10. x_min and every x at
  // or below 0 are taken as kMinLogX; an x at or below x_min is drawn at the left edge.
  bool log_x = false;
  // Ticks on the x axis: (x, label; '\n' separates lines). Empty: five ticks labelled HH:MM UTC
  // (log_x: five ticks evenly spaced on the log axis, labelled "%g").
  std::vector<std::pair<double, std::string>> x_ticks;
  std::vector<ChartSeries> series;
  std::vector<ChartMark> failures;
};

// One <svg class="chart"> with axes, the series, the legend and the marks. The y axis runs from 0
// to a little above the largest finite value (at least y_min_span and reference_y); an empty x
// range (one point) is widened to one minute around it (log_x: a factor 2 either side). An x
// outside [x_min, x_max] is drawn at the nearer edge of the plot: every coordinate stays inside the
// chart.
std::string RenderChart(const Chart& chart);

}  // namespace iodrift::daemon
