#include "collectors/common/families.h"

namespace iodrift {

prometheus::MetricFamily MakeFamily(std::string name, std::string help,
                                    prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void AddSample(prometheus::MetricFamily& family, double value, Labels labels) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  switch (family.type) {
    case prometheus::MetricType::Counter:
      metric.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      metric.gauge.value = value;
      break;
    default:
      metric.untyped.value = value;
      break;
  }
  family.metric.push_back(std::move(metric));
}

std::string SanitizeMetricName(std::string_view kernel_name) {
  std::string out;
  out.reserve(kernel_name.size());
  for (char c : kernel_name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  while (!out.empty() && out.back() == '_' && !kernel_name.empty() && kernel_name.back() == ')') {
    out.pop_back();
  }
  if (!out.empty() && out[0] >= '0' && out[0] <= '9') out.insert(out.begin(), '_');
  return out;
}

}  // namespace iodrift
