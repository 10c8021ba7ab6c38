// Micro-benchmark behind daemon/exposition.h: CPU time to write ~600 samples (120 gauge families
// x 5 labelled samples, a scrape-sized set) with prometheus::TextSerializer into an ostringstream
// and with WriteExposition into one reserved string. Not built by CMake; by hand:
//   c++ -std=c++20 -O2 -I. tests/bench/exposition_bench.cpp daemon/exposition.cpp \
//       -lprometheus-cpp-core -o /tmp/exposition_bench && /tmp/exposition_bench
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "daemon/exposition.h"
using namespace prometheus;
int main() {
  // ~600 samples like a scrape: 120 families, 5 labelled samples each, values with fractions.
  std::vector<MetricFamily> fams;
  for (int f = 0; f < 120; ++f) {
    MetricFamily fam{"iodrift_family_" + std::to_string(f) + "_bytes",
                     "Help text of the family, one line.",
                     MetricType::Gauge,
                     {}};
    for (int m = 0; m < 5; ++m) {
      ClientMetric c;
      c.label = {{"slab", "kmalloc-" + std::to_string(m * 64)}};
      c.gauge.value = 123456.789 * (f + 1) / (m + 3);
      fam.metric.push_back(c);
    }
    fams.push_back(fam);
  }
  const int N = 2000;
  size_t sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::clock();
    for (int i = 0; i < N; ++i) {
      std::ostringstream s;
      TextSerializer().Serialize(s, fams);
      sink += s.str().size();
    }
    auto t1 = std::clock();
    for (int i = 0; i < N; ++i) {
      std::string s;
      s.reserve(40000);
      iodrift::daemon::WriteExposition(fams, s);
      sink += s.size();
    }
    auto t2 = std::clock();
    std::printf(
        "600 samples: TextSerializer %.1f us, WriteExposition %.1f us per scrape (CPU time)\n",
        double(t1 - t0) / CLOCKS_PER_SEC * 1e6 / N, double(t2 - t1) / CLOCKS_PER_SEC * 1e6 / N);
  }
  return sink == 0;
}
