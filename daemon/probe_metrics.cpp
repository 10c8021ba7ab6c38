#include "daemon/probe_metrics.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>

#include "collectors/analysis/drift.h"
#include "collectors/analysis/verdict.h"
#include "collectors/common/families.h"
#include "collectors/probes/kinds.h"
#include "collectors/probes/result_fields.h"
#include "daemon/exposition.h"
#include "daemon/verdict_metrics.h"

namespace iodrift::daemon {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

Labels ProbeLabels(const probes::ProbeResult& r) {
  return {{"kind", std::string(probes::ProbeKindName(r.kind))},
          {"probe", r.name},
          {"target", r.target}};
}

Labels With(Labels labels, std::string name, std::string value) {
  labels.push_back({std::move(name), std::move(value)});
  std::sort(labels.begin(), labels.end());
  return labels;
}

constexpr const char* kLastRun = " Value from the last scheduled or on-demand run.";

// The families of result fields (collectors/probes/result_fields.h), made on first use.
class ResultFamilies {
 public:
  MetricFamily& Of(const probes::ResultFamily& f) {
    auto it = families_.find(f.name);
    if (it != families_.end()) return it->second;
    std::string help(f.help);
    if (f.last_run_help) help += kLastRun;
    return families_
        .emplace(f.name, MakeFamily(std::string(f.name), std::move(help),
                                    f.summary ? MetricType::Summary : MetricType::Gauge))
        .first->second;
  }
  void MoveTo(std::vector<MetricFamily>& out) {
    for (auto& [name, family] : families_) {
      if (!family.metric.empty()) out.push_back(std::move(family));
    }
  }

 private:
  std::map<std::string_view, MetricFamily> families_;
};

// The walk of one probe's last result, written as the MetricExport of each field says.
class MetricsWalk : public probes::ResultFieldVisitor {
 public:
  MetricsWalk(const analysis::ProbeState& state, Labels labels, ResultFamilies& families)
      : state_(state),
        r_(state.last),
        ops_kind_(probes::Traits(r_.kind).ops_figure),
        labels_(std::move(labels)),
        families_(families) {}

  void Text(std::string_view key, const std::string& value,
            const probes::MetricExport& m) override {
    if (m.way == Way::kInfoLabel) Info(m, value);
    (void)key;
  }
  void Flag(std::string_view key, bool value, const probes::MetricExport& m) override {
    Sample(key, value ? 1 : 0, m);
  }
  void Real(std::string_view key, const std::optional<double>& value,
            const probes::MetricExport& m) override {
    if (!value) return;
    if (m.way == Way::kQuantile) {
      if (Applies(m)) quantiles_.push_back({m.quantile, *value});
      summary_ = m.family;
      return;
    }
    Sample(key, *value, m);
  }
  void Count(std::string_view key, const std::optional<std::uint64_t>& value,
             const probes::MetricExport& m) override {
    if (value) Sample(key, static_cast<double>(*value), m);
  }
  void Signed(std::string_view key, std::int64_t value, const probes::MetricExport& m) override {
    Sample(key, static_cast<double>(value), m);
  }
  void TextList(std::string_view, const std::vector<std::string>& values,
                const probes::MetricExport& m) override {
    if (m.way == Way::kInfoLabel) {
      std::string joined;
      for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
      Info(m, joined);
    } else if (m.way == Way::kFlags && Applies(m)) {
      std::vector<std::string> all(m.always.begin(), m.always.end());
      for (const auto& v : values) {
        if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
      }
      auto& family = Family(m);
      for (const auto& v : all) {
        const bool set = std::find(values.begin(), values.end(), v) != values.end();
        AddSample(family, set ? 1 : 0, With(labels_, std::string(m.label), v));
      }
    }
  }
  bool BeginGroup(std::string_view, probes::GroupShape, bool present,
                  const probes::MetricExport& m) override {
    if (m.family) Family(m);  // the members take the group's export
    return present;
  }
  void EndGroup() override {}

  // The samples gathered over the walk: the info labels, the last run's quantiles.
  void Finish() {
    if (info_) {
      Labels labels = labels_;
      labels.insert(labels.end(), info_labels_.begin(), info_labels_.end());
      std::sort(labels.begin(), labels.end());
      AddSample(families_.Of(*info_), 1, std::move(labels));
    }
    if (summary_ && !quantiles_.empty()) {
      prometheus::ClientMetric metric;
      metric.label = labels_;
      for (const auto& [q, v] : quantiles_) metric.summary.quantile.push_back({q, v});
      metric.summary.sample_count = state_.latency_total.count;
      metric.summary.sample_sum = state_.latency_total.sum_seconds;
      families_.Of(*summary_).metric.push_back(std::move(metric));
    }
  }

 private:
  using Way = probes::MetricExport::Way;
  bool Applies(const probes::MetricExport& m) const { return !m.on_success || r_.success(); }
  const probes::ResultFamily& Chosen(const probes::MetricExport& m) const {
    return ops_kind_ && m.ops_family ? *m.ops_family : *m.family;
  }
  MetricFamily& Family(const probes::MetricExport& m) { return families_.Of(Chosen(m)); }
  void Sample(std::string_view key, double value, const probes::MetricExport& m) {
    if (m.way != Way::kGauge || !Applies(m)) return;
    Labels labels = labels_;
    if (!m.label.empty()) labels.push_back({std::string(m.label), std::string(key)});
    if (!m.fixed.first.empty())
      labels.push_back({std::string(m.fixed.first), std::string(m.fixed.second)});
    if (Chosen(m).op_label) labels.push_back({"op", std::string(probes::Traits(r_.kind).op)});
    std::sort(labels.begin(), labels.end());
    AddSample(Family(m), value, std::move(labels));
  }
  void Info(const probes::MetricExport& m, const std::string& value) {
    info_ = m.family;
    info_labels_.push_back({std::string(m.label), value});
  }

  const analysis::ProbeState& state_;
  const probes::ProbeResult& r_;
  const bool ops_kind_;
  const Labels labels_;
  ResultFamilies& families_;
  const probes::ResultFamily* info_ = nullptr;
  Labels info_labels_;
  const probes::ResultFamily* summary_ = nullptr;
  std::vector<std::pair<double, double>> quantiles_;
};

}  // namespace

void AppendProbeFamilies(const analysis::ProbeSnapshot& states, std::vector<MetricFamily>& out) {
  // A recovery experiment may end before the probe's first scheduled run: its record counts.
  const auto first_ran = std::find_if(states.begin(), states.end(), [](const auto& state) {
    return state->ran() || state->diagnosis || state->experiment_runs > 0;
  });
  if (first_ran == states.end()) return;
  const std::size_t baseline_runs = (*first_ran)->baseline_runs_needed;
  // The families of the last run's fields come from the walk of its result (MetricsWalk);
  // these are the ones of the probe's spec and state.
  auto interval = MakeFamily("iodrift_probe_interval_seconds",
                             "Configured schedule interval of the probe (each run comes after "
                             "interval x U(0.9, 1.1)).",
                             MetricType::Gauge);
  auto runs = MakeFamily("iodrift_probe_runs_total",
                         "Probe runs by result since the daemon started.", MetricType::Counter);
  auto read_total =
      MakeFamily("iodrift_probe_read_bytes_total",
                 "Bytes read by the probe since the daemon started.", MetricType::Counter);
  auto latency = MakeFamily("iodrift_probe_latency_seconds",
                            "Per-operation latency of random and metadata probes, cumulative over "
                            "all runs since the daemon started.",
                            MetricType::Histogram);
  const std::string baseline_help =
      "Post-boot baseline of the probe: median figure of its first " +
      std::to_string(baseline_runs) +
      " successful runs without suspect reasons after boot (kept across daemon restarts within "
      "a boot).";
  auto baseline = MakeFamily("iodrift_probe_baseline_bytes_per_second",
                             baseline_help + " Throughput kinds: cached, buffered, direct, memory.",
                             MetricType::Gauge);
  auto baseline_ops = MakeFamily("iodrift_probe_baseline_ops_per_second",
                                 baseline_help +
                                     " Operation kinds: random (op=read) and metadata "
                                     "(op=create).",
                                 MetricType::Gauge);
  auto ratio = MakeFamily("iodrift_probe_baseline_ratio",
                          "Figure of the last successful run divided by the baseline "
                          "(throughput, or ops/s for random and metadata).",
                          MetricType::Gauge);
  auto worst = MakeFamily("iodrift_probe_baseline_worst_ratio",
                          "Lowest baseline ratio of this boot (runs suspect of cache_not_dropped "
                          "or io_pressure excluded).",
                          MetricType::Gauge);
  auto worst_uptime = MakeFamily("iodrift_probe_baseline_worst_uptime_seconds",
                                 "Uptime at the start of the run with the lowest baseline ratio "
                                 "of this boot.",
                                 MetricType::Gauge);
  auto correlation = MakeFamily(
      "iodrift_probe_correlation",
      "Spearman rank correlation between the probe's figure (throughput or ops/s) and a memory "
      "feature, over the last " +
          std::to_string(analysis::kDriftWindowSize) + " valid runs of this daemon; absent until " +
          std::to_string(analysis::kMinCorrelationPoints) +
          " runs with the feature known and while the feature or figure is constant. "
          "Negative: the figure falls as the feature rises.",
      MetricType::Gauge);
  auto tax = MakeFamily("iodrift_page_cache_tax_ratio",
                        "1 - buffered/direct throughput on the same target, from the last runs of "
                        "both (how much the page-cache path costs).",
                        MetricType::Gauge);

  auto recovery = MakeFamily("iodrift_probe_recovery_ratio",
                             "Last recovery experiment (iodriftctl diagnose) on the probe: the "
                             "median of each step's repeated figures divided by the baseline "
                             "(step=control: the unchanged state). Steps skipped or not reached "
                             "are absent.",
                             MetricType::Gauge);
  auto recovery_spread = MakeFamily("iodrift_probe_recovery_spread_ratio",
                                    "Last recovery experiment on the probe: highest minus lowest "
                                    "of each step's repeated figures, divided by the baseline "
                                    "(step=control: the noise a step must clear).",
                                    MetricType::Gauge);
  auto experiment_runs = MakeFamily("iodrift_probe_experiment_runs_total",
                                    "Runs made by recovery experiments on the probe (as the probe "
                                    "or as a direct twin); not in iodrift_probe_runs_total, the "
                                    "baseline, the worst ratio or the history.",
                                    MetricType::Counter);
  auto recovery_time = MakeFamily("iodrift_probe_recovery_timestamp_seconds",
                                  "End of the last recovery experiment on the probe, seconds "
                                  "since the epoch.",
                                  MetricType::Gauge);

  ResultFamilies result_families;
  const auto& bounds = probes::LatencyBucketBounds();
  std::set<std::string> taxed_targets;  // one page_cache_tax series per target
  for (const auto& state : states) {
    const analysis::ProbeState& s = *state;
    if (s.diagnosis) {
      const Labels probe_label = {{"probe", s.spec.name}};
      AddSample(recovery_time, s.diagnosis->finish_time_seconds, probe_label);
      for (const auto& step : s.diagnosis->steps) {
        if (step.ratio) AddSample(recovery, *step.ratio, With(probe_label, "step", step.step));
        if (step.spread && s.diagnosis->baseline && *s.diagnosis->baseline > 0) {
          AddSample(recovery_spread, *step.spread / *s.diagnosis->baseline,
                    With(probe_label, "step", step.step));
        }
      }
    }
    if (s.experiment_runs > 0) {
      AddSample(experiment_runs, static_cast<double>(s.experiment_runs), {{"probe", s.spec.name}});
    }
    if (!s.ran()) continue;
    const auto& r = s.last;
    const probes::KindTraits& traits = probes::Traits(r.kind);
    Labels labels = ProbeLabels(r);
    MetricsWalk walk(s, labels, result_families);
    probes::VisitProbeResult(r, walk);
    walk.Finish();
    AddSample(interval, std::chrono::duration<double>(s.spec.interval).count(), labels);
    for (auto outcome : probes::kAllOutcomes) {
      auto it = s.runs.find(outcome);
      AddSample(runs, it == s.runs.end() ? 0 : static_cast<double>(it->second),
                With(labels, "result", probes::OutcomeName(outcome)));
    }
    AddSample(read_total, static_cast<double>(s.read_bytes_total), labels);
    // The page-cache side of a twin pair and its twin (the one its stored verdict was decided
    // with).
    if (r.success() && r.throughput_bytes_per_second && *r.throughput_bytes_per_second > 0 &&
        traits.twin && !traits.bypasses_page_cache) {
      const analysis::ProbeState* twin = analysis::StoredTwin(states, s);
      if (twin && twin->last.success() && twin->last.throughput_bytes_per_second &&
          *twin->last.throughput_bytes_per_second > 0 && taxed_targets.insert(r.target).second) {
        AddSample(tax, 1 - *r.throughput_bytes_per_second / *twin->last.throughput_bytes_per_second,
                  {{"target", r.target}});
      }
    }
    if (s.baseline && *s.baseline > 0) {
      if (auto bps = s.baseline_bytes_per_second()) AddSample(baseline, *bps, labels);
      if (auto ops_per_second = s.baseline_ops_per_second()) {
        AddSample(baseline_ops, *ops_per_second,
                  With(labels, "op", std::string(analysis::DriftFigureOp(r.kind))));
      }
      if (r.success() && s.baseline_ratio) AddSample(ratio, *s.baseline_ratio, labels);
    }
    if (s.worst_ratio) {
      AddSample(worst, *s.worst_ratio, labels);
      if (s.uptime_at_worst) AddSample(worst_uptime, *s.uptime_at_worst, labels);
    }
    for (std::size_t f = 0; f < analysis::kDriftFeatureCount; ++f) {
      if (!s.correlations[f]) continue;
      AddSample(correlation, *s.correlations[f],
                With(labels, "feature", std::string(analysis::DriftFeatureName(f))));
    }
    // The kinds that time each operation keep the histogram even before their first sample.
    if (s.latency_total.count > 0 || traits.ops_figure) {
      prometheus::ClientMetric metric;
      metric.label = labels;
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < bounds.size(); ++i) {
        if (i < s.latency_total.bucket_counts.size())
          cumulative += s.latency_total.bucket_counts[i];
        metric.histogram.bucket.push_back({cumulative, bounds[i]});
      }
      metric.histogram.bucket.push_back(
          {s.latency_total.count, std::numeric_limits<double>::infinity()});
      metric.histogram.sample_count = s.latency_total.count;
      metric.histogram.sample_sum = s.latency_total.sum_seconds;
      latency.metric.push_back(std::move(metric));
    }
  }
  result_families.MoveTo(out);
  for (auto* family : {&interval, &runs, &read_total, &baseline, &baseline_ops, &ratio, &worst,
                       &worst_uptime, &correlation, &latency, &tax, &recovery, &recovery_time,
                       &recovery_spread, &experiment_runs}) {
    if (!family->metric.empty()) out.push_back(std::move(*family));
  }
}

std::shared_ptr<const PreparedProbeFamilies::Text> PreparedProbeFamilies::Current() const {
  std::lock_guard lock(mu_);
  return prepared_;
}

std::shared_ptr<const PreparedProbeFamilies::Text> PreparedProbeFamilies::Make(
    const Snapshot& snapshot) {
  auto made = std::make_shared<Text>();
  made->snapshot = snapshot;
  std::string text;
  if (snapshot) {
    std::vector<MetricFamily> families;
    AppendProbeFamilies(*snapshot, families);
    AppendVerdictFamily(*snapshot, families);
    WriteExposition(families, text);
  }
  made->body = std::make_shared<const PreparedBody>(std::move(text));
  renders_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  prepared_ = made;
  return made;
}

void PreparedProbeFamilies::Prepare(const Snapshot& snapshot) {
  if (auto current = Current(); current && current->snapshot == snapshot) return;
  Make(snapshot);
}

std::shared_ptr<const PreparedBody> PreparedProbeFamilies::Body(const Snapshot& snapshot) {
  auto current = Current();
  if (!current || current->snapshot != snapshot) current = Make(snapshot);
  return current->body;
}

void PreparedProbeFamilies::AppendText(const Snapshot& snapshot, std::string& out) {
  out += Body(snapshot)->text();
}

}  // namespace iodrift::daemon
