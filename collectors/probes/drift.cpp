#include "collectors/probes/drift.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "collectors/probes/result_store.h"

namespace iodrift::probes {
namespace {

constexpr std::array<std::string_view, kDriftFeatureCount> kFeatureNames = {
    "uptime_seconds",     "mem_free_bytes",        "cached_bytes",        "sreclaimable_bytes",
    "sunreclaim_bytes",   "dirty_writeback_bytes", "fragmentation_index", "psi_memory_stall_ratio",
    "psi_io_stall_ratio", "reclaim_pages",         "dentries_negative"};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ContextValue(const ProbeResult& r, const char* field) {
  auto it = r.context.find(field);
  return it == r.context.end() ? kNaN : static_cast<double>(it->second);
}

double StallRatio(const ProbeResult& r, const char* key) {
  auto it = r.pressure_delta_us.find(key);
  if (it == r.pressure_delta_us.end() || r.duration_seconds <= 0) return kNaN;
  return static_cast<double>(it->second) / 1e6 / r.duration_seconds;
}

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

std::string Duration(double seconds) {
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
  const std::string_view name = kFeatureNames[feature];
  if (feature == static_cast<std::size_t>(DriftFeature::kUptime)) return Duration(v);
  if (name.ends_with("_bytes")) return Human(v, "B");
  if (name.ends_with("_ratio") || name.ends_with("_index")) {
    if (!std::isfinite(v)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v);
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

}  // namespace

std::string_view DriftFeatureName(std::size_t index) {
  return index < kFeatureNames.size() ? kFeatureNames[index] : std::string_view();
}

std::optional<std::size_t> ParseDriftFeatureName(std::string_view name) {
  for (std::size_t i = 0; i < kFeatureNames.size(); ++i) {
    if (kFeatureNames[i] == name) return i;
  }
  return std::nullopt;
}

DriftFeatures UnknownFeatures() {
  DriftFeatures f;
  f.fill(kNaN);
  return f;
}

bool IsThroughputKind(config::ProbeKind kind) {
  return kind != config::ProbeKind::kRandom && kind != config::ProbeKind::kMetadata;
}

std::string_view DriftFigureUnit(config::ProbeKind kind) {
  return IsThroughputKind(kind) ? "bytes/s" : "ops/s";
}

std::optional<double> DriftFigure(const ProbeResult& result) {
  if (!result.success()) return std::nullopt;
  std::optional<double> figure;
  if (IsThroughputKind(result.kind)) {
    figure = result.throughput_bytes_per_second;
  } else {
    const char* op = result.kind == config::ProbeKind::kRandom ? "read" : "create";
    if (auto it = result.ops_per_second.find(op); it != result.ops_per_second.end()) {
      figure = it->second;
    }
  }
  if (!figure || !std::isfinite(*figure) || *figure <= 0) return std::nullopt;
  return figure;
}

DriftFeatures ExtractDriftFeatures(const ProbeResult& r) {
  DriftFeatures f = UnknownFeatures();
  auto set = [&f](DriftFeature which, double v) { f[static_cast<std::size_t>(which)] = v; };
  if (r.uptime_seconds) set(DriftFeature::kUptime, *r.uptime_seconds);
  set(DriftFeature::kMemFree, ContextValue(r, "MemFree"));
  set(DriftFeature::kCached, ContextValue(r, "Cached"));
  set(DriftFeature::kSReclaimable, ContextValue(r, "SReclaimable"));
  set(DriftFeature::kSUnreclaim, ContextValue(r, "SUnreclaim"));
  set(DriftFeature::kDirtyWriteback, ContextValue(r, "Dirty") + ContextValue(r, "Writeback"));
  if (r.fragmentation_index) set(DriftFeature::kFragmentation, *r.fragmentation_index);
  set(DriftFeature::kPsiMemory, StallRatio(r, "memory_some"));
  set(DriftFeature::kPsiIo, StallRatio(r, "io_some"));
  // A kernel without the counters (or a proc root without vmstat) leaves the feature unknown
  // rather than 0: "no data" must not look like "no reclaim".
  bool any_reclaim = false;
  double reclaim = 0;
  for (const auto& [name, delta] : r.vmstat_delta) {
    if (name.starts_with("pgscan") || name.starts_with("pgsteal")) {
      any_reclaim = true;
      reclaim += static_cast<double>(delta);
    }
  }
  if (any_reclaim) set(DriftFeature::kReclaim, reclaim);
  if (auto it = r.dentry_state.find("negative"); it != r.dentry_state.end()) {
    set(DriftFeature::kDentriesNegative, static_cast<double>(it->second));
  }
  return f;
}

std::vector<double> AverageRanks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    // Positions i..j (0-based) share the mean of ranks i+1..j+1.
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

std::optional<double> Spearman(std::span<const double> xs, std::span<const double> ys) {
  if (xs.size() != ys.size()) return std::nullopt;
  std::vector<double> x;
  std::vector<double> y;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (std::isfinite(xs[i]) && std::isfinite(ys[i])) {
      x.push_back(xs[i]);
      y.push_back(ys[i]);
    }
  }
  if (x.size() < kMinCorrelationPoints) return std::nullopt;
  const auto rx = AverageRanks(x);
  const auto ry = AverageRanks(y);
  const double n = static_cast<double>(rx.size());
  const double mean = (n + 1) / 2;  // the mean of average ranks is always (n+1)/2
  double sxy = 0;
  double sxx = 0;
  double syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx <= 0 || syy <= 0) return std::nullopt;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

void DriftWindow::Add(const DriftSample& sample) {
  if (capacity_ == 0) return;
  samples_.push_back(sample);
  while (samples_.size() > capacity_) samples_.pop_front();
}

DriftCorrelations DriftWindow::Correlations() const {
  DriftCorrelations out;
  std::vector<double> figures;
  figures.reserve(samples_.size());
  for (const auto& s : samples_) figures.push_back(s.figure);
  std::vector<double> feature(samples_.size());
  for (std::size_t f = 0; f < kDriftFeatureCount; ++f) {
    for (std::size_t i = 0; i < samples_.size(); ++i) feature[i] = samples_[i].features[f];
    out[f] = Spearman(figures, feature);
  }
  return out;
}

std::string ExplainProbe(const ProbeRecord& record, const DriftWindow& window) {
  const ProbeResult& r = record.last;
  const std::string_view unit = DriftFigureUnit(r.kind);
  std::string out = "probe " + r.name + " (" + std::string(config::ProbeKindName(r.kind)) +
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
  if (record.baseline) {
    out += "  baseline:  " + Human(*record.baseline, unit) + " (median of the first " +
           std::to_string(record.baseline_runs_needed) + " clean runs after boot)\n";
  } else {
    out += "  baseline:  forming, " + std::to_string(record.baseline_samples.size()) + " of " +
           std::to_string(record.baseline_runs_needed) + " clean runs so far\n";
  }
  if (record.worst_ratio) {
    out += "  worst:     " + Percent(*record.worst_ratio) + " of baseline this boot";
    if (record.uptime_at_worst) out += ", at uptime " + Duration(*record.uptime_at_worst);
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
                  std::string(kFeatureNames[f]).c_str(), *rho[f], current.c_str(), then.c_str());
    out += line;
  }
  return out;
}

std::map<std::string, double> ExplainFigures(const ProbeRecord& record, const DriftWindow& window) {
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
  out["baseline_runs_counted"] = static_cast<double>(BaselineRunsCounted(record));
  const DriftCorrelations rho = window.Correlations();
  for (std::size_t f = 0; f < kDriftFeatureCount; ++f) {
    if (rho[f]) out["rho." + std::string(DriftFeatureName(f))] = *rho[f];
  }
  return out;
}

}  // namespace iodrift::probes
