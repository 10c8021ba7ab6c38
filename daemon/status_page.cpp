#include "daemon/status_page.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "collectors/analysis/boot_record.h"
#include "collectors/analysis/drift.h"
#include "collectors/analysis/explain.h"
#include "collectors/probes/kinds.h"
#include "collectors/probes/result_fields.h"
#include "daemon/boots_chart.h"
#include "daemon/page_format.h"
#include "daemon/probe_report.h"
#include "daemon/status_assets.h"

namespace iodrift::daemon {
namespace {

using page::Printf;
using page::Uptime;
using page::Utc;
using page::UtcStyle;
using status_assets::kScript;
using status_assets::kStyle;

bool IsOps(probes::ProbeKind kind) { return !analysis::IsThroughputKind(kind); }

std::string FormatOps(double v) {
  return v >= 100 ? Printf("%.0f ops/s", v) : Printf("%.3g ops/s", v);
}

// A figure in the unit of `kind`.
std::string FormatFigure(probes::ProbeKind kind, double v) {
  return IsOps(kind) ? FormatOps(v) : FormatRate(v);
}

std::string FormatRatio(double v) { return Printf("%.2f×", v); }
std::string FormatFraction(double v) { return Printf("%.3f", v); }

std::string Opt(const std::optional<double>& v, const std::function<std::string(double)>& f) {
  return v && std::isfinite(*v) ? f(*v) : "-";
}

// ---- page ------------------------------------------------------------------------------------

struct FeatureSeries {
  analysis::DriftFeature feature;
  const char* label;
  const char* css_class;
  const char* color;
};

// Memory chart (bytes) and pressure chart (fractions 0..1).
constexpr FeatureSeries kMemorySeries[] = {
    {analysis::DriftFeature::kMemFree, "free", "mem_free", "#2ca02c"},
    {analysis::DriftFeature::kCached, "page cache", "cached", "#1f77b4"},
    {analysis::DriftFeature::kSReclaimable, "slab reclaimable", "sreclaimable", "#ff7f0e"},
    {analysis::DriftFeature::kSUnreclaim, "slab unreclaimable", "sunreclaim", "#d62728"},
    {analysis::DriftFeature::kDirtyWriteback, "dirty+writeback", "dirty_writeback", "#8c564b"},
};
constexpr FeatureSeries kPressureSeries[] = {
    {analysis::DriftFeature::kPsiMemory, "PSI memory stall", "psi_memory", "#d62728"},
    {analysis::DriftFeature::kPsiIo, "PSI io stall", "psi_io", "#ff7f0e"},
    {analysis::DriftFeature::kFragmentation, "fragmentation index", "fragmentation", "#17becf"},
};

double Feature(const analysis::HistoryPoint& p, analysis::DriftFeature f) {
  return p.features[static_cast<std::size_t>(f)];
}

// Same-boot test: both boot ids known and different, or uptime went down.
bool NewBoot(const analysis::HistoryPoint& prev, const analysis::HistoryPoint& cur) {
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

std::string RenderProbeCharts(const analysis::ProbeHistory& h, const std::string& id) {
  const auto& pts = h.points;
  const std::vector<std::size_t> picked =
      analysis::EvenlySpacedIndices(pts.size(), kMaxChartPoints);
  // The x axis is MonotonicTimes (history.h), labelled with wall time: a clock stepped back or
  // forward never puts a run before an older one or outside the chart.
  const std::vector<double> xs = analysis::MonotonicTimes(pts);
  const double x_min = xs.front(), x_max = xs.back();
  const probes::ProbeKind kind = h.kind;

  // Boot boundaries: at the boot time of the new boot (start − uptime) when inside the range,
  // else half-way between the two runs.
  std::vector<double> boots;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (!NewBoot(pts[i - 1], pts[i])) continue;
    double b = (xs[i - 1] + xs[i]) / 2;
    if (pts[i].uptime_seconds) {
      const double boot_time = xs[i] - *pts[i].uptime_seconds;
      if (boot_time > xs[i - 1]) b = boot_time;
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
      // Wall time and uptime at x from the nearest run (same boot as x when it is after that
      // run's boot).
      std::size_t nearest = 0;
      for (std::size_t i = 1; i < pts.size(); ++i) {
        if (std::fabs(xs[i] - x) < std::fabs(xs[nearest] - x)) nearest = i;
      }
      const analysis::HistoryPoint& near = pts[nearest];
      std::string label = Utc(near.time_seconds + (x - xs[nearest]), fmt);
      if (near.uptime_seconds) {
        const double up = *near.uptime_seconds + (x - xs[nearest]);
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
  auto when = [&](const analysis::HistoryPoint& p) {
    std::string s = Utc(p.time_seconds, UtcStyle::kDateTime);
    if (p.uptime_seconds) s += " (up " + Uptime(*p.uptime_seconds) + ")";
    return s;
  };

  // 1. The figure and its baseline.
  Chart fig = base_chart(
      "figure", IsOps(kind) ? "Operations per second and baseline" : "Throughput and baseline");
  fig.format_y = [kind](double v) { return FormatFigure(kind, v); };
  ChartSeries figure{
      IsOps(kind) ? std::string(probes::Traits(kind).reads_phrase) + " (ops/s)" : "throughput",
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
      fig.failures.push_back({xs[i], what});
      ratio_chart.failures.push_back({xs[i], what});
    }
    std::string tip = at + ": " + (p.figure ? FormatFigure(kind, *p.figure) : "no figure");
    if (p.baseline) tip += ", baseline " + FormatFigure(kind, *p.baseline);
    if (p.ratio) tip += ", ratio " + FormatRatio(*p.ratio);
    figure.points.push_back({xs[i], p.figure.value_or(nan), i, tip});
    baseline.points.push_back({xs[i], p.baseline.value_or(nan), i, ""});
    ratio.points.push_back({xs[i], p.ratio.value_or(nan), i, "ratio " + Opt(p.ratio, FormatRatio)});
    for (std::size_t k = 0; k < std::size(kMemorySeries); ++k) {
      const double v = Feature(p, kMemorySeries[k].feature);
      mem_series[k].points.push_back(
          {xs[i], v, i, std::string(kMemorySeries[k].label) + " " + FormatBytes(v)});
    }
    for (std::size_t k = 0; k < std::size(kPressureSeries); ++k) {
      const double v = Feature(p, kPressureSeries[k].feature);
      pressure_series[k].points.push_back(
          {xs[i], v, i, std::string(kPressureSeries[k].label) + " " + FormatFraction(v)});
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

// The readers curve of the last run (readers.h): aggregate rate, the per-reader spread and the
// linear-scaling line (N x the one-reader rate) over the reader count, then the same as a table.
std::string RenderReadersCurve(const probes::ProbeResult& r, const std::string& id) {
  if (r.readers.empty()) return "";
  auto fmt = [&](double v) { return FormatFigure(r.kind, v); };
  Chart c;
  c.id = id + "-readers";
  c.title = "Parallel readers (last run): aggregate and per-reader spread";
  c.format_y = fmt;
  c.x_min = r.readers.front().readers;
  c.x_max = r.readers.front().readers;
  ChartSeries total{"all readers", "figure", "#1f77b4", false, true, {}};
  ChartSeries lo{"slowest reader", "reader-min", "#ff7f0e", true, true, {}};
  ChartSeries hi{"fastest reader", "reader-max", "#2ca02c", true, true, {}};
  ChartSeries linear{"N x one reader", "baseline", "#555555", true, false, {}};
  std::vector<probes::ReaderStep> steps = r.readers;
  std::sort(steps.begin(), steps.end(),
            [](const auto& a, const auto& b) { return a.readers < b.readers; });
  double rate_1 = 0;
  for (const auto& s : steps)
    if (s.readers == 1) rate_1 = s.rate;
  std::string rows;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    const double x = s.readers;
    c.x_min = std::min(c.x_min, x);
    c.x_max = std::max(c.x_max, x);
    c.x_ticks.push_back({x, std::to_string(s.readers)});
    const std::string n = std::to_string(s.readers) + " readers: ";
    total.points.push_back({x, s.rate, i, n + fmt(s.rate)});
    lo.points.push_back({x, s.per_reader_min, i, n + "slowest " + fmt(s.per_reader_min)});
    hi.points.push_back({x, s.per_reader_max, i, n + "fastest " + fmt(s.per_reader_max)});
    if (rate_1 > 0) linear.points.push_back({x, x * rate_1, i, ""});
    rows += "<tr>" + Cell(std::to_string(s.readers), true) + Cell(fmt(s.rate), true) +
            Cell(fmt(s.per_reader_min), true) + Cell(fmt(s.per_reader_max), true) +
            Cell(Opt(s.scaling_efficiency, FormatFraction), true) + "</tr>";
  }
  c.series = {total, lo, hi};
  if (!linear.points.empty()) c.series.push_back(linear);
  return "<figure><h3>" + HtmlEscape(c.title) + "</h3>" + RenderChart(c) +
         "</figure><table class=\"readers\"><thead><tr><th>readers</th><th>all readers</th>"
         "<th>slowest reader</th><th>fastest reader</th><th>scaling efficiency</th></tr>"
         "</thead><tbody>" +
         rows + "</tbody></table>";
}

std::string KindUnitValue(probes::ProbeKind kind, const std::optional<double>& v) {
  return Opt(v, [kind](double x) { return FormatFigure(kind, x); });
}

std::string RenderBaselineTable(const analysis::BaselineState& state) {
  // The boot record's columns (boot_record.h): the ratio at 1 h, 1 d, 7 d, 30 d, the last ratio.
  std::string out =
      "<div class=\"wide\"><table class=\"boots\"><thead><tr><th>boot</th><th>boot time</th>"
      "<th>probe</th><th>kind</th><th>target</th><th>baseline</th>";
  for (const char* mark : analysis::kBootMarkNames) out += "<th>" + std::string(mark) + "</th>";
  out +=
      "<th>last</th><th>worst ratio</th><th>uptime at worst</th><th>verdict</th></tr></thead>"
      "<tbody>";
  std::size_t rows = 0;
  auto row = [&](const std::string& boot, std::uint64_t boot_time, const analysis::BaselineKey& key,
                 const std::optional<double>& base, const std::optional<double>& worst,
                 const std::optional<double>& at, const analysis::BootRecord& record) {
    out += "<tr>" + Cell(boot) +
           Cell(boot_time ? Utc(static_cast<double>(boot_time), UtcStyle::kDateMinute) : "-") +
           Cell(key.name) + Cell(std::string(probes::ProbeKindName(key.kind))) +
           Cell(key.target.empty() ? "-" : key.target) + Cell(KindUnitValue(key.kind, base), true);
    for (const auto& ratio : record.at) out += Cell(Opt(ratio, FormatRatio), true);
    out += Cell(Opt(record.last_ratio, FormatRatio), true) + Cell(Opt(worst, FormatRatio), true) +
           Cell(Opt(at, Uptime), true) +
           Cell(record.worst_verdict.empty() ? "-" : record.worst_verdict) + "</tr>";
    ++rows;
  };
  const std::string current =
      state.boot_id.empty() ? "this boot" : "this boot (" + state.boot_id.substr(0, 8) + ")";
  for (const auto& [name, pb] : state.probes) {
    row(current, state.boot_time_seconds, pb.key, pb.baseline, pb.worst_ratio, pb.uptime_at_worst,
        pb.record);
  }
  for (auto it = state.history.rbegin(); it != state.history.rend(); ++it) {
    for (const auto& pp : it->probes) {
      row(it->boot_id.substr(0, 8), it->boot_time_seconds, pp.key, pp.baseline, pp.worst_ratio,
          pp.uptime_at_worst, pp.record);
    }
  }
  out += "</tbody></table></div>";
  if (rows == 0) return "<p class=\"empty\">no baselines recorded yet</p>";
  if (state.history.empty()) {
    out +=
        "<p class=\"meta\">No past boots recorded yet: the state dir keeps the baselines of the "
        "last " +
        std::to_string(analysis::kMaxBootHistory) + " boots.</p>";
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
    void Text(std::string_view key, const std::string& value,
              const probes::MetricExport&) override {
      Row(key, value);
    }
    void Flag(std::string_view key, bool value, const probes::MetricExport&) override {
      Row(key, value ? "true" : "false");
    }
    void Real(std::string_view key, const std::optional<double>& value,
              const probes::MetricExport&) override {
      Row(key, value ? Printf("%.6g", *value) : "—");
    }
    void Count(std::string_view key, const std::optional<std::uint64_t>& value,
               const probes::MetricExport&) override {
      Row(key, value ? std::to_string(*value) : "—");
    }
    void Signed(std::string_view key, std::int64_t value, const probes::MetricExport&) override {
      Row(key, std::to_string(value));
    }
    void TextList(std::string_view key, const std::vector<std::string>& values,
                  const probes::MetricExport&) override {
      std::string joined;
      for (const auto& v : values) joined += (joined.empty() ? "" : ", ") + v;
      Row(key, joined.empty() ? "—" : joined);
    }
    bool BeginGroup(std::string_view key, probes::GroupShape, bool present,
                    const probes::MetricExport&) override {
      if (!present) Row(key, "—");
      prefix.emplace_back(key);
      return present;
    }
    void EndGroup() override { prefix.pop_back(); }
  } html;
  probes::VisitProbeResult(result, html);
  return "<details class=\"fields\"><summary>last run: every field</summary><table>" + html.rows +
         "</table></details>";
}

namespace {

// `members: true` on an array: each member's figure and the array/member ratio of the last run.
std::string MemberTableHtml(const probes::ProbeResult& r) {
  std::string out =
      "<h3>array members</h3><table class=\"members\"><thead><tr><th>member</th><th>figure</th>"
      "<th>array / member</th></tr></thead><tbody>";
  for (const auto& member : r.target_info.members) {
    out += "<tr><td>" + HtmlEscape(member) + "</td>";
    auto figure = r.member_figures.find(member);
    if (figure == r.member_figures.end()) {
      auto error = r.member_errors.find(member);
      out += "<td colspan=\"2\" class=\"err\">" +
             HtmlEscape(error == r.member_errors.end() ? "no figure" : error->second) +
             "</td></tr>";
      continue;
    }
    auto ratio = r.member_ratios.find(member);
    out += Cell(KindUnitValue(r.kind, figure->second), true) +
           Cell(ratio == r.member_ratios.end() ? "-" : FormatRatio(ratio->second), true) + "</tr>";
  }
  return out + "</tbody></table>";
}

}  // namespace

std::string RenderStatusPage(const StatusPageInput& in) {
  static const analysis::ProbeSnapshot kNone;
  const analysis::ProbeSnapshot& states = in.probes ? *in.probes : kNone;  // in config order

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
  if (!in.state_problem.empty()) {
    out += "<p class=\"banner err\" id=\"state-problem\" role=\"alert\">" +
           HtmlEscape(in.state_problem) + "</p>\n";
  }

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
      const analysis::ProbeState& rec = *state;
      const probes::ProbeSpec& row = rec.spec;
      out += "<tr><td><a href=\"#probe-" + HtmlEscape(SafeId(row.name)) + "\">" +
             HtmlEscape(row.name) + "</a></td>" +
             Cell(std::string(probes::ProbeKindName(row.kind))) +
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
    const analysis::ProbeState& rec = *state;
    const probes::ProbeSpec& row = rec.spec;
    const std::string id = "probe-" + SafeId(row.name);
    out += "\n<section class=\"probe\" id=\"" + HtmlEscape(id) + "\" data-probe=\"" +
           HtmlEscape(row.name) + "\"><h2>" + HtmlEscape(row.name) + "</h2><p class=\"meta\">" +
           HtmlEscape(std::string(probes::ProbeKindName(row.kind))) +
           (row.target.empty() ? "" : " · " + HtmlEscape(row.target)) + " · figure in " +
           HtmlEscape(std::string(analysis::DriftFigureUnit(row.kind))) + "</p>";
    if (rec.ran() && !rec.last.success()) {
      const auto& last = rec.last;
      out += "<p class=\"err\">last run " + HtmlEscape(probes::OutcomeName(last.outcome)) +
             (last.error.empty() ? "" : ": " + HtmlEscape(last.error)) + "</p>";
    }
    if (rec.history.empty()) {
      out += "<p class=\"empty\">no runs yet</p>";
    } else {
      out += RenderProbeCharts(
          analysis::ThinHistory(row.name, row.kind, row.target, rec.history, kMaxChartPoints), id);
    }
    if (rec.ran() && rec.last.success()) out += RenderReadersCurve(rec.last, id);
    if (rec.ran() && (!rec.last.member_figures.empty() || !rec.last.member_errors.empty())) {
      out += MemberTableHtml(rec.last);
    }
    if (rec.ran()) {
      out += ResultFieldsHtml(rec.last);
      out += "<h3>explain</h3><pre class=\"explain\">" +
             HtmlEscape(analysis::ExplainProbe(rec, rec.window)) + "</pre>";
    }
    if (rec.diagnosis || rec.experiment_runs > 0) {
      // The recovery experiment's own record: its runs are in no chart or figure above.
      out += "<h3>last diagnose</h3><pre class=\"diagnose\">" +
             HtmlEscape((rec.diagnosis ? analysis::DiagnoseDetails(*rec.diagnosis)
                                       : std::string("no experiment finished yet\n")) +
                        "experiment runs since the daemon started: " +
                        std::to_string(rec.experiment_runs) +
                        " (kept out of the baseline, history and worst ratio)\n") +
             "</pre>";
    }
    out += "</section>";
  }

  out += "\n<h2>Baselines by boot</h2>";
  out += RenderBaselineTable(in.baselines);
  out += RenderBootsCharts(in.baselines);
  out +=
      "\n<footer><p>Figures: bytes/s for cached, buffered, direct and memory; ops/s for random "
      "(reads) and metadata (creates). Baseline: median of the first clean runs after boot. "
      "Hover a point for all values of that run.</p></footer>\n<script>";
  out += kScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace iodrift::daemon
