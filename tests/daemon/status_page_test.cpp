#include "daemon/status_page.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "config/config.h"
#include "tests/daemon/svg_coords.h"

namespace iodrift::daemon {
namespace {

using analysis::DriftFeature;

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// The <svg ...>...</svg> element with this id ("" when missing).
std::string Svg(const std::string& page, const std::string& id) {
  auto start = page.find("<svg class=\"chart\" id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  auto end = page.find("</svg>", start);
  return page.substr(start, end + 6 - start);
}

// The <g ... data-series="NAME"> group of a chart's series.
std::string SeriesGroup(const std::string& svg, const std::string& name) {
  auto start = svg.find("<g class=\"series " + name + "\"");
  if (start == std::string::npos) return "";
  auto end = svg.find("</g>", start);
  return svg.substr(start, end + 4 - start);
}

probes::ProbeSpec Spec(const std::string& name, probes::ProbeKind kind, const std::string& target) {
  probes::ProbeSpec s;
  s.name = name;
  s.kind = kind;
  s.target = target;
  return s;
}

analysis::HistoryPoint Point(double t, std::optional<double> figure, std::optional<double> baseline,
                             const char* boot = "boot-a") {
  analysis::HistoryPoint p;
  p.time_seconds = t;
  p.boot_id = std::make_shared<const std::string>(boot);
  p.uptime_seconds = t - 1'700'000'000;
  p.outcome = figure ? probes::Outcome::kOk : probes::Outcome::kError;
  p.figure = figure;
  p.baseline = baseline;
  if (figure && baseline) p.ratio = *figure / *baseline;
  for (auto f : {DriftFeature::kMemFree, DriftFeature::kCached, DriftFeature::kSReclaimable,
                 DriftFeature::kSUnreclaim, DriftFeature::kDirtyWriteback}) {
    p.features[static_cast<std::size_t>(f)] = 1e9 + t;
  }
  for (auto f : {DriftFeature::kPsiMemory, DriftFeature::kPsiIo, DriftFeature::kFragmentation}) {
    p.features[static_cast<std::size_t>(f)] = 0.01;
  }
  return p;
}

analysis::ProbeHistory History(const std::string& name, probes::ProbeKind kind,
                               const std::string& target, std::size_t n, double baseline = 1e8) {
  analysis::ProbeHistory h;
  h.name = name;
  h.kind = kind;
  h.target = target;
  for (std::size_t i = 0; i < n; ++i) {
    h.points.push_back(Point(1'700'003'600.0 + 60.0 * static_cast<double>(i),
                             1e8 * (1 + 0.01 * static_cast<double>(i)), baseline));
  }
  return h;
}

analysis::ProbeState Record(const std::string& name, probes::ProbeKind kind,
                            const std::string& target) {
  analysis::ProbeState r;
  r.last.name = name;
  r.last.kind = kind;
  r.last.target = target;
  r.last.outcome = probes::Outcome::kOk;
  r.last.start_time_seconds = 1'700'003'600;
  r.baseline = 1e8;
  r.last_figure = 9e7;
  r.baseline_ratio = 0.9;
  r.worst_ratio = 0.8;
  r.uptime_at_worst = 3600;
  r.runs = {{probes::Outcome::kOk, 5}, {probes::Outcome::kError, 1}};
  return r;
}

// The page's probes as the tests describe them (specs, records, histories by name), joined into
// the one snapshot the page reads.
struct PageProbes {
  std::vector<probes::ProbeSpec> specs;
  std::vector<analysis::ProbeState> records;
  std::vector<analysis::ProbeHistory> histories;
};

StatusPageInput With(StatusPageInput in, const PageProbes& pp) {
  auto snapshot = std::make_shared<analysis::ProbeSnapshot>();
  for (const auto& spec : pp.specs) {
    analysis::ProbeState state;
    for (const auto& r : pp.records) {
      if (r.last.name == spec.name) state = r;
    }
    state.spec = spec;
    for (const auto& h : pp.histories) {
      if (h.name != spec.name) continue;
      for (const auto& point : h.points) state.history = state.history.Append(point, 100000);
    }
    snapshot->push_back(std::make_shared<const analysis::ProbeState>(std::move(state)));
  }
  in.probes = std::move(snapshot);
  return in;
}

StatusPageInput Input() {
  StatusPageInput in;
  in.version = "1.2.3";
  in.now_seconds = 1'700'010'000;
  in.boot_id = "boot-a";
  in.uptime_seconds = 10'000;
  in.history_runs = 240;
  return in;
}

TEST(HtmlEscape, EscapesMarkupCharactersOnly) {
  EXPECT_EQ(HtmlEscape(R"(<a href="x">'&'</a> µs)"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt; µs");
}

TEST(RenderStatusPage, ANeverRunProbeSaysNoRunsYetAndDrawsNoChart) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("disk-cached", probes::ProbeKind::kCached, "/dev/vdb")};
  const std::string page = RenderStatusPage(With(in, pp));
  EXPECT_NE(page.find("<!doctype html>"), std::string::npos);
  EXPECT_NE(page.find("<section class=\"probe\" id=\"probe-disk-cached\""), std::string::npos);
  EXPECT_GE(Count(page, "no runs yet"), 2u);  // summary row and section
  EXPECT_EQ(Count(page, "<svg"), 0u);
  EXPECT_EQ(Count(page, "<circle"), 0u);
  EXPECT_EQ(page.find("nan"), std::string::npos);
  EXPECT_EQ(page.find("inf"), std::string::npos);
  EXPECT_NE(page.find("no baselines recorded yet"), std::string::npos);
}

TEST(RenderStatusPage, NoProbesAtAllIsStillAPage) {
  const std::string page = RenderStatusPage(Input());
  EXPECT_NE(page.find("no probes configured"), std::string::npos);
  EXPECT_NE(page.find("</html>"), std::string::npos);
}

TEST(RenderStatusPage, AnUnwritableStateDirIsABannerAboveEverything) {
  EXPECT_EQ(RenderStatusPage(Input()).find("state-problem"), std::string::npos);
  StatusPageInput in = Input();
  in.state_problem = "state dir not writable (baselines: <Read-only> file system)";
  const std::string page = RenderStatusPage(in);
  const auto banner = page.find("<p class=\"banner err\" id=\"state-problem\" role=\"alert\">");
  ASSERT_NE(banner, std::string::npos);
  EXPECT_LT(banner, page.find("<h2>Probes</h2>"));
  EXPECT_NE(page.find("(baselines: &lt;Read-only&gt; file system)", banner), std::string::npos);
}

TEST(RenderStatusPage, LinksToMetricsAndTheJsonApiAndLoadsNothingFromOutside) {
  const std::string page = RenderStatusPage(Input());
  EXPECT_NE(page.find("<a href=\"/metrics\">"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/api/v1/probes\">"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));  // only the xmlns
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST(RenderStatusPage, OneCircleForEveryPointOfEverySeries) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("disk-cached", probes::ProbeKind::kCached, "/dev/vdb")};
  pp.records = {Record("disk-cached", probes::ProbeKind::kCached, "/dev/vdb")};
  pp.histories = {History("disk-cached", probes::ProbeKind::kCached, "/dev/vdb", 7)};
  const std::string page = RenderStatusPage(With(in, pp));
  const std::string fig = Svg(page, "probe-disk-cached-figure");
  ASSERT_FALSE(fig.empty()) << page;
  EXPECT_EQ(Count(fig, "<circle"), 7u);
  EXPECT_EQ(Count(SeriesGroup(fig, "figure"), "<polyline"), 1u);
  EXPECT_EQ(Count(Svg(page, "probe-disk-cached-ratio"), "<circle"), 7u);
  EXPECT_EQ(Count(Svg(page, "probe-disk-cached-memory"), "<circle"), 5u * 7u);
  EXPECT_EQ(Count(Svg(page, "probe-disk-cached-pressure"), "<circle"), 3u * 7u);
  EXPECT_EQ(Count(page, "<circle"), 7u * (1 + 1 + 5 + 3));
  EXPECT_EQ(Count(page, "<svg"), 4u);
  EXPECT_EQ(Count(page, "</svg>"), 4u);
  // Every chart has a legend; the memory chart names its five series.
  EXPECT_EQ(Count(page, "<g class=\"legend\">"), 4u);
  const std::string mem = Svg(page, "probe-disk-cached-memory");
  for (const char* label :
       {"free", "page cache", "slab reclaimable", "slab unreclaimable", "dirty+writeback"}) {
    EXPECT_NE(mem.find(">" + std::string(label) + "</text>"), std::string::npos) << label;
  }
  // Tooltips carry the values; bytes/s for a cached probe.
  EXPECT_NE(fig.find("<title>"), std::string::npos);
  EXPECT_NE(fig.find("MiB/s"), std::string::npos);
  EXPECT_NE(page.find("<pre class=\"explain\">"), std::string::npos);
  EXPECT_EQ(page.find("nan"), std::string::npos);
}

TEST(RenderStatusPage, DrawsTheBaselineAsADashedLineWithALegendEntry) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("r", probes::ProbeKind::kRandom, "/dev/vdb")};
  pp.histories = {History("r", probes::ProbeKind::kRandom, "/dev/vdb", 4, 1e8)};
  const std::string fig = Svg(RenderStatusPage(With(in, pp)), "probe-r-figure");
  const std::string baseline = SeriesGroup(fig, "baseline");
  ASSERT_FALSE(baseline.empty()) << fig;
  EXPECT_EQ(Count(baseline, "<polyline"), 1u);
  EXPECT_NE(baseline.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(Count(baseline, "<circle"), 0u);  // the data points are the figure's
  EXPECT_NE(fig.find("data-series=\"baseline\"><line"), std::string::npos);  // legend swatch
  EXPECT_NE(fig.find(">baseline</text>"), std::string::npos);
  EXPECT_NE(fig.find("ops/s"), std::string::npos);  // random: ops/s, not bytes/s
  EXPECT_EQ(fig.find("B/s"), std::string::npos);
}

TEST(RenderStatusPage, FailedRunsAreMarkedNotDrawnAsPointsAndSplitTheLine) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("c", probes::ProbeKind::kCached, "/dev/vdb")};
  analysis::ProbeHistory h = History("c", probes::ProbeKind::kCached, "/dev/vdb", 5);
  h.points[2] = Point(h.points[2].time_seconds, std::nullopt, 1e8);
  pp.histories = {h};
  const std::string fig = Svg(RenderStatusPage(With(in, pp)), "probe-c-figure");
  EXPECT_EQ(Count(fig, "<circle"), 4u);
  EXPECT_EQ(Count(SeriesGroup(fig, "figure"), "<polyline"), 2u);
  EXPECT_EQ(Count(fig, "<path class=\"fail\""), 1u + 1u);  // the mark and its legend entry
  EXPECT_NE(fig.find("failed run"), std::string::npos);
}

TEST(RenderStatusPage, EscapesProbeTargetsAndErrors) {
  StatusPageInput in = Input();
  PageProbes pp;
  const std::string target = "/mnt/<script>alert(1)</script>";
  pp.specs = {Spec("x", probes::ProbeKind::kCached, target)};
  analysis::ProbeState rec = Record("x", probes::ProbeKind::kCached, target);
  rec.last.outcome = probes::Outcome::kError;
  rec.last.error = "open \"/mnt/<b>\": a & b";
  pp.records = {rec};
  pp.histories = {History("x", probes::ProbeKind::kCached, target, 3)};
  in.baselines.history.push_back(
      {"<past>",
       1'600'000'000,
       {{{"x", probes::ProbeKind::kCached, target, 0}, 1e8, 0.5, 7200.0, {}}}});
  const std::string page = RenderStatusPage(With(in, pp));
  EXPECT_EQ(Count(page, "<script>"), 1u);  // our own, nothing injected
  EXPECT_EQ(page.find("<b>"), std::string::npos);
  EXPECT_EQ(page.find("<past>"), std::string::npos);
  EXPECT_NE(page.find("/mnt/&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("open &quot;/mnt/&lt;b&gt;&quot;: a &amp; b"), std::string::npos);
  EXPECT_NE(page.find("&lt;past&gt;"), std::string::npos);
}

TEST(RenderStatusPage, DrawsAtMostMaxChartPointsOfALongHistory) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("c", probes::ProbeKind::kCached, "/dev/vdb")};
  pp.histories = {History("c", probes::ProbeKind::kCached, "/dev/vdb", 1000)};
  const std::string page = RenderStatusPage(With(in, pp));
  EXPECT_EQ(Count(Svg(page, "probe-c-figure"), "<circle"), kMaxChartPoints);
  EXPECT_NE(page.find("showing 240 of 1000 runs"), std::string::npos);
  // The newest is always drawn (data-i counts the points drawn, oldest first).
  EXPECT_NE(page.find("data-i=\"239\""), std::string::npos);
}

TEST(RenderStatusPage, MarksABootBoundaryWhereTheBootIdChanges) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("c", probes::ProbeKind::kCached, "/dev/vdb")};
  analysis::ProbeHistory h = History("c", probes::ProbeKind::kCached, "/dev/vdb", 4);
  for (std::size_t i = 2; i < 4; ++i) {
    h.points[i].boot_id = std::make_shared<const std::string>("boot-b");
    h.points[i].uptime_seconds = 30.0 * static_cast<double>(i);
  }
  pp.histories = {h};
  const std::string page = RenderStatusPage(With(in, pp));
  EXPECT_EQ(Count(Svg(page, "probe-c-figure"), "<g class=\"boot\">"), 1u);
  EXPECT_EQ(Count(page, "<g class=\"boot\">"), 4u);  // on every chart of the probe
  pp.histories = {History("c", probes::ProbeKind::kCached, "/dev/vdb", 4)};
  EXPECT_EQ(Count(RenderStatusPage(With(in, pp)), "<g class=\"boot\">"), 0u);
}

// The wall clock stepped back 30 days after the 4th run (NTP correcting a machine without an
// RTC battery), then forward 60 days after the 7th: the runs are still drawn in their order,
// evenly by the uptime between them, every mark inside the 640-wide chart, and the ticks still
// name wall-clock times of the runs.
TEST(RenderStatusPage, ChartsSurviveClockStepsBothWays) {
  StatusPageInput in = Input();
  PageProbes pp;
  pp.specs = {Spec("c", probes::ProbeKind::kCached, "/dev/vdb")};
  analysis::ProbeHistory h = History("c", probes::ProbeKind::kCached, "/dev/vdb", 10);
  const double month = 30 * 86400.0;
  for (std::size_t i = 4; i < 10; ++i) h.points[i].time_seconds -= month;
  for (std::size_t i = 7; i < 10; ++i) h.points[i].time_seconds += 2 * month;
  h.points[5].outcome = probes::Outcome::kError;  // a failure mark after the step
  h.points[5].figure.reset();
  h.points[5].ratio.reset();
  pp.histories = {h};
  const std::string page = RenderStatusPage(With(in, pp));
  for (const char* chart : {"figure", "ratio", "memory", "pressure"}) {
    const std::string svg = Svg(page, std::string("probe-c-") + chart);
    ASSERT_FALSE(svg.empty()) << chart;
    for (double x : testing::SvgXCoordinates(svg)) {
      EXPECT_GE(x, 0) << chart;
      EXPECT_LE(x, 640) << chart;
    }
  }
  const auto cx = testing::SvgSeriesCx(Svg(page, "probe-c-memory"), "mem_free");
  ASSERT_EQ(cx.size(), 10u);
  for (std::size_t i = 1; i < cx.size(); ++i) EXPECT_GT(cx[i], cx[i - 1]) << i;
  EXPECT_NEAR(cx[1] - cx[0], cx[9] - cx[8], 0.2);  // one minute apart, before and after
}

TEST(RenderStatusPage, ListsTheBaselinesOfThisAndPastBoots) {
  StatusPageInput in = Input();
  PageProbes pp;
  analysis::ProbeBaseline now;
  now.key = {"c", probes::ProbeKind::kCached, "/dev/vdb", 0};
  now.baseline = 1024.0 * 1024 * 100;
  now.worst_ratio = 0.75;
  in.baselines.boot_id = "0123456789abcdef";
  in.baselines.probes["c"] = now;
  in.baselines.history.push_back(
      {"fedcba9876543210",
       1'690'000'000,
       {{{"r", probes::ProbeKind::kRandom, "/dev/vdb", 64}, 5000.0, 0.42, 3'456'000.0, {}}}});
  const std::string page = RenderStatusPage(With(in, pp));
  EXPECT_NE(page.find("<td>this boot (01234567)</td>"), std::string::npos) << page;
  EXPECT_NE(page.find("100 MiB/s"), std::string::npos);
  EXPECT_NE(page.find("0.75×"), std::string::npos);
  EXPECT_NE(page.find("<td>fedcba98</td>"), std::string::npos);
  EXPECT_NE(page.find("5000 ops/s"), std::string::npos);
  EXPECT_NE(page.find("0.42×"), std::string::npos);
  EXPECT_NE(page.find("40d 0h"), std::string::npos);  // uptime at worst
}

TEST(RenderChart, OneCirclePerFinitePointAndAPolylinePerRun) {
  Chart c;
  c.id = "t";
  c.title = "T";
  c.x_min = 0;
  c.x_max = 10;
  ChartSeries s{"a", "a", "#000", false, true, {}};
  const double nan = std::nan("");
  for (double x : {0.0, 1.0, 2.0}) s.points.push_back({x, x, 0, "tip"});
  s.points.push_back({3, nan, 3, ""});
  for (double x : {4.0, 5.0}) s.points.push_back({x, x, 0, "tip"});
  s.points.push_back({6, nan, 6, ""});
  s.points.push_back({7, 1, 7, ""});  // a lone point: a circle, no polyline
  c.series = {s};
  const std::string svg = RenderChart(c);
  EXPECT_EQ(Count(svg, "<circle"), 6u);
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_EQ(Count(svg, "<g class=\"legend\">"), 1u);
}

// The `status:` config section (config/config.cpp) that switches this page and bounds its history.
TEST(StatusConfig, DefaultsToEnabledWith240RunsAndReadsBothKeys) {
  auto defaults = config::LoadFromString("", "s.yaml");
  ASSERT_TRUE(defaults);
  EXPECT_TRUE(defaults->status.enabled);
  EXPECT_EQ(defaults->status.history_runs, 240u);
  EXPECT_EQ(config::DefaultConfig("/x").status, config::StatusOptions{});
  auto loaded =
      config::LoadFromString("status:\n  enabled: false\n  history_runs: 100000\n", "s.yaml");
  ASSERT_TRUE(loaded);
  EXPECT_FALSE(loaded->status.enabled);
  EXPECT_EQ(loaded->status.history_runs, 100000u);
  auto empty = config::LoadFromString("status:\n", "s.yaml");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, config::StatusOptions{});
}

TEST(StatusConfig, RejectsBadValuesNamingFileLineColumnAndKey) {
  auto loaded = config::LoadFromString(
      "status:\n  enabled: yes\n  history_runs: 1\n  histroy_runs: 5\n", "s.yaml");
  ASSERT_FALSE(loaded);
  std::string all;
  for (const auto& p : loaded.error()) all += p.ToString() + "\n";
  EXPECT_EQ(loaded.error().size(), 3u) << all;
  EXPECT_NE(all.find("s.yaml:2:12: status.enabled: expected true or false"), std::string::npos)
      << all;
  EXPECT_NE(all.find("s.yaml:3:17: status.history_runs: must be an integer from 2 to 100000"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("s.yaml:4:3: status.histroy_runs"), std::string::npos) << all;
  auto too_big = config::LoadFromString("status:\n  history_runs: 100001\n", "s.yaml");
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error()[0].key, "status.history_runs");
  auto not_map = config::LoadFromString("status: true\n", "s.yaml");
  ASSERT_FALSE(not_map);
  EXPECT_EQ(not_map.error()[0].ToString().rfind("s.yaml:1:9: status: expected a map", 0), 0u)
      << not_map.error()[0].ToString();
}

}  // namespace
}  // namespace iodrift::daemon
