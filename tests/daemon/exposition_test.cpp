// WriteExposition writes exactly what prometheus-cpp's TextSerializer writes, byte for byte, for
// every metric type, special and awkward doubles, escaped label values, timestamps, histograms
// with and without a +Inf bucket and summaries.
#include "daemon/exposition.h"

#include <cmath>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace iodrift::daemon {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string Reference(const std::vector<MetricFamily>& families) {
  std::ostringstream stream;
  prometheus::TextSerializer().Serialize(stream, families);
  return stream.str();
}

std::string Ours(const std::vector<MetricFamily>& families) {
  std::string out;
  WriteExposition(families, out);
  return out;
}

ClientMetric Labelled(std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

TEST(Exposition, SameBytesAsTextSerializer) {
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<MetricFamily> families;

  MetricFamily gauge{"iodrift_g", "a gauge; help with \\ and \"quotes\"", MetricType::Gauge, {}};
  for (double v : {0.0, -0.0, 1.0, -1.5, 0.1, 1e-7, 123456789012345678.0, 4294967296.0, 1.0 / 3.0,
                   2.5e300, -kInf, kInf, std::nan(""), std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(),
                   1234.5678, 0.000123}) {
    auto m = Labelled({{"device", "sda"}, {"odd", "a\"b\\c\nd"}});
    m.gauge.value = v;
    gauge.metric.push_back(m);
  }
  ClientMetric bare;
  bare.gauge.value = 42;
  bare.timestamp_ms = 1700000000123;
  gauge.metric.push_back(bare);
  families.push_back(gauge);

  MetricFamily counter{"iodrift_c_total", "", MetricType::Counter, {}};
  ClientMetric c;
  c.counter.value = 9007199254740993.0;
  counter.metric.push_back(c);
  families.push_back(counter);

  MetricFamily untyped{"iodrift_u", "untyped", MetricType::Untyped, {}};
  ClientMetric u;
  u.untyped.value = 7;
  untyped.metric.push_back(u);
  families.push_back(untyped);

  MetricFamily hist{"iodrift_h_seconds", "histogram", MetricType::Histogram, {}};
  auto h = Labelled({{"probe", "p"}});
  h.histogram.sample_count = 10;
  h.histogram.sample_sum = 0.123456789;
  for (double le : {0.005, 0.01, 0.1, 1.0, 2.5}) {
    h.histogram.bucket.push_back({static_cast<std::uint64_t>(le * 4), le});
  }
  hist.metric.push_back(h);
  ClientMetric h2;  // no labels, its own +Inf bucket
  h2.histogram.sample_count = 3;
  h2.histogram.sample_sum = 3;
  h2.histogram.bucket.push_back({1, 1.0});
  h2.histogram.bucket.push_back({3, kInf});
  hist.metric.push_back(h2);
  families.push_back(hist);

  MetricFamily summary{"iodrift_s", "summary", MetricType::Summary, {}};
  auto s = Labelled({{"a", "b"}});
  s.summary.sample_count = 5;
  s.summary.sample_sum = 12.5;
  s.summary.quantile.push_back({0.5, 2.0});
  s.summary.quantile.push_back({0.99, 4.25});
  summary.metric.push_back(s);
  families.push_back(summary);

  families.push_back(MetricFamily{"iodrift_empty", "no samples", MetricType::Gauge, {}});

  const std::string want = Reference(families);
  const std::string got = Ours(families);
  EXPECT_EQ(got, want);
  EXPECT_NE(got.find("Nan"), std::string::npos);
  EXPECT_NE(got.find("le=\"+Inf\""), std::string::npos);
}

TEST(Exposition, AppendsToWhatIsThere) {
  MetricFamily gauge{"x", "h", MetricType::Gauge, {}};
  ClientMetric m;
  m.gauge.value = 1;
  gauge.metric.push_back(m);
  std::string out = "prefix\n";
  WriteExposition({gauge}, out);
  EXPECT_EQ(out, "prefix\n" + Reference({gauge}));
}

}  // namespace
}  // namespace iodrift::daemon
