// Helpers to build prometheus::MetricFamily values by hand (at scrape time, without a Registry).
//
// prometheus-cpp's Registry/Family API is built for long-lived metric objects; iodrift's state
// metrics are read fresh from /proc on every scrape, so collectors fill MetricFamily values
// directly, and prometheus-cpp serializes them.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

namespace iodrift {

using Labels = std::vector<prometheus::ClientMetric::Label>;

prometheus::MetricFamily MakeFamily(std::string name, std::string help,
                                    prometheus::MetricType type);

// Appends one sample; the value goes into the member that matches the family's type.
void AddSample(prometheus::MetricFamily& family, double value, Labels labels = {});

// Converts a kernel name to a valid Prometheus metric-name part: every character outside
// [a-zA-Z0-9_] becomes '_', and a trailing '_' from a closing parenthesis is dropped
// ("Active(file)" → "Active_file").
std::string SanitizeMetricName(std::string_view kernel_name);

}  // namespace iodrift
