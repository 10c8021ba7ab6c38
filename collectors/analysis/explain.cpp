#include "collectors/analysis/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

// "1.23 GiB", "512 MiB", "3.4 kB/s" style: binary prefixes for bytes, plain for the rest.
std::string Human(double v, std::string_view unit) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  const bool bytes = unit.substr(0, 5) == "bytes" || unit == "B";
  if (bytes) {
    static const char* kPrefix[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    std::size_t i = 0;
    double x = v;
    while (std::fabs(x) >= 1024 && i + 1 < std::size(kPrefix)) {
      x /= 1024;
      ++i;
    }
    const std::string_view rest = unit.size() > 5 ? unit.substr(5) : std::string_view();
    std::snprintf(buf, sizeof buf, "%.3g %s%.*s", x, kPrefix[i], static_cast<int>(rest.size()),
                  rest.data());
  } else {
    std::snprintf(buf, sizeof buf, "%.4g%s%.*s", v, unit.empty() ? "" : " ",
                  static_cast<int>(unit.size()), unit.data());
  }
  return buf;
}

std::string DurationText(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  char buf[32];
  if (seconds >= 86400) {
    std::snprintf(buf, sizeof buf, "%.1fd", seconds / 86400);
  } else if (seconds >= 3600) {
    std::snprintf(buf, sizeof buf, "%.1fh", seconds / 3600);
  } else if (seconds >= 60) {
    std::snprintf(buf, sizeof buf, "%.1fmin", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.0fs", seconds);
  }
  return buf;
}

std::string FeatureValue(std::size_t feature, double v) {
  const std::string_view name = DriftFeatureName(feature);
  if (feature == static_cast<std::size_t>(DriftFeature::kUptime)) return DurationText(v);
  if (name.ends_with("_bytes")) return Human(v, "B");
  if (name.ends_with("_ratio") || name.ends_with("_index")) {
    if (!std::isfinite(v)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v);
    return buf;
  }
  if (name.ends_with("_per_gib")) {  // kernel_cpu_seconds_per_gib: 0.0213, not "0"
    if (!std::isfinite(v)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g s/GiB", v);
    return buf;
  }
  // Counts (reclaim_pages, dentries_negative): whole numbers, not 2.662e+04.
  if (std::isfinite(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  return Human(v, "");
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", 100 * ratio);
  return buf;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3gs", s);
  return buf;
}

// "wall 1.2s = kernel CPU 0.9s + user CPU 0.01s + run-queue 0s + device 0.2s + other 0.1s;
// overlapping: device busy 0.2s, PSI io 0.1s, PSI memory 0s"
std::string TimePartsText(const TimeParts& tp) {
  std::string out = "wall " + Seconds(tp.wall) + " = kernel CPU " + Seconds(tp.kernel_cpu) +
                    " + user CPU " + Seconds(tp.user_cpu);
  if (tp.runqueue_wait) out += " + run-queue " + Seconds(*tp.runqueue_wait);
  if (tp.device_wait) out += " + device " + Seconds(*tp.device_wait);
  out += " + other " + Seconds(tp.other);
  std::string overlap;
  auto add = [&](const char* label, const std::optional<double>& v) {
    if (!v) return;
    overlap += (overlap.empty() ? "" : ", ") + std::string(label) + " " + Seconds(*v);
  };
  for (const auto& f : probes::TimePartFields()) {
    if (f.role == probes::TimePartRole::kOverlap) add(std::string(f.name).c_str(), f.Get(tp));
  }
  if (!overlap.empty()) out += "; overlapping: " + overlap;
  return out;
}

}  // namespace

std::string ExplainProbe(const ProbeState& record, const DriftWindow& window) {
  const ProbeResult& r = record.last;
  const std::string_view unit = DriftFigureUnit(r.kind);
  std::string out = record.verdict.line + "\n";
  out += "probe " + r.name + " (" + std::string(ProbeKindName(r.kind)) +
         (r.target.empty() ? "" : ", " + r.target) + ")\n";
  if (record.last_figure) {
    out += "  last:      " + Human(*record.last_figure, unit);
    if (record.baseline && *record.baseline > 0) {
      out += " = " + Percent(*record.last_figure / *record.baseline) + " of baseline";
    }
    out += "\n";
  } else {
    out += "  last:      no successful run yet\n";
  }
  if (!r.success()) {
    out += "  last run:  " + std::string(OutcomeName(r.outcome)) +
           (r.error.empty() ? "" : ": " + r.error) + "\n";
  }
  if (const auto& tp = r.time_seconds) {
    out += "  time:      " + TimePartsText(*tp) + "\n";
  }
  if (record.baseline) {
    out += "  baseline:  " + Human(*record.baseline, unit) + " (median of the first " +
           std::to_string(record.baseline_runs_needed) + " clean runs after boot)\n";
  } else {
    out += "  baseline:  forming, " + std::to_string(record.baseline_samples.size()) + " of " +
           std::to_string(record.baseline_runs_needed) + " clean runs so far\n";
  }
  if (record.worst_ratio) {
    out += "  worst:     " + Percent(*record.worst_ratio) + " of baseline this boot";
    if (record.uptime_at_worst) out += ", at uptime " + DurationText(*record.uptime_at_worst);
    out += "\n";
  }
  const DriftCorrelations rho = window.Correlations();
  std::vector<std::size_t> ranked;
  for (std::size_t f = 0; f < kDriftFeatureCount; ++f) {
    if (rho[f]) ranked.push_back(f);
  }
  if (ranked.empty()) {
    out += "  correlations: none yet (" + std::to_string(window.size()) + " runs in the window, " +
           std::to_string(kMinCorrelationPoints) + " needed, and a feature must vary)\n";
    return out;
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
    return std::fabs(*rho[a]) > std::fabs(*rho[b]);
  });
  out += "  features ranked by |Spearman rho| over the last " + std::to_string(window.size()) +
         " runs (rho < 0: the figure falls as the feature rises)\n";
  char line[160];
  std::snprintf(line, sizeof line, "    %-24s %6s  %14s  %14s\n", "feature", "rho", "now",
                "at baseline");
  out += line;
  const DriftFeatures* now = window.size() ? &window.samples().back().features : nullptr;
  for (std::size_t f : ranked) {
    const std::string current = now ? FeatureValue(f, (*now)[f]) : "n/a";
    const std::string then = FeatureValue(f, record.baseline_features[f]);
    std::snprintf(line, sizeof line, "    %-24s %+6.2f  %14s  %14s\n",
                  std::string(DriftFeatureName(f)).c_str(), *rho[f], current.c_str(), then.c_str());
    out += line;
  }
  return out;
}

std::map<std::string, double> ExplainFigures(const ProbeState& record, const DriftWindow& window) {
  std::map<std::string, double> out;
  auto put = [&](const char* key, const std::optional<double>& value) {
    if (value && std::isfinite(*value)) out[key] = *value;
  };
  put("last", record.last_figure);
  put("baseline", record.baseline);
  put("ratio", record.baseline_ratio);
  put("worst_ratio", record.worst_ratio);
  put("uptime_at_worst", record.uptime_at_worst);
  out["window_runs"] = static_cast<double>(window.size());
  out["baseline_runs_needed"] = static_cast<double>(record.baseline_runs_needed);
  out["baseline_runs_counted"] = static_cast<double>(record.baseline_runs_counted());
  if (const auto& tp = record.last.time_seconds) {
    for (const auto& f : probes::TimePartFields())
      put(("time." + std::string(f.name)).c_str(), f.Get(*tp));
  }
  const DriftCorrelations rho = window.Correlations();
  for (std::size_t f = 0; f < kDriftFeatureCount; ++f) {
    if (rho[f]) out["rho." + std::string(DriftFeatureName(f))] = *rho[f];
  }
  return out;
}

}  // namespace iodrift::analysis
