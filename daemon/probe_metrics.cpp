#include "daemon/probe_metrics.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "collectors/analysis/drift.h"
#include "collectors/analysis/verdict.h"
#include "collectors/common/families.h"
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

}  // namespace

const std::vector<std::string>& KnownSuspectReasons() {
  static const std::vector<std::string> kReasons = {"cache_not_dropped", "io_pressure",
                                                    "low_free_memory", "memory_pressure"};
  return kReasons;
}

void AppendProbeFamilies(const analysis::ProbeSnapshot& states, std::vector<MetricFamily>& out) {
  // A recovery experiment may end before the probe's first scheduled run: its record counts.
  const auto first_ran = std::find_if(states.begin(), states.end(), [](const auto& state) {
    return state->ran() || state->diagnosis || state->experiment_runs > 0;
  });
  if (first_ran == states.end()) return;
  const std::size_t baseline_runs = (*first_ran)->baseline_runs_needed;
  std::string last = kLastRun;
  auto interval = MakeFamily("iodrift_probe_interval_seconds",
                             "Configured schedule interval of the probe (each run comes after "
                             "interval x U(0.9, 1.1)).",
                             MetricType::Gauge);
  auto success = MakeFamily("iodrift_probe_success", "1 when the probe run succeeded." + last,
                            MetricType::Gauge);
  auto supported =
      MakeFamily("iodrift_probe_supported",
                 "0 when this probe kind cannot measure this target (e.g. no O_DIRECT): "
                 "nothing else is measured in its place." +
                     last,
                 MetricType::Gauge);
  auto duration = MakeFamily("iodrift_probe_duration_seconds", "Wall time of the probe run." + last,
                             MetricType::Gauge);
  auto last_run =
      MakeFamily("iodrift_probe_last_run_timestamp_seconds",
                 "Start of the last probe run, seconds since the epoch.", MetricType::Gauge);
  auto runs = MakeFamily("iodrift_probe_runs_total",
                         "Probe runs by result since the daemon started.", MetricType::Counter);
  auto read_total =
      MakeFamily("iodrift_probe_read_bytes_total",
                 "Bytes read by the probe since the daemon started.", MetricType::Counter);
  auto bytes =
      MakeFamily("iodrift_probe_bytes", "Bytes read in the probe run." + last, MetricType::Gauge);
  auto throughput =
      MakeFamily("iodrift_probe_throughput_bytes_per_second",
                 "Read throughput of the probe run (cached, buffered, direct; memory: "
                 "streaming memcpy)." +
                     last,
                 MetricType::Gauge);
  auto ops = MakeFamily("iodrift_probe_ops_per_second",
                        "Operations per second of the probe run (random: read; metadata: "
                        "create, stat, delete)." +
                            last,
                        MetricType::Gauge);
  auto latency = MakeFamily("iodrift_probe_latency_seconds",
                            "Per-operation latency of random and metadata probes, cumulative over "
                            "all runs since the daemon started.",
                            MetricType::Histogram);
  auto latency_last =
      MakeFamily("iodrift_probe_latency_last_seconds",
                 "Per-operation latency of random and metadata probes: quantiles "
                 "0.5 and 0.99 (exact, nearest rank) of the last successful run, each only "
                 "when iodrift_probe_latency_last_samples supports it; "
                 "_count and _sum cumulative since the daemon started, as in "
                 "iodrift_probe_latency_seconds.",
                 MetricType::Summary);
  auto latency_samples = MakeFamily(
      "iodrift_probe_latency_last_samples",
      "Operations timed in the last successful run of a random or metadata probe: the sample "
      "count behind iodrift_probe_latency_last_seconds. A quantile is exported only when this "
      "supports it (0.5 from 10 samples, 0.99 from 100).",
      MetricType::Gauge);
  auto cpu = MakeFamily("iodrift_probe_cpu_seconds",
                        "CPU time of the probe thread during the run, by mode (system CPU per GiB "
                        "tells allocation cost from device time)." +
                            last,
                        MetricType::Gauge);
  auto time_parts = MakeFamily(
      "iodrift_probe_time_seconds",
      "Where the run's wall time went, by part: user_cpu, kernel_cpu, runqueue_wait, "
      "device_wait (off-CPU while the target's device was busy), other (the rest of the "
      "off-CPU time); these add up to the run's wall time. Not in that sum (they overlap it): "
      "device_busy (the device's busy time, any requester), psi_io_stall and psi_memory_stall "
      "(system-wide PSI some), the readers' delay accounting (blkio_delay, reclaim_delay, …) "
      "and the daemon's cgroup (cpu_throttled, cgroup_memory_stall)." +
          last,
      MetricType::Gauge);
  auto context =
      MakeFamily("iodrift_probe_context_bytes",
                 "Memory state (/proc/meminfo field, bytes) at the start of the run." + last,
                 MetricType::Gauge);
  auto suspect = MakeFamily("iodrift_probe_suspect",
                            "1 when a condition makes the figure doubtful, by reason." + last,
                            MetricType::Gauge);
  auto info = MakeFamily("iodrift_probe_target_info",
                         "Facts about the probe target: filesystem (fuse.sshfs, nfs4 …), remote "
                         "(1 on a network or FUSE filesystem), the disks underneath (devices: an "
                         "array's or multi-device btrfs's members), I/O scheduler, read-ahead, "
                         "rotational, loop device dio, and how the kind measured (random: direct "
                         "or fadvise); value 1.",
                         MetricType::Gauge);
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
  auto member_figure = MakeFamily(
      "iodrift_probe_member_throughput_bytes_per_second",
      "Read throughput of each member disk of an array target (probe option members: true), "
      "probed with the same kind and size right after the array." +
          last,
      MetricType::Gauge);
  auto member_ops = MakeFamily(
      "iodrift_probe_member_ops_per_second",
      "Random read operations per second of each member disk of an array target (probe option "
      "members: true, kind random)." +
          last,
      MetricType::Gauge);
  auto member_ratio = MakeFamily(
      "iodrift_probe_array_member_ratio",
      "The array's figure divided by the member's (throughput, or read ops/s for random) from "
      "the same run: about 2 for a member of a three-disk RAID5 reading at full stripe." +
          last,
      MetricType::Gauge);
  const std::string readers_help =
      " Probes with `readers:` only; `readers` is the number of threads reading disjoint regions "
      "at once in that step of the run." +
      last;
  auto readers_bps = MakeFamily("iodrift_probe_readers_throughput_bytes_per_second",
                                "Aggregate read throughput of all readers (buffered, direct): "
                                "their bytes / the step's wall time." +
                                    readers_help,
                                MetricType::Gauge);
  auto readers_ops = MakeFamily("iodrift_probe_readers_ops_per_second",
                                "Aggregate operations per second of all readers (random, op=read: "
                                "sum of the readers' IOPS)." +
                                    readers_help,
                                MetricType::Gauge);
  auto reader_bps = MakeFamily("iodrift_probe_reader_throughput_bytes_per_second",
                               "Per-reader spread: the slowest (stat=min) and fastest (stat=max) "
                               "reader's own throughput." +
                                   readers_help,
                               MetricType::Gauge);
  auto reader_ops = MakeFamily("iodrift_probe_reader_ops_per_second",
                               "Per-reader spread: the slowest (stat=min) and fastest (stat=max) "
                               "reader's own IOPS (random, op=read)." +
                                   readers_help,
                               MetricType::Gauge);
  auto efficiency = MakeFamily("iodrift_probe_readers_scaling_efficiency",
                               "Scaling efficiency: aggregate rate with N readers / (N x the rate "
                               "of one reader in the same run); 1 = linear scaling, 1/N = no "
                               "gain. Needs 1 in the probe's readers list." +
                                   readers_help,
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
    Labels labels = ProbeLabels(r);
    AddSample(success, r.success() ? 1 : 0, labels);
    AddSample(supported, r.supported ? 1 : 0, labels);
    AddSample(duration, r.duration_seconds, labels);
    AddSample(last_run, r.start_time_seconds, labels);
    AddSample(interval, std::chrono::duration<double>(s.spec.interval).count(), labels);
    for (auto outcome : probes::kAllOutcomes) {
      auto it = s.runs.find(outcome);
      AddSample(runs, it == s.runs.end() ? 0 : static_cast<double>(it->second),
                With(labels, "result", probes::OutcomeName(outcome)));
    }
    AddSample(read_total, static_cast<double>(s.read_bytes_total), labels);
    AddSample(bytes, static_cast<double>(r.bytes), labels);
    if (r.success() && r.throughput_bytes_per_second) {
      AddSample(throughput, *r.throughput_bytes_per_second, labels);
      // The buffered probe and its direct twin (analysis::FindTwin, the one pairing rule).
      const analysis::ProbeState* twin =
          r.kind == probes::ProbeKind::kBuffered ? analysis::FindTwin(states, s) : nullptr;
      if (twin && twin->last.success() && twin->last.throughput_bytes_per_second &&
          *twin->last.throughput_bytes_per_second > 0 && *r.throughput_bytes_per_second > 0 &&
          taxed_targets.insert(r.target).second) {
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
    if (r.success()) {
      for (const auto& [op, rate] : r.ops_per_second) AddSample(ops, rate, With(labels, "op", op));
    }
    if (s.latency_total.count > 0 || r.kind == probes::ProbeKind::kRandom ||
        r.kind == probes::ProbeKind::kMetadata) {
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
    if (r.success() && r.latency) {
      AddSample(latency_samples, static_cast<double>(r.latency->count), labels);
    }
    if (r.success() && r.latency && (r.latency->p50_seconds || r.latency->p99_seconds)) {
      prometheus::ClientMetric metric;
      metric.label = labels;
      const auto& l = *r.latency;
      if (l.p50_seconds) metric.summary.quantile.push_back({0.5, *l.p50_seconds});
      if (l.p99_seconds) metric.summary.quantile.push_back({0.99, *l.p99_seconds});
      metric.summary.sample_count = s.latency_total.count;
      metric.summary.sample_sum = s.latency_total.sum_seconds;
      latency_last.metric.push_back(std::move(metric));
    }
    if (r.success()) {
      const bool ops_kind = r.kind == probes::ProbeKind::kRandom;
      for (const probes::ReaderStep& step : r.readers) {
        const Labels step_labels = With(labels, "readers", std::to_string(step.readers));
        const Labels rate_labels = ops_kind ? With(step_labels, "op", "read") : step_labels;
        AddSample(ops_kind ? readers_ops : readers_bps, step.rate, rate_labels);
        auto& spread = ops_kind ? reader_ops : reader_bps;
        AddSample(spread, step.per_reader_min, With(rate_labels, "stat", "min"));
        AddSample(spread, step.per_reader_max, With(rate_labels, "stat", "max"));
        if (step.scaling_efficiency) AddSample(efficiency, *step.scaling_efficiency, step_labels);
      }
    }
    AddSample(cpu, r.cpu_user_seconds, With(labels, "mode", "user"));
    AddSample(cpu, r.cpu_system_seconds, With(labels, "mode", "system"));
    if (const auto& tp = r.time_seconds) {
      for (const probes::TimePartField& f : probes::TimePartFields()) {
        if (!f.seconds() || f.role == probes::TimePartRole::kWall) continue;
        if (auto v = f.Get(*tp))
          AddSample(time_parts, *v, With(labels, "part", std::string(f.name)));
      }
    }
    for (const auto& [field, value] : r.context) {
      AddSample(context, static_cast<double>(value), With(labels, "field", field));
    }
    std::vector<std::string> reasons = KnownSuspectReasons();
    for (const auto& reason : r.suspect) {
      if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end())
        reasons.push_back(reason);
    }
    for (const auto& reason : reasons) {
      bool active = std::find(r.suspect.begin(), r.suspect.end(), reason) != r.suspect.end();
      AddSample(suspect, active ? 1 : 0, With(labels, "reason", reason));
    }
    for (const auto& [member, figure] : r.member_figures) {
      AddSample(r.kind == probes::ProbeKind::kRandom ? member_ops : member_figure, figure,
                With(labels, "member", member));
    }
    for (const auto& [member, value] : r.member_ratios) {
      AddSample(member_ratio, value, With(labels, "member", member));
    }
    const auto& t = r.target_info;
    Labels info_labels = labels;
    std::string devices;
    for (const auto& d : t.devices) devices += (devices.empty() ? "" : ",") + d;
    info_labels.push_back({"devices", devices});
    info_labels.push_back({"remote", t.remote});
    info_labels.push_back({"fstype", t.fstype});
    info_labels.push_back({"loop_dio", t.loop_dio});
    info_labels.push_back({"mode", r.mode});
    info_labels.push_back({"read_ahead_kb", t.read_ahead_kb});
    info_labels.push_back({"rotational", t.rotational});
    info_labels.push_back({"scheduler", t.scheduler});
    std::sort(info_labels.begin(), info_labels.end());
    AddSample(info, 1, std::move(info_labels));
  }
  for (
      auto* family :
      {&success,         &supported,    &duration,    &last_run,   &interval,      &runs,
       &read_total,      &bytes,        &throughput,  &baseline,   &baseline_ops,  &ratio,
       &worst,           &worst_uptime, &correlation, &ops,        &latency,       &latency_last,
       &latency_samples, &cpu,          &time_parts,  &context,    &suspect,       &info,
       &readers_bps,     &readers_ops,  &reader_bps,  &reader_ops, &efficiency,    &member_figure,
       &member_ops,      &member_ratio, &tax,         &recovery,   &recovery_time, &recovery_spread,
       &experiment_runs}) {
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
