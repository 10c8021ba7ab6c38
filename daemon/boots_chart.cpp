#include "daemon/boots_chart.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "collectors/analysis/boot_record.h"
#include "daemon/page_format.h"
#include "daemon/svg_chart.h"

namespace iodrift::daemon {
namespace {

using page::Printf;

// One colour per boot, newest first: this boot dark blue, then past boots (cycled beyond ten).
constexpr std::array<const char*, 10> kColors = {"#1f3a93", "#d62728", "#2ca02c", "#ff7f0e",
                                                 "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                 "#bcbd22", "#17becf"};
constexpr double kMinUptime = 60;  // the axis starts at a minute at most

std::string Ratio(double v) { return Printf("%.2f×", v); }

// The points of one boot, sorted by uptime; one per uptime (a mark and the worst at the same
// uptime: the mark's).
std::vector<ChartPoint> BootPoints(const analysis::BootRow& row) {
  const std::string boot = row.boot_id.substr(0, 8);
  std::vector<ChartPoint> points;
  auto add = [&](double uptime, const std::optional<double>& ratio, const std::string& what) {
    if (!ratio || !std::isfinite(*ratio) || !std::isfinite(uptime) || uptime <= 0) return;
    for (const auto& p : points) {
      if (p.x == uptime) return;
    }
    points.push_back({uptime, *ratio, 0,
                      "boot " + boot + ": " + what + " " + Ratio(*ratio) + " at uptime " +
                          page::Uptime(uptime)});
  };
  for (std::size_t i = 0; i < analysis::kBootMarks.size(); ++i) {
    add(analysis::kBootMarks[i], row.record.at[i], std::string(analysis::kBootMarkNames[i]));
  }
  if (row.uptime_at_worst) add(*row.uptime_at_worst, row.worst_ratio, "worst");
  if (row.record.last_uptime) add(*row.record.last_uptime, row.record.last_ratio, "last");
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.x < b.x; });
  for (std::size_t i = 0; i < points.size(); ++i) points[i].index = i;
  return points;
}

// Ticks at round uptimes inside [lo, hi].
std::vector<std::pair<double, std::string>> UptimeTicks(double lo, double hi) {
  static const std::array<std::pair<double, const char*>, 9> kTicks = {{{60, "1m"},
                                                                        {600, "10m"},
                                                                        {3600, "1h"},
                                                                        {6 * 3600, "6h"},
                                                                        {86400, "1d"},
                                                                        {7 * 86400, "7d"},
                                                                        {30 * 86400, "30d"},
                                                                        {90 * 86400, "90d"},
                                                                        {365 * 86400, "1y"}}};
  std::vector<std::pair<double, std::string>> ticks;
  for (const auto& [x, label] : kTicks) {
    if (x >= lo && x <= hi) ticks.emplace_back(x, label);
  }
  return ticks;
}

}  // namespace

std::string RenderBootsCharts(const analysis::BaselineState& state) {
  std::string out;
  const auto names = analysis::BootProbeNames(state);
  for (std::size_t n = 0; n < names.size(); ++n) {
    Chart c;
    c.id = "boots-chart-" + std::to_string(n);
    c.title = "Probe " + names[n] + ": ratio against uptime, one line per boot";
    c.log_x = true;
    c.reference_y = 1.0;
    c.format_y = Ratio;
    c.x_min = kMinUptime;
    c.x_max = 3600;
    const auto rows = analysis::BootsOf(state, names[n]);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& row = rows[i];
      ChartSeries s;
      s.label = (row.current ? "this boot " : "") + row.boot_id.substr(0, 8);
      s.css_class = "boot-" + std::to_string(i);
      s.color = kColors[i % kColors.size()];
      s.dashed = !row.current;
      s.points = BootPoints(row);
      if (s.points.empty()) continue;
      c.x_min = std::min(c.x_min, s.points.front().x);
      c.x_max = std::max(c.x_max, s.points.back().x);
      c.series.push_back(std::move(s));
    }
    if (c.series.empty()) continue;
    c.x_ticks = UptimeTicks(c.x_min, c.x_max);
    out += "<figure class=\"boots\"><h3>" + HtmlEscape(c.title) + "</h3>" + RenderChart(c) +
           "</figure>";
  }
  // Side by side like a probe's charts.
  return out.empty() ? out : "<div class=\"charts boots-charts\">" + out + "</div>";
}

}  // namespace iodrift::daemon
