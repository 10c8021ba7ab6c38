#include "daemon/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <map>

#include "collectors/analysis/explain.h"
#include "collectors/probes/drift.h"
#include "collectors/probes/result_fields.h"
#include "daemon/probe_report.h"

namespace iodrift::daemon {
namespace {

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

__attribute__((format(printf, 1, 2))) std::string Printf(const char* format, ...) {
  char buf[64];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

enum class UtcStyle { kFull, kDateTime, kDateMinute, kMonthDayMinute, kTime, kTimeUtc, kMinute };

// 2026-12-02 23:10:05 UTC (kFull), 2026-12-02 23:10:05, 2026-12-02 23:10 UTC, 12-02 23:10,
// 23:10:05, 23:10:05 UTC, 23:10.
std::string Utc(double seconds, UtcStyle style = UtcStyle::kFull) {
  if (!std::isfinite(seconds)) return "-";
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const int y = tm.tm_year + 1900, mo = tm.tm_mon + 1, d = tm.tm_mday, h = tm.tm_hour,
            mi = tm.tm_min, se = tm.tm_sec;
  char buf[64];
  switch (style) {
    case UtcStyle::kFull:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d UTC", y, mo, d, h, mi, se);
      break;
    case UtcStyle::kDateTime:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, se);
      break;
    case UtcStyle::kDateMinute:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d UTC", y, mo, d, h, mi);
      break;
    case UtcStyle::kMonthDayMinute:
      std::snprintf(buf, sizeof buf, "%02d-%02d %02d:%02d", mo, d, h, mi);
      break;
    case UtcStyle::kTime:
      std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", h, mi, se);
      break;
    case UtcStyle::kTimeUtc:
      std::snprintf(buf, sizeof buf, "%02d:%02d:%02d UTC", h, mi, se);
      break;
    case UtcStyle::kMinute:
      std::snprintf(buf, sizeof buf, "%02d:%02d", h, mi);
      break;
  }
  return buf;
}

// "40d 3h", "3h 12m", "5m 3s", "42s".
std::string Uptime(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  auto s = static_cast<long long>(seconds);
  char buf[48];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lldd %lldh", s / 86400, s % 86400 / 3600);
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh %lldm", s / 3600, s % 3600 / 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm %llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

bool IsOps(config::ProbeKind kind) { return !probes::IsThroughputKind(kind); }

std::string FormatOps(double v) {
  return v >= 100 ? Printf("%.0f ops/s", v) : Printf("%.3g ops/s", v);
}

// A figure in the unit of `kind`.
std::string FormatFigure(config::ProbeKind kind, double v) {
  return IsOps(kind) ? FormatOps(v) : FormatRate(v);
}

std::string FormatRatio(double v) { return Printf("%.2f×", v); }
std::string FormatFraction(double v) { return Printf("%.3f", v); }

std::string Opt(const std::optional<double>& v, const std::function<std::string(double)>& f) {
  return v && std::isfinite(*v) ? f(*v) : "-";
}

// ---- chart -----------------------------------------------------------------------------------

struct Scale {
  double x_min, x_max, y_max, top;
  double X(double x) const {
    const double span = x_max - x_min;
    return kLeft + (span > 0 ? (x - x_min) / span : 0.5) * (kWidth - kLeft - kRight);
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

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

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
  if (!(x_max > x_min)) {  // one point (or none): centre it in a one-minute window
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
  const Scale sc{x_min, x_max, y_max, top};
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

namespace {

// ---- page ------------------------------------------------------------------------------------

const char* kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1280px;padding:12px 20px;color:#1d1d1f;background:#fafafa}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:0 0 4px}h3{font-size:13px;margin:6px 0 0;font-weight:600;color:#444}
header p,footer{color:#555}a{color:#0b5cad}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;white-space:nowrap}
th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}
section.probe{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:14px 0}
.meta{color:#555;margin:0 0 6px}.err{color:#b00020}.ok{color:#1a7f37}.empty{color:#777;font-style:italic}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:6px 16px}
figure{margin:0}svg.chart{width:100%;height:auto;display:block}
svg .grid line{stroke:#e4e4e4}svg .axes line,svg .xticks line{stroke:#777}
svg text.axis{font-size:10px;fill:#555}svg text.legend-label{font-size:11px;fill:#222}
svg .reference{stroke:#999;stroke-dasharray:2 3}svg .boot line{stroke:#b00020;stroke-dasharray:4 3}
svg text.bootlabel{font-size:10px;fill:#b00020}svg polyline{stroke-width:1.6}
svg .fail{stroke:#b00020;stroke-width:1.6;fill:none}svg circle.pt{cursor:crosshair}svg circle.pt.hl{r:4.5px;stroke:#000}
.readout{min-height:1.4em;font-size:12px;color:#333;background:#f3f3f3;padding:3px 6px;border-radius:4px;margin-top:4px}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px;margin:6px 0 0}
)";

// Hover: every value of the hovered run (same data-i) in the probe's readout line.
const char* kScript = R"(
(function(){
  document.querySelectorAll('section.probe').forEach(function(sec){
    var out=sec.querySelector('.readout');
    if(!out)return;
    sec.addEventListener('mouseover',function(ev){
      var t=ev.target;
      if(!t||!t.classList||!t.classList.contains('pt'))return;
      var i=t.getAttribute('data-i'),parts=[];
      sec.querySelectorAll('circle.pt').forEach(function(c){
        var on=c.getAttribute('data-i')===i;
        c.classList.toggle('hl',on);
        if(on){var ti=c.querySelector('title');if(ti&&parts.indexOf(ti.textContent)<0)parts.push(ti.textContent);}
      });
      out.textContent=parts.join('  |  ');
    });
  });
  document.body.setAttribute('data-js','ready');
})();
)";

struct FeatureSeries {
  probes::DriftFeature feature;
  const char* label;
  const char* css_class;
  const char* color;
};

// Memory chart (bytes) and pressure chart (fractions 0..1).
constexpr FeatureSeries kMemorySeries[] = {
    {probes::DriftFeature::kMemFree, "free", "mem_free", "#2ca02c"},
    {probes::DriftFeature::kCached, "page cache", "cached", "#1f77b4"},
    {probes::DriftFeature::kSReclaimable, "slab reclaimable", "sreclaimable", "#ff7f0e"},
    {probes::DriftFeature::kSUnreclaim, "slab unreclaimable", "sunreclaim", "#d62728"},
    {probes::DriftFeature::kDirtyWriteback, "dirty+writeback", "dirty_writeback", "#8c564b"},
};
constexpr FeatureSeries kPressureSeries[] = {
    {probes::DriftFeature::kPsiMemory, "PSI memory stall", "psi_memory", "#d62728"},
    {probes::DriftFeature::kPsiIo, "PSI io stall", "psi_io", "#ff7f0e"},
    {probes::DriftFeature::kFragmentation, "fragmentation index", "fragmentation", "#17becf"},
};

double Feature(const probes::HistoryPoint& p, probes::DriftFeature f) {
  return p.features[static_cast<std::size_t>(f)];
}

// Same-boot test: both boot ids known and different, or uptime went down.
bool NewBoot(const probes::HistoryPoint& prev, const probes::HistoryPoint& cur) {
  if (prev.boot_id && cur.boot_id && *prev.boot_id != *cur.boot_id) return true;
  return prev.uptime_seconds && cur.uptime_seconds && *cur.uptime_seconds < *prev.uptime_seconds;
}

std::string SafeId(const std::string& name) {
  std::string out;
  for (char c : name) {
    out.push_back((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                          c == '-' || c == '_'
                      ? c
                      : '_');
  }
  return out;
}

std::string RenderProbeCharts(const probes::ProbeHistory& h, const std::string& id) {
  const auto& pts = h.points;
  const std::vector<std::size_t> picked = probes::EvenlySpacedIndices(pts.size(), kMaxChartPoints);
  const double x_min = pts.front().time_seconds, x_max = pts.back().time_seconds;
  const config::ProbeKind kind = h.kind;

  // Boot boundaries: at the boot time of the new boot (start − uptime) when inside the range,
  // else half-way between the two runs.
  std::vector<double> boots;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (!NewBoot(pts[i - 1], pts[i])) continue;
    double b = (pts[i - 1].time_seconds + pts[i].time_seconds) / 2;
    if (pts[i].uptime_seconds) {
      const double boot_time = pts[i].time_seconds - *pts[i].uptime_seconds;
      if (boot_time > pts[i - 1].time_seconds) b = boot_time;
    }
    boots.push_back(b);
  }
  // x ticks: time of day (with the date when the span passes a day) over the uptime then.
  std::vector<std::pair<double, std::string>> ticks;
  {
    double lo = x_min, hi = x_max;
    if (!(hi > lo)) {
      lo -= 30;
      hi = lo + 60;
    }
    const UtcStyle fmt = hi - lo > 86400 ? UtcStyle::kMonthDayMinute : UtcStyle::kTime;
    for (int k = 0; k <= 4; ++k) {
      const double x = lo + (hi - lo) * k / 4;
      // Uptime at x from the nearest run (same boot as x when it is after that run's boot).
      const probes::HistoryPoint* nearest = nullptr;
      for (const auto& p : pts) {
        if (!nearest || std::fabs(p.time_seconds - x) < std::fabs(nearest->time_seconds - x)) {
          nearest = &p;
        }
      }
      std::string label = Utc(x, fmt);
      if (nearest && nearest->uptime_seconds) {
        const double up = *nearest->uptime_seconds + (x - nearest->time_seconds);
        if (up >= 0) label += "\nup " + Uptime(up);
      }
      ticks.emplace_back(x, label);
    }
  }

  auto base_chart = [&](std::string suffix, std::string title) {
    Chart c;
    c.id = id + "-" + suffix;
    c.title = std::move(title);
    c.x_min = x_min;
    c.x_max = x_max;
    c.boots = boots;
    c.x_ticks = ticks;
    return c;
  };
  auto when = [&](const probes::HistoryPoint& p) {
    std::string s = Utc(p.time_seconds, UtcStyle::kDateTime);
    if (p.uptime_seconds) s += " (up " + Uptime(*p.uptime_seconds) + ")";
    return s;
  };

  // 1. The figure and its baseline.
  Chart fig = base_chart(
      "figure", IsOps(kind) ? "Operations per second and baseline" : "Throughput and baseline");
  fig.format_y = [kind](double v) { return FormatFigure(kind, v); };
  ChartSeries figure{IsOps(kind)
                         ? std::string(kind == config::ProbeKind::kRandom ? "random reads (ops/s)"
                                                                          : "file creates (ops/s)")
                         : "throughput",
                     "figure",
                     "#1f77b4",
                     false,
                     true,
                     {}};
  ChartSeries baseline{"baseline", "baseline", "#555555", true, false, {}};
  // 2. The ratio to the baseline.
  Chart ratio_chart = base_chart("ratio", "Ratio to baseline (1.00× = as fast as after boot)");
  ratio_chart.format_y = FormatRatio;
  ratio_chart.reference_y = 1.0;
  ratio_chart.y_min_span = 1.0;
  ChartSeries ratio{"figure / baseline", "ratio", "#9467bd", false, true, {}};
  // 3. Memory; 4. pressure and fragmentation.
  Chart mem = base_chart("memory", "Memory at the start of each run");
  mem.format_y = [](double v) { return FormatBytes(v); };
  Chart pressure = base_chart("pressure", "PSI stall ratio during the run, fragmentation index");
  pressure.format_y = FormatFraction;
  pressure.y_min_span = 0.05;
  std::vector<ChartSeries> mem_series, pressure_series;
  for (const auto& f : kMemorySeries) {
    mem_series.push_back({f.label, f.css_class, f.color, false, true, {}});
  }
  for (const auto& f : kPressureSeries) {
    pressure_series.push_back({f.label, f.css_class, f.color, false, true, {}});
  }

  const double nan = std::nan("");
  for (std::size_t i : picked) {
    const auto& p = pts[i];
    const std::string at = when(p);
    if (!p.figure) {
      std::string what = at + ": " + probes::OutcomeName(p.outcome);
      fig.failures.push_back({p.time_seconds, what});
      ratio_chart.failures.push_back({p.time_seconds, what});
    }
    std::string tip = at + ": " + (p.figure ? FormatFigure(kind, *p.figure) : "no figure");
    if (p.baseline) tip += ", baseline " + FormatFigure(kind, *p.baseline);
    if (p.ratio) tip += ", ratio " + FormatRatio(*p.ratio);
    figure.points.push_back({p.time_seconds, p.figure.value_or(nan), i, tip});
    baseline.points.push_back({p.time_seconds, p.baseline.value_or(nan), i, ""});
    ratio.points.push_back(
        {p.time_seconds, p.ratio.value_or(nan), i, "ratio " + Opt(p.ratio, FormatRatio)});
    for (std::size_t k = 0; k < std::size(kMemorySeries); ++k) {
      const double v = Feature(p, kMemorySeries[k].feature);
      mem_series[k].points.push_back(
          {p.time_seconds, v, i, std::string(kMemorySeries[k].label) + " " + FormatBytes(v)});
    }
    for (std::size_t k = 0; k < std::size(kPressureSeries); ++k) {
      const double v = Feature(p, kPressureSeries[k].feature);
      pressure_series[k].points.push_back(
          {p.time_seconds, v, i, std::string(kPressureSeries[k].label) + " " + FormatFraction(v)});
    }
  }
  fig.series = {std::move(figure), std::move(baseline)};
  ratio_chart.series = {std::move(ratio)};
  mem.series = std::move(mem_series);
  pressure.series = std::move(pressure_series);

  std::string out = "<div class=\"charts\">";
  for (const Chart* c : {&fig, &ratio_chart, &mem, &pressure}) {
    out += "<figure><h3>" + HtmlEscape(c->title) + "</h3>" + RenderChart(*c) + "</figure>";
  }
  out += "</div><div class=\"readout\">";
  const std::size_t runs = std::max(h.runs_kept, pts.size());  // a thinned snapshot has fewer
  out += runs > picked.size()
             ? HtmlEscape("showing " + std::to_string(picked.size()) + " of " +
                          std::to_string(runs) + " runs; hover a point for its values")
             : "hover a point for the values of that run";
  out += "</div>";
  return out;
}

std::string Cell(const std::string& text, bool num = false) {
  return std::string(num ? "<td class=\"num\">" : "<td>") + HtmlEscape(text) + "</td>";
}

std::string KindUnitValue(config::ProbeKind kind, const std::optional<double>& v) {
  return Opt(v, [kind](double x) { return FormatFigure(kind, x); });
}

std::string RenderBaselineTable(const probes::BaselineState& state) {
  std::string out =
      "<table class=\"boots\"><thead><tr><th>boot</th><th>boot time</th>"
      "<th>probe</th><th>kind</th><th>target</th><th>baseline</th>"
      "<th>worst ratio</th><th>uptime at worst</th></tr></thead><tbody>";
  std::size_t rows = 0;
  auto row = [&](const std::string& boot, std::uint64_t boot_time, const probes::BaselineKey& key,
                 const std::optional<double>& base, const std::optional<double>& worst,
                 const std::optional<double>& at) {
    out += "<tr>" + Cell(boot) +
           Cell(boot_time ? Utc(static_cast<double>(boot_time), UtcStyle::kDateMinute) : "-") +
           Cell(key.name) + Cell(std::string(config::ProbeKindName(key.kind))) +
           Cell(key.target.empty() ? "-" : key.target) + Cell(KindUnitValue(key.kind, base), true) +
           Cell(Opt(worst, FormatRatio), true) + Cell(Opt(at, Uptime), true) + "</tr>";
    ++rows;
  };
  const std::string current =
      state.boot_id.empty() ? "this boot" : "this boot (" + state.boot_id.substr(0, 8) + ")";
  for (const auto& [name, pb] : state.probes) {
    row(current, state.boot_time_seconds, pb.key, pb.baseline, pb.worst_ratio, pb.uptime_at_worst);
  }
  for (auto it = state.history.rbegin(); it != state.history.rend(); ++it) {
    for (const auto& pp : it->probes) {
      row(it->boot_id.substr(0, 8), it->boot_time_seconds, pp.key, pp.baseline, pp.worst_ratio,
          pp.uptime_at_worst);
    }
  }
  out += "</tbody></table>";
  if (rows == 0) return "<p class=\"empty\">no baselines recorded yet</p>";
  if (state.history.empty()) {
    out +=
        "<p class=\"meta\">No past boots recorded yet: the state dir keeps the baselines of the "
        "last " +
        std::to_string(probes::kMaxBootHistory) + " boots.</p>";
  }
  return out;
}

}  // namespace

std::string ResultFieldsHtml(const probes::ProbeResult& result) {
  // The one description of a result (result_fields.h) as a two-column table; nested fields are
  // named group.member, fields that do not apply show "—".
  struct Html : probes::ResultFieldVisitor {
    std::string rows;
    std::vector<std::string> prefix;
    std::vector<bool> absent;
    void Row(std::string_view key, const std::string& value) {
      std::string name;
      for (const auto& p : prefix) name += p + ".";
      name += key;
      rows += "<tr><th>" + HtmlEscape(name) + "</th><td>" + HtmlEscape(value) + "</td></tr>";
    }
    void Text(std::string_view key, const std::string& value) override { Row(key, value); }
    void Flag(std::string_view key, bool value) override { Row(key, value ? "true" : "false"); }
    void Real(std::string_view key, const std::optional<double>& value) override {
      Row(key, value ? Printf("%.6g", *value) : "—");
    }
    void Count(std::string_view key, const std::optional<std::uint64_t>& value) override {
      Row(key, value ? std::to_string(*value) : "—");
    }
    void Signed(std::string_view key, std::int64_t value) override {
      Row(key, std::to_string(value));
    }
    void TextList(std::string_view key, const std::vector<std::string>& values) override {
      std::string joined;
      for (const auto& v : values) joined += (joined.empty() ? "" : ", ") + v;
      Row(key, joined.empty() ? "—" : joined);
    }
    void BeginGroup(std::string_view key, probes::GroupShape, bool present) override {
      if (!present) Row(key, "—");
      prefix.emplace_back(key);
    }
    void EndGroup() override { prefix.pop_back(); }
  } html;
  probes::VisitProbeResult(result, html);
  return "<details class=\"fields\"><summary>last run: every field</summary><table>" + html.rows +
         "</table></details>";
}

std::string RenderStatusPage(const StatusPageInput& in) {
  static const probes::ProbeSnapshot kNone;
  const probes::ProbeSnapshot& states = in.probes ? *in.probes : kNone;  // in config order

  std::string out =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>iodrift status</title><style>";
  out += kStyle;
  out +=
      "</style></head><body>\n<header><h1>iodrift</h1><p>Read throughput across the machine's "
      "lifecycle, with the memory state of every moment. ";
  out +=
      "<a href=\"/metrics\">/metrics</a> (Prometheus) · "
      "<a href=\"/api/v1/probes\">/api/v1/probes</a> (JSON)</p><p class=\"meta\">";
  out += "iodriftd " + HtmlEscape(in.version) + " · boot " +
         HtmlEscape(in.boot_id.value_or("unknown")) + " · uptime " +
         HtmlEscape(Opt(in.uptime_seconds, Uptime)) + " · rendered " +
         HtmlEscape(Utc(in.now_seconds)) + " · history: last " + std::to_string(in.history_runs) +
         " runs per probe, in memory</p></header>\n";

  // Summary.
  out += "<h2>Probes</h2>";
  if (states.empty()) {
    out += "<p class=\"empty\">no probes configured</p>";
  } else {
    out +=
        "<table class=\"summary\"><thead><tr><th>probe</th><th>kind</th><th>target</th>"
        "<th>last run</th><th>result</th><th>last figure</th><th>baseline</th><th>ratio</th>"
        "<th>worst ratio (boot)</th><th>runs ok / failed</th></tr></thead><tbody>";
    for (const auto& state : states) {
      const probes::ProbeState& rec = *state;
      const config::ProbeSpec& row = rec.spec;
      out += "<tr><td><a href=\"#probe-" + HtmlEscape(SafeId(row.name)) + "\">" +
             HtmlEscape(row.name) + "</a></td>" +
             Cell(std::string(config::ProbeKindName(row.kind))) +
             Cell(row.target.empty() ? "-" : row.target);
      if (!rec.ran()) {
        out += "<td colspan=\"7\" class=\"empty\">no runs yet</td></tr>";
        continue;
      }
      std::uint64_t ok = 0, failed = 0;
      for (const auto& [outcome, n] : rec.runs) {
        (outcome == probes::Outcome::kOk ? ok : failed) += n;
      }
      out += Cell(Utc(rec.last.start_time_seconds, UtcStyle::kTimeUtc));
      out += std::string("<td class=\"") + (rec.last.success() ? "ok" : "err") + "\">" +
             HtmlEscape(probes::OutcomeName(rec.last.outcome)) + "</td>";
      out += Cell(KindUnitValue(rec.last.kind, rec.last_figure), true) +
             Cell(KindUnitValue(rec.last.kind, rec.baseline), true) +
             Cell(Opt(rec.baseline_ratio, FormatRatio), true) +
             Cell(Opt(rec.worst_ratio, FormatRatio) +
                      (rec.uptime_at_worst ? " at up " + Uptime(*rec.uptime_at_worst) : ""),
                  true) +
             Cell(std::to_string(ok) + " / " + std::to_string(failed), true) + "</tr>";
    }
    out += "</tbody></table>";
  }

  // Per probe.
  for (const auto& state : states) {
    const probes::ProbeState& rec = *state;
    const config::ProbeSpec& row = rec.spec;
    const std::string id = "probe-" + SafeId(row.name);
    out += "\n<section class=\"probe\" id=\"" + HtmlEscape(id) + "\" data-probe=\"" +
           HtmlEscape(row.name) + "\"><h2>" + HtmlEscape(row.name) + "</h2><p class=\"meta\">" +
           HtmlEscape(std::string(config::ProbeKindName(row.kind))) +
           (row.target.empty() ? "" : " · " + HtmlEscape(row.target)) + " · figure in " +
           HtmlEscape(std::string(probes::DriftFigureUnit(row.kind))) + "</p>";
    if (rec.ran() && !rec.last.success()) {
      const auto& last = rec.last;
      out += "<p class=\"err\">last run " + HtmlEscape(probes::OutcomeName(last.outcome)) +
             (last.error.empty() ? "" : ": " + HtmlEscape(last.error)) + "</p>";
    }
    if (rec.history.empty()) {
      out += "<p class=\"empty\">no runs yet</p>";
    } else {
      out += RenderProbeCharts(
          probes::ThinHistory(row.name, row.kind, row.target, rec.history, kMaxChartPoints), id);
    }
    if (rec.ran()) {
      out += ResultFieldsHtml(rec.last);
      out += "<h3>explain</h3><pre class=\"explain\">" +
             HtmlEscape(probes::ExplainProbe(rec, rec.window)) + "</pre>";
    }
    out += "</section>";
  }

  out += "\n<h2>Baselines by boot</h2>";
  out += RenderBaselineTable(in.baselines);
  out +=
      "\n<footer><p>Figures: bytes/s for cached, buffered, direct and memory; ops/s for random "
      "(reads) and metadata (creates). Baseline: median of the first clean runs after boot. "
      "Hover a point for all values of that run.</p></footer>\n<script>";
  out += kScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace iodrift::daemon
