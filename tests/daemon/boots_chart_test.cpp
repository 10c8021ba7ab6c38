// The status page's boots chart (daemon/boots_chart.h): one line per boot through the marks, the
// worst and the last ratio, placed on a log uptime axis and kept inside the chart.
#include "daemon/boots_chart.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/daemon/svg_coords.h"

namespace iodrift::daemon {
namespace {

analysis::BootRecord Record(std::optional<double> at_1h, std::optional<double> at_1d,
                            double last_ratio, double last_uptime) {
  analysis::BootRecord r;
  r.at[0] = at_1h;
  r.at[1] = at_1d;
  r.last_ratio = last_ratio;
  r.last_uptime = last_uptime;
  return r;
}

analysis::BaselineState ThreeBoots() {
  analysis::BaselineState state;
  state.boot_id = "cccccccc-this";
  analysis::BaselineKey key{"disk", probes::ProbeKind::kBuffered, "/srv", 0};
  analysis::ProbeBaseline now;
  now.key = key;
  now.baseline = 100;
  now.record = Record(0.98, std::nullopt, 0.97, 7200);
  state.probes["disk"] = now;
  for (const char* id : {"aaaaaaaa-old", "bbbbbbbb-mid"}) {
    analysis::PastProbe pp{key, 100, 0.4, 40 * 86400.0, Record(1.0, 0.9, 0.45, 41 * 86400.0)};
    state.history.push_back({id, 1764000000, {pp}});
  }
  // Another probe with no point to draw: no chart.
  analysis::ProbeBaseline forming;
  forming.key = {"new", probes::ProbeKind::kMemory, "", 0};
  state.probes["new"] = forming;
  return state;
}

TEST(BootsChart, OneLinePerBootOnALogUptimeAxis) {
  const std::string html = RenderBootsCharts(ThreeBoots());
  EXPECT_NE(html.find("<svg class=\"chart\" id=\"boots-chart-0\""), std::string::npos) << html;
  EXPECT_EQ(html.find("boots-chart-1"), std::string::npos) << html;
  // Newest first: this boot, then the past boots newest first; each a line of its own.
  const auto now = testing::SvgSeriesCx(html, "boot-0");
  const auto mid = testing::SvgSeriesCx(html, "boot-1");
  const auto old = testing::SvgSeriesCx(html, "boot-2");
  ASSERT_EQ(now.size(), 2u) << html;  // 1h, last
  ASSERT_EQ(mid.size(), 4u) << html;  // 1h, 1d, worst, last
  ASSERT_EQ(old, mid);
  EXPECT_NE(html.find(">this boot cccccccc<"), std::string::npos) << html;
  EXPECT_NE(html.find("stroke-dasharray"), std::string::npos);
  // Log axis from 1 m to 41 d: 1 h sits at log(60)/log(41 d / 1 m) of the plot, not near 0.
  const double frac = std::log10(3600.0 / 60) / std::log10(41 * 86400.0 / 60);
  EXPECT_NEAR(now[0], 78 + 530 * frac, 0.1);
  EXPECT_NEAR(mid.back(), 608, 0.1);
  for (double x : testing::SvgXCoordinates(html)) {
    EXPECT_GE(x, 0);
    EXPECT_LE(x, 640);
  }
  EXPECT_EQ(RenderBootsCharts(analysis::BaselineState{}), "");
}

}  // namespace
}  // namespace iodrift::daemon
