// Tests of the general SVG chart (daemon/svg_chart.h) on its own, without a status page.
#include "daemon/svg_chart.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/daemon/svg_coords.h"

namespace iodrift::daemon {
namespace {

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

Chart Lines(std::size_t n) {
  Chart c;
  c.id = "c";
  c.title = "title";
  c.x_min = 0;
  c.x_max = static_cast<double>(n);
  ChartSeries s{"series", "s", "#123456", false, true, {}};
  for (std::size_t i = 0; i < n; ++i) {
    s.points.push_back({static_cast<double>(i), static_cast<double>(i % 7), i, "tip"});
  }
  c.series = {s};
  return c;
}

// Points, failures and boots outside [x_min, x_max] (a clock stepped back by 30 days, or
// forward) are drawn at the nearer edge: every x stays within the 640-unit-wide chart.
TEST(SvgChart, EveryMarkStaysInsideTheChartWhateverItsX) {
  Chart c = Lines(4);
  const double month = 30 * 86400.0;
  c.series[0].points.push_back({-month, 3, 4, "a month before x_min"});
  c.series[0].points.push_back({month, 2, 5, "a month after x_max"});
  c.series[0].points.push_back({std::nan(""), 1, 6, "no x"});
  c.failures = {{-month, "failed long before"}, {month, "failed long after"}};
  c.boots = {-month, month};
  const std::string svg = RenderChart(c);
  const auto xs = testing::SvgXCoordinates(svg);
  ASSERT_GT(xs.size(), 20u);
  for (double x : xs) {
    EXPECT_GE(x, 0) << svg;
    EXPECT_LE(x, 640) << svg;
  }
  EXPECT_EQ(Count(svg, "<circle class=\"pt\""), 7u);
}

TEST(SvgChart, RendersOneCircleWithItsIndexPerPoint) {
  for (std::size_t n : {1u, 2u, 17u, 240u}) {
    const std::string svg = RenderChart(Lines(n));
    EXPECT_EQ(Count(svg, "<circle class=\"pt\""), n) << n;
    EXPECT_EQ(Count(svg, "<polyline"), n >= 2 ? 1u : 0u) << n;
    EXPECT_NE(svg.find("data-i=\"" + std::to_string(n - 1) + "\""), std::string::npos) << n;
    EXPECT_EQ(svg.rfind("<svg class=\"chart\" id=\"c\"", 0), 0u);
    EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
  }
}

TEST(SvgChart, MarkersOffDrawsTheLineWithoutCircles) {
  Chart c = Lines(5);
  c.series[0].markers = false;
  c.series[0].dashed = true;
  const std::string svg = RenderChart(c);
  EXPECT_EQ(Count(svg, "<circle"), 0u);
  EXPECT_EQ(Count(svg, "<polyline"), 1u);
  EXPECT_NE(svg.find("stroke-dasharray=\"6 4\""), std::string::npos);
}

TEST(SvgChart, EscapesEveryTextItShows) {
  const std::string evil = "<script>\"x\" & 'y'</script>";
  Chart c = Lines(3);
  c.id = evil;
  c.title = evil;
  c.series[0].label = evil;
  c.series[0].css_class = evil;
  c.series[0].color = evil;
  c.series[0].points[0].tip = evil;
  c.failures.push_back({1, evil});
  c.x_ticks = {{1, evil + "\n" + evil}};
  const std::string svg = RenderChart(c);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("\"x\""), std::string::npos);
  EXPECT_EQ(svg.find("'y'"), std::string::npos);
  const std::string escaped = "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;";
  // id, aria-label, <title>, series class + data-series, fill + stroke, tip, failure tip, legend
  // (data-series, stroke, label) and both lines of the tick label.
  EXPECT_GE(Count(svg, escaped), 12u);
}

TEST(SvgChart, SplitsMultiLineTickLabelsIntoTspans) {
  Chart c = Lines(3);
  c.x_ticks = {{0, "12:00\nup 3d 1h"}, {2, "12:05"}, {99, "outside"}};
  const std::string svg = RenderChart(c);
  EXPECT_NE(svg.find(">12:00</tspan>"), std::string::npos);
  EXPECT_NE(svg.find("dy=\"1.15em\">up 3d 1h</tspan>"), std::string::npos);
  EXPECT_NE(svg.find(">12:05</tspan>"), std::string::npos);
  EXPECT_EQ(svg.find("outside"), std::string::npos);  // beyond x_max: not drawn
}

TEST(SvgChart, DefaultTicksAreFiveUtcMinutes) {
  Chart c = Lines(2);
  c.x_min = 1'764'806'400;  // 2025-12-04 00:00:00 UTC
  c.x_max = c.x_min + 4 * 3600;
  for (auto& p : c.series[0].points) p.x += c.x_min;
  const std::string svg = RenderChart(c);
  for (const char* label : {">00:00<", ">01:00<", ">02:00<", ">03:00<", ">04:00<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
}

TEST(SvgChart, DrawsFailuresBootsReferenceAndALegendEntryPerSeries) {
  Chart c = Lines(4);
  c.series.push_back({"second", "second", "#654321", true, false, {{0, 1, 0, ""}, {3, 2, 3, ""}}});
  c.failures = {{1, "timeout"}, {2, "io error"}};
  c.boots = {1.5, 100};  // the second is outside [x_min, x_max]
  c.reference_y = 1.0;
  c.format_y = [](double v) { return "y=" + std::to_string(static_cast<int>(v)); };
  const std::string svg = RenderChart(c);
  EXPECT_EQ(Count(svg, "<path class=\"fail\""), 3u);  // two marks + the legend's sample
  EXPECT_EQ(Count(svg, "<g class=\"legend-item\""), 3u);
  EXPECT_NE(svg.find(">failed run</text>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<g class=\"boot\">"), 1u);
  EXPECT_EQ(Count(svg, "<line class=\"reference\""), 1u);
  EXPECT_NE(svg.find(">y=0</text>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<circle"), 4u);  // the second series has no markers
}

TEST(SvgChart, ASinglePointOrAnEmptyChartStillRenders) {
  Chart one = Lines(1);
  one.x_min = one.x_max = 50;
  one.series[0].points[0].x = 50;
  const std::string svg = RenderChart(one);
  EXPECT_EQ(Count(svg, "<circle"), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);

  const std::string empty = RenderChart(Chart{});
  EXPECT_EQ(Count(empty, "<circle"), 0u);
  EXPECT_NE(empty.find("</svg>"), std::string::npos);
  EXPECT_EQ(empty.find("nan"), std::string::npos);
}

// log_x places x by log10: each decade of [1, 10^4] takes a quarter of the plot (78 to 608), and an
// x at or below 0, NaN, or far outside the range is drawn at the nearer edge.
TEST(SvgChart, LogXPlacesDecadesEvenlyAndClampsTheRest) {
  Chart c;
  c.id = "log";
  c.title = "log";
  c.log_x = true;
  c.x_min = 1;
  c.x_max = 1e4;
  ChartSeries s{"boot", "b", "#123456", false, true, {}};
  for (double x : {1.0, 10.0, 100.0, 1000.0, 1e4}) s.points.push_back({x, 1, 0, ""});
  c.series = {s};
  auto cx = testing::SvgSeriesCx(RenderChart(c), "b");
  ASSERT_EQ(cx.size(), 5u);
  for (std::size_t i = 0; i < cx.size(); ++i) EXPECT_NEAR(cx[i], 78 + 132.5 * i, 0.06) << i;

  c.series[0].points = {{0, 1, 0, ""},
                        {-5, 1, 0, ""},
                        {std::nan(""), 1, 0, ""},
                        {1e12, 1, 0, ""},
                        {1e-300, 1, 0, ""}};
  c.boots = {0, 1e12};
  c.failures = {{-1, "before"}, {1e12, "after"}};
  const std::string svg = RenderChart(c);
  cx = testing::SvgSeriesCx(svg, "b");
  EXPECT_EQ(cx, (std::vector<double>{78, 78, 78, 608, 78})) << svg;
  for (double x : testing::SvgXCoordinates(svg)) {
    EXPECT_GE(x, 0) << svg;
    EXPECT_LE(x, 640) << svg;
  }
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);

  // One point (or an x_min at 0) still renders with the point inside.
  c.x_min = c.x_max = 0;
  c.series[0].points = {{3600, 1, 0, ""}};
  cx = testing::SvgSeriesCx(RenderChart(c), "b");
  ASSERT_EQ(cx.size(), 1u);
  EXPECT_EQ(cx[0], 608);
  c.x_min = c.x_max = 3600;
  cx = testing::SvgSeriesCx(RenderChart(c), "b");
  EXPECT_NEAR(cx[0], 343, 0.06);
}

}  // namespace
}  // namespace iodrift::daemon
