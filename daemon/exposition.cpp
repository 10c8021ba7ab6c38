#include "daemon/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

namespace iodrift::daemon {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

void AppendDouble(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "Nan";
  } else if (std::isinf(value)) {
    out += value < 0 ? "-Inf" : "+Inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general,
                                   std::numeric_limits<double>::max_digits10 - 1);
    out.append(buf, ec == std::errc() ? end : buf);
  }
}

void AppendUint(std::string& out, std::uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, ec == std::errc() ? end : buf);
}

void AppendInt(std::string& out, std::int64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, ec == std::errc() ? end : buf);
}

// A label value: \n, \\ and " escaped.
void AppendEscaped(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += c;
    }
  }
}

// Name, suffix and labels (plus an extra label whose value is a double or a string), then " ".
template <typename Extra>
void Head(std::string& out, const MetricFamily& family, const ClientMetric& metric,
          std::string_view suffix, std::string_view extra_name, const Extra& extra_value) {
  out += family.name;
  out += suffix;
  if (!metric.label.empty() || !extra_name.empty()) {
    out += '{';
    bool first = true;
    for (const auto& pair : metric.label) {
      if (!first) out += ',';
      first = false;
      out += pair.name;
      out += "=\"";
      AppendEscaped(out, pair.value);
      out += '"';
    }
    if (!extra_name.empty()) {
      if (!first) out += ',';
      out += extra_name;
      out += "=\"";
      if constexpr (std::is_same_v<Extra, double>) {
        AppendDouble(out, extra_value);
      } else {
        AppendEscaped(out, extra_value);
      }
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void Head(std::string& out, const MetricFamily& family, const ClientMetric& metric,
          std::string_view suffix = {}) {
  Head(out, family, metric, suffix, {}, std::string_view{});
}

void Tail(std::string& out, const ClientMetric& metric) {
  if (metric.timestamp_ms != 0) {
    out += ' ';
    AppendInt(out, metric.timestamp_ms);
  }
  out += '\n';
}

// The _count and _sum lines of a summary or histogram.
void CountAndSum(std::string& out, const MetricFamily& family, const ClientMetric& metric,
                 std::uint64_t count, double sum) {
  Head(out, family, metric, "_count");
  AppendUint(out, count);
  Tail(out, metric);
  Head(out, family, metric, "_sum");
  AppendDouble(out, sum);
  Tail(out, metric);
}

void WriteMetric(std::string& out, const MetricFamily& family, const ClientMetric& metric) {
  switch (family.type) {
    case MetricType::Counter:
      Head(out, family, metric);
      AppendDouble(out, metric.counter.value);
      Tail(out, metric);
      break;
    case MetricType::Gauge:
      Head(out, family, metric);
      AppendDouble(out, metric.gauge.value);
      Tail(out, metric);
      break;
    case MetricType::Untyped:
      Head(out, family, metric);
      AppendDouble(out, metric.untyped.value);
      Tail(out, metric);
      break;
    case MetricType::Summary: {
      const auto& sum = metric.summary;
      CountAndSum(out, family, metric, sum.sample_count, sum.sample_sum);
      for (const auto& q : sum.quantile) {
        Head(out, family, metric, "", "quantile", q.quantile);
        AppendDouble(out, q.value);
        Tail(out, metric);
      }
      break;
    }
    case MetricType::Histogram: {
      const auto& hist = metric.histogram;
      CountAndSum(out, family, metric, hist.sample_count, hist.sample_sum);
      double last = -std::numeric_limits<double>::infinity();
      for (const auto& b : hist.bucket) {
        Head(out, family, metric, "_bucket", "le", b.upper_bound);
        last = b.upper_bound;
        AppendUint(out, b.cumulative_count);
        Tail(out, metric);
      }
      if (last != std::numeric_limits<double>::infinity()) {
        Head(out, family, metric, "_bucket", "le", std::string_view("+Inf"));
        AppendUint(out, hist.sample_count);
        Tail(out, metric);
      }
      break;
    }
    default:
      break;
  }
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Untyped:
      return "untyped";
    case MetricType::Histogram:
      return "histogram";
    default:
      return {};
  }
}

}  // namespace

void WriteExposition(const std::vector<MetricFamily>& families, std::string& out) {
  for (const auto& family : families) {
    if (!family.help.empty()) {
      out += "# HELP ";
      out += family.name;
      out += ' ';
      out += family.help;
      out += '\n';
    }
    const std::string_view type = TypeName(family.type);
    if (type.empty()) continue;
    out += "# TYPE ";
    out += family.name;
    out += ' ';
    out += type;
    out += '\n';
    for (const auto& metric : family.metric) WriteMetric(out, family, metric);
  }
}

}  // namespace iodrift::daemon
