#include "collectors/probes/result_fields.h"

#include <algorithm>
#include <array>
#include <exception>
#include <type_traits>

#include "collectors/probes/kinds.h"

namespace iodrift::probes {
namespace {

// The /metrics families of result fields (daemon/probe_metrics.cpp adds the ones that come from
// a probe's state: runs, baselines, ratios, correlations, the latency histogram).
constexpr ResultFamily kSuccess{.name = "iodrift_probe_success",
                                .help = "1 when the probe run succeeded."};
constexpr ResultFamily kSupported{
    .name = "iodrift_probe_supported",
    .help =
        "0 when this probe kind cannot measure this target (e.g. no O_DIRECT): nothing else "
        "is measured in its place."};
constexpr ResultFamily kDuration{.name = "iodrift_probe_duration_seconds",
                                 .help = "Wall time of the probe run."};
constexpr ResultFamily kLastRun{.name = "iodrift_probe_last_run_timestamp_seconds",
                                .help = "Start of the last probe run, seconds since the epoch.",
                                .last_run_help = false};
constexpr ResultFamily kBytes{.name = "iodrift_probe_bytes",
                              .help = "Bytes read in the probe run."};
constexpr ResultFamily kThroughput{
    .name = "iodrift_probe_throughput_bytes_per_second",
    .help =
        "Read throughput of the probe run (cached, buffered, direct; memory: streaming "
        "memcpy)."};
constexpr ResultFamily kOps{
    .name = "iodrift_probe_ops_per_second",
    .help =
        "Operations per second of the probe run (random: read; metadata: create, stat, "
        "delete)."};
constexpr ResultFamily kLatencyLast{
    .name = "iodrift_probe_latency_last_seconds",
    .help =
        "Per-operation latency of random and metadata probes: quantiles 0.5 and 0.99 (exact, "
        "nearest rank) of the last successful run, each only when "
        "iodrift_probe_latency_last_samples supports it; _count and _sum cumulative since the "
        "daemon started, as in iodrift_probe_latency_seconds.",
    .last_run_help = false,
    .summary = true};
constexpr ResultFamily kLatencySamples{
    .name = "iodrift_probe_latency_last_samples",
    .help =
        "Operations timed in the last successful run of a random or metadata probe: the "
        "sample count behind iodrift_probe_latency_last_seconds. A quantile is exported only "
        "when this supports it (0.5 from 10 samples, 0.99 from 100).",
    .last_run_help = false};
constexpr ResultFamily kCpu{
    .name = "iodrift_probe_cpu_seconds",
    .help =
        "CPU time of the probe thread during the run, by mode (system CPU per GiB tells "
        "allocation cost from device time)."};
constexpr ResultFamily kTimeParts{
    .name = "iodrift_probe_time_seconds",
    .help =
        "Where the run's wall time went, by part: user_cpu, kernel_cpu, runqueue_wait, "
        "device_wait (off-CPU while the target's device was busy), other (the rest of the "
        "off-CPU time); these add up to the run's wall time. Not in that sum (they overlap "
        "it): device_busy (the device's busy time, any requester), psi_io_stall and "
        "psi_memory_stall (system-wide PSI some), the readers' delay accounting (blkio_delay, "
        "reclaim_delay, …) and the daemon's cgroup (cpu_throttled, cgroup_memory_stall)."};
constexpr ResultFamily kContext{
    .name = "iodrift_probe_context_bytes",
    .help = "Memory state (/proc/meminfo field, bytes) at the start of the run."};
constexpr ResultFamily kSuspect{.name = "iodrift_probe_suspect",
                                .help = "1 when a condition makes the figure doubtful, by reason."};
constexpr ResultFamily kInfo{
    .name = "iodrift_probe_target_info",
    .help =
        "Facts about the probe target: filesystem (fuse.sshfs, nfs4 …), remote (1 on a "
        "network or FUSE filesystem), the disks underneath (devices: an array's or "
        "multi-device btrfs's members), I/O scheduler, read-ahead, rotational, loop device "
        "dio, and how the kind measured (random: direct or fadvise); value 1.",
    .last_run_help = false};
constexpr ResultFamily kMemberFigure{
    .name = "iodrift_probe_member_throughput_bytes_per_second",
    .help =
        "Read throughput of each member disk of an array target (probe option members: "
        "true), probed with the same kind and size right after the array."};
constexpr ResultFamily kMemberOps{
    .name = "iodrift_probe_member_ops_per_second",
    .help =
        "Random read operations per second of each member disk of an array target (probe "
        "option members: true, kind random)."};
constexpr ResultFamily kMemberRatio{
    .name = "iodrift_probe_array_member_ratio",
    .help =
        "The array's figure divided by the member's (throughput, or read ops/s for random) "
        "from the same run: about 2 for a member of a three-disk RAID5 reading at full "
        "stripe."};
#define IODRIFT_READERS_HELP                                                                   \
  " Probes with `readers:` only; `readers` is the number of threads reading disjoint regions " \
  "at once in that step of the run."
constexpr ResultFamily kReadersBps{
    .name = "iodrift_probe_readers_throughput_bytes_per_second",
    .help =
        "Aggregate read throughput of all readers (buffered, direct): their bytes / the "
        "step's wall time." IODRIFT_READERS_HELP};
constexpr ResultFamily kReadersOps{
    .name = "iodrift_probe_readers_ops_per_second",
    .help =
        "Aggregate operations per second of all readers (random, op=read: sum of the "
        "readers' IOPS)." IODRIFT_READERS_HELP,
    .op_label = true};
constexpr ResultFamily kReaderBps{
    .name = "iodrift_probe_reader_throughput_bytes_per_second",
    .help =
        "Per-reader spread: the slowest (stat=min) and fastest (stat=max) reader's own "
        "throughput." IODRIFT_READERS_HELP};
constexpr ResultFamily kReaderOps{
    .name = "iodrift_probe_reader_ops_per_second",
    .help =
        "Per-reader spread: the slowest (stat=min) and fastest (stat=max) reader's own IOPS "
        "(random, op=read)." IODRIFT_READERS_HELP,
    .op_label = true};
constexpr ResultFamily kEfficiency{
    .name = "iodrift_probe_readers_scaling_efficiency",
    .help =
        "Scaling efficiency: aggregate rate with N readers / (N x the rate of one reader in "
        "the same run); 1 = linear scaling, 1/N = no gain. Needs 1 in the probe's readers "
        "list." IODRIFT_READERS_HELP};
#undef IODRIFT_READERS_HELP

constexpr std::array<std::string_view, 4> kKnownSuspectReasons = {
    "cache_not_dropped", "io_pressure", "low_free_memory", "memory_pressure"};

constexpr MetricExport None(std::string_view why) { return {.why = why}; }
constexpr MetricExport Gauge(const ResultFamily& family, std::string_view label = {}) {
  return {.way = MetricExport::Way::kGauge, .family = &family, .label = label};
}
constexpr MetricExport OnSuccess(MetricExport m) {
  m.on_success = true;
  return m;
}
constexpr MetricExport Info(std::string_view label) {
  return {.way = MetricExport::Way::kInfoLabel, .family = &kInfo, .label = label};
}
constexpr MetricExport Quantile(double q) {
  return {.way = MetricExport::Way::kQuantile,
          .family = &kLatencyLast,
          .on_success = true,
          .quantile = q};
}
constexpr MetricExport kRecord = None("a record: each member says");
constexpr MetricExport kInSpec = None("a label of every series (kind, probe, target)");
constexpr std::string_view kJsonOnly =
    "JSON, D-Bus and the status page only (no series: a figure of the run's context)";

MetricExport TimePartExport(const TimePartField& f) {
  if (f.role == TimePartRole::kWall) return None("the run's wall time: the sum of the parts");
  if (!f.seconds()) return None("evidence, not seconds: JSON, D-Bus, explain");
  MetricExport m = Gauge(kTimeParts);
  m.fixed = {"part", f.name};
  return m;
}

// The walk is written once, for both directions: R is `const ProbeResult` (outputs, a
// ResultFieldVisitor) or `ProbeResult` (ReadProbeResult, a ResultFieldReader, which stores what
// it reads into the values it is handed; `if constexpr (kReads<R>)` puts them back where a
// field is not a member as such).
template <typename R>
constexpr bool kReads = !std::is_const_v<R>;
template <typename R>
using WalkerOf = std::conditional_t<kReads<R>, ResultFieldReader, ResultFieldVisitor>;

// A plain (non-optional) number as an optional one.
template <typename V, typename T>
void Number(V& v, std::string_view key, T& field, const MetricExport& m) {
  using Plain = std::remove_const_t<T>;
  if constexpr (std::is_floating_point_v<Plain>) {
    std::optional<double> x = field;
    v.Real(key, x, m);
    if constexpr (!std::is_const_v<T>) field = x.value_or(field);
  } else {
    std::optional<std::uint64_t> x = field;
    v.Count(key, x, m);
    if constexpr (!std::is_const_v<T>) field = static_cast<Plain>(x.value_or(field));
  }
}

template <typename V>
void Scalar(V& v, std::string_view key, const double& x, const MetricExport& m) {
  v.Real(key, std::optional<double>(x), m);
}
template <typename V>
void Scalar(V& v, std::string_view key, const std::optional<double>& x, const MetricExport& m) {
  v.Real(key, x, m);
}
template <typename V>
void Scalar(V& v, std::string_view key, const std::uint64_t& x, const MetricExport& m) {
  v.Count(key, std::optional<std::uint64_t>(x), m);
}
template <typename V>
void Scalar(V& v, std::string_view key, const std::int64_t& x, const MetricExport& m) {
  v.Signed(key, x, m);
}
template <typename V>
void Scalar(V& v, std::string_view key, const std::string& x, const MetricExport& m) {
  v.Text(key, x, m);
}

// A group whose keys are data (kMap; member_errors: a record of texts). Its members take the
// group's export.
template <typename V, typename Map>
void MapGroup(V& v, std::string_view key, Map& map, bool present, const MetricExport& m,
              GroupShape shape = GroupShape::kMap) {
  if constexpr (std::is_const_v<Map>) {
    if (v.BeginGroup(key, shape, present, m)) {
      for (const auto& [name, value] : map) Scalar(v, name, value, m);
    }
    v.EndGroup();
  } else {
    v.Map(key, map);
  }
}

// A kMap group of fixed members that are separate fields of the result (cpu_seconds).
template <typename V, typename T, std::size_t N>
void FixedMap(V& v, std::string_view key,
              const std::array<std::pair<std::string_view, T*>, N>& members,
              const MetricExport& m) {
  if constexpr (std::is_const_v<T>) {
    v.BeginGroup(key, GroupShape::kMap, true, m);
    for (const auto& [name, field] : members) Scalar(v, name, *field, m);
    v.EndGroup();
  } else {
    std::map<std::string, T> read;
    v.Map(key, read);
    for (const auto& [name, field] : members) {
      if (auto it = read.find(std::string(name)); it != read.end()) *field = it->second;
    }
  }
}

// One figure of every step of a readers curve, as a kMap group keyed by the reader count
// ("1", "2", ...), in step order. `get` gives a step's value or nullopt (no member for that
// step), `set` stores a read one. With `omit_unknown`, a figure no step knows has no group.
template <typename T, typename R, typename Get, typename Set>
void PerStep(R& r, WalkerOf<R>& v, std::string_view key, Get get, Set set, const MetricExport& m,
             bool omit_unknown = false) {
  if constexpr (!kReads<R>) {
    if (omit_unknown && std::none_of(r.readers.begin(), r.readers.end(),
                                     [&](const ReaderStep& s) { return get(s).has_value(); }))
      return;
    v.BeginGroup(key, GroupShape::kMap, true, m);
    for (const ReaderStep& s : r.readers) {
      if (auto x = get(s)) Scalar(v, std::to_string(s.readers), *x, m);
    }
    v.EndGroup();
  } else {
    std::map<std::string, T> read;
    v.Map(key, read);
    for (const auto& [count, value] : read) {
      std::uint32_t readers = 0;
      try {
        readers = static_cast<std::uint32_t>(std::stoul(count));
      } catch (const std::exception&) {
        continue;
      }
      auto it = std::find_if(r.readers.begin(), r.readers.end(),
                             [&](const ReaderStep& s) { return s.readers == readers; });
      if (it == r.readers.end()) {
        r.readers.push_back(ReaderStep{});
        it = std::prev(r.readers.end());
        it->readers = readers;
      }
      set(*it, value);
    }
  }
}

template <typename R>
void Walk(R& r, WalkerOf<R>& v) {
  v.Text("name", r.name, kInSpec);
  std::string kind(ProbeKindName(r.kind));
  v.Text("kind", kind, kInSpec);
  if constexpr (kReads<R>) {
    if (auto parsed = ParseProbeKind(kind)) r.kind = *parsed;
  }
  v.Text("target", r.target, kInSpec);
  bool success = r.success();
  v.Flag("success", success, Gauge(kSuccess));
  std::string outcome = kReads<R> ? "" : OutcomeName(r.outcome);
  v.Text("result", outcome, None("counted by result in iodrift_probe_runs_total"));
  if constexpr (kReads<R>) {
    r.outcome = success ? Outcome::kOk : Outcome::kError;
    for (Outcome o : kAllOutcomes) {
      if (outcome == OutcomeName(o)) r.outcome = o;
    }
  }
  v.Flag("supported", r.supported, Gauge(kSupported));
  v.Text("error", r.error, None("text: JSON, D-Bus, the status page and the log"));
  Number(v, "start_time_seconds", r.start_time_seconds, Gauge(kLastRun));
  Number(v, "duration_seconds", r.duration_seconds, Gauge(kDuration));
  Number(v, "bytes", r.bytes, Gauge(kBytes));
  v.Real("throughput_bytes_per_second", r.throughput_bytes_per_second,
         OnSuccess(Gauge(kThroughput)));
  MapGroup(v, "ops_per_second", r.ops_per_second, !r.ops_per_second.empty(),
           OnSuccess(Gauge(kOps, "op")));
  if (v.BeginGroup("latency_seconds", GroupShape::kRecord, true, kRecord)) {
    const auto* l = r.latency ? &*r.latency : nullptr;
    std::optional<double> p50 = l ? l->p50_seconds : std::nullopt;
    std::optional<double> p99 = l ? l->p99_seconds : std::nullopt;
    std::optional<std::uint64_t> count = l ? std::optional<std::uint64_t>(l->count) : std::nullopt;
    v.Real("p50", p50, Quantile(0.5));
    v.Real("p99", p99, Quantile(0.99));
    v.Count("count", count, OnSuccess(Gauge(kLatencySamples)));
    if constexpr (kReads<R>) {
      r.latency.emplace();
      r.latency->p50_seconds = p50;
      r.latency->p99_seconds = p99;
      r.latency->count = count.value_or(0);
    }
  }
  v.EndGroup();
  using Cpu = std::conditional_t<kReads<R>, double, const double>;
  FixedMap(v, "cpu_seconds",
           std::array<std::pair<std::string_view, Cpu*>, 2>{
               {{"user", &r.cpu_user_seconds}, {"system", &r.cpu_system_seconds}}},
           Gauge(kCpu, "mode"));
  v.TextList("suspect", r.suspect,
             {.way = MetricExport::Way::kFlags,
              .family = &kSuspect,
              .label = "reason",
              .always = kKnownSuspectReasons});
  MapGroup(v, "context", r.context, true, Gauge(kContext, "field"));
  MapGroup(v, "vmstat_delta", r.vmstat_delta, true, None(kJsonOnly));
  MapGroup(v, "extra", r.extra, true, None("kind-specific figures: JSON, D-Bus, the status page"));
  auto& t = r.target_info;
  if (v.BeginGroup("target_info", GroupShape::kRecord, true, kRecord)) {
    v.Text("device", t.device, None("the device's own series are iodrift_disk_*"));
    v.Text("fstype", t.fstype, Info("fstype"));
    v.Text("scheduler", t.scheduler, Info("scheduler"));
    v.Text("read_ahead_kb", t.read_ahead_kb, Info("read_ahead_kb"));
    v.Text("rotational", t.rotational, Info("rotational"));
    v.Text("loop_dio", t.loop_dio, Info("loop_dio"));
    Number(v, "logical_block_size", t.logical_block_size, None(kJsonOnly));
    v.Text("remote", t.remote, Info("remote"));
    v.TextList("devices", t.devices, Info("devices"));
    v.TextList("members", t.members, None("the member label of the member series"));
  }
  v.EndGroup();
  v.Text("mode", r.mode, Info("mode"));
  v.Text("residency_witness", r.residency_witness, None(kJsonOnly));
  v.Real("uptime_seconds", r.uptime_seconds, None("iodrift_uptime_seconds is the machine's"));
  MapGroup(v, "dentry_state", r.dentry_state, true, None(kJsonOnly));
  MapGroup(v, "pressure_delta_us", r.pressure_delta_us, true, None(kJsonOnly));
  v.Real("fragmentation_index", r.fragmentation_index, None(kJsonOnly));
  v.Count("spec_size", r.spec_size, None("the spec's own size: a baseline key, not a figure"));
  MapGroup(v, "member_figures", r.member_figures, !r.member_figures.empty(),
           {.way = MetricExport::Way::kGauge,
            .family = &kMemberFigure,
            .ops_family = &kMemberOps,
            .label = "member"});
  MapGroup(v, "member_ratios", r.member_ratios, !r.member_ratios.empty(),
           Gauge(kMemberRatio, "member"));
  // Text values: a record (D-Bus a{sv}), keyed by member.
  MapGroup(v, "member_errors", r.member_errors, !r.member_errors.empty(),
           None("text: JSON, D-Bus, the status page"), GroupShape::kRecord);
  // time_parts.h: user_cpu … other add up to wall; the other fields overlap them.
  if (v.BeginGroup("time_seconds", GroupShape::kRecord, r.time_seconds.has_value(), kRecord)) {
    if constexpr (kReads<R>) {
      if (!r.time_seconds) r.time_seconds.emplace();
    }
    for (const TimePartField& f : TimePartFields()) {
      std::optional<double> x = f.Get(*r.time_seconds);
      v.Real(f.name, x, TimePartExport(f));
      if constexpr (kReads<R>) f.Set(*r.time_seconds, x);
    }
  }
  v.EndGroup();
  // The readers curve (readers.h): per figure a map from the reader count ("1", "2", ...).
  if (v.BeginGroup("readers", GroupShape::kRecord, !r.readers.empty(), kRecord)) {
    std::string unit = Traits(r.kind).ops_figure ? "ops_per_second" : "bytes_per_second";
    v.Text("unit", unit, None("the family's name says the unit"));
    auto field = [](auto member) {
      return [member](const ReaderStep& s) { return std::optional(s.*member); };
    };
    auto store = [](auto member) {
      return [member](ReaderStep& s, auto value) { s.*member = value; };
    };
    const MetricExport rate = OnSuccess({.way = MetricExport::Way::kGauge,
                                         .family = &kReadersBps,
                                         .ops_family = &kReadersOps,
                                         .label = "readers"});
    MetricExport spread = rate;
    spread.family = &kReaderBps;
    spread.ops_family = &kReaderOps;
    spread.fixed = {"stat", "min"};
    PerStep<double>(r, v, "rate", field(&ReaderStep::rate), store(&ReaderStep::rate), rate);
    PerStep<double>(r, v, "per_reader_min", field(&ReaderStep::per_reader_min),
                    store(&ReaderStep::per_reader_min), spread);
    spread.fixed = {"stat", "max"};
    PerStep<double>(r, v, "per_reader_max", field(&ReaderStep::per_reader_max),
                    store(&ReaderStep::per_reader_max), spread);
    PerStep<double>(
        r, v, "scaling_efficiency", [](const ReaderStep& s) { return s.scaling_efficiency; },
        store(&ReaderStep::scaling_efficiency), OnSuccess(Gauge(kEfficiency, "readers")));
    PerStep<std::uint64_t>(r, v, "bytes", field(&ReaderStep::bytes), store(&ReaderStep::bytes),
                           None(kJsonOnly));
    PerStep<double>(r, v, "seconds", field(&ReaderStep::seconds), store(&ReaderStep::seconds),
                    None(kJsonOnly));
    // Each step's time parts (time_parts.h), one map per field ("time_kernel_cpu": {"1": …}),
    // for the fields some step knows.
    for (const TimePartField& f : TimePartFields()) {
      PerStep<double>(
          r, v, "time_" + std::string(f.name),
          [&f](const ReaderStep& s) {
            return s.time_seconds ? f.Get(*s.time_seconds) : std::nullopt;
          },
          [&f](ReaderStep& s, double value) {
            if (!s.time_seconds) s.time_seconds.emplace();
            f.Set(*s.time_seconds, value);
          },
          None("per step: JSON, D-Bus; the run's own (its first step's) are "
               "iodrift_probe_time_seconds"),
          true);
    }
    if constexpr (kReads<R>) {
      // Read in the maps' text order ("16" < "2"); the curve reads in reader order.
      std::sort(r.readers.begin(), r.readers.end(),
                [](const ReaderStep& a, const ReaderStep& b) { return a.readers < b.readers; });
    }
  }
  v.EndGroup();
}

}  // namespace

void VisitProbeResult(const ProbeResult& result, ResultFieldVisitor& visitor) {
  Walk<const ProbeResult>(result, visitor);
}

void ReadProbeResult(ProbeResult& result, ResultFieldReader& reader) {
  Walk<ProbeResult>(result, reader);
}

const std::vector<std::string_view>& ProbeResultFieldNames() {
  // Collected once from the walk itself, so the list cannot differ from it.
  static const std::vector<std::string_view> kNames = [] {
    struct Names : ResultFieldVisitor {
      std::vector<std::string_view> names;
      int depth = 0;
      void Add(std::string_view key) {
        if (depth == 0) names.push_back(key);
      }
      void Text(std::string_view key, const std::string&, const MetricExport&) override {
        Add(key);
      }
      void Flag(std::string_view key, bool, const MetricExport&) override { Add(key); }
      void Real(std::string_view key, const std::optional<double>&, const MetricExport&) override {
        Add(key);
      }
      void Count(std::string_view key, const std::optional<std::uint64_t>&,
                 const MetricExport&) override {
        Add(key);
      }
      void Signed(std::string_view key, std::int64_t, const MetricExport&) override { Add(key); }
      void TextList(std::string_view key, const std::vector<std::string>&,
                    const MetricExport&) override {
        Add(key);
      }
      bool BeginGroup(std::string_view key, GroupShape, bool present,
                      const MetricExport&) override {
        Add(key);
        ++depth;
        return present;
      }
      void EndGroup() override { --depth; }
    } walk;
    VisitProbeResult(ProbeResult{}, walk);
    return walk.names;
  }();
  return kNames;
}

}  // namespace iodrift::probes
