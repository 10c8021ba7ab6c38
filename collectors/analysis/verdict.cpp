#include "collectors/analysis/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "collectors/probes/kinds.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

constexpr double kGiB = 1ull << 30;

// The three parts of the sum the verdict compares; `cause` marks which branch of rule 4 a part
// leads to (kernel CPU: the memory causes, off-CPU: device and the other waits).
struct Part {
  Cause cause;
  DriftFeature feature;
  const char* label;
};
constexpr Part kParts[] = {
    {Cause::kPageAllocation, DriftFeature::kKernelCpuRatio, "kernel CPU"},
    {Cause::kDevice, DriftFeature::kWaitRatio, "off-CPU wait"},
    {Cause::kCpuContention, DriftFeature::kRunqueueWaitRatio, "run-queue wait"},
};

double At(const DriftFeatures& f, DriftFeature which) { return f[static_cast<std::size_t>(which)]; }

// One piece of evidence per unit of work (seconds per GiB or per op), now and at baseline.
struct Evidence {
  const char* label = "";
  bool known = false;
  double now = 0;
  double base = 0;
  double Added() const { return now - base; }
};

struct PartEvidence {
  Cause cause;
  Evidence evidence;
};

// Shares of wall time → time per unit; the carry test (verdict.h).
struct PerUnit {
  double scale;
  double figure;
  double baseline;

  double Added() const { return scale * (1 / figure - 1 / baseline); }

  // The sum of `features` (shares of wall time), known when the first is known now and at
  // baseline; the others are added where they are known (a kernel that accounts reclaim but not
  // thrashing).
  Evidence Of(const VerdictInput& in, std::initializer_list<DriftFeature> features,
              const char* label) const {
    Evidence e{label, true, 0, 0};
    for (DriftFeature f : features) {
      const double now = At(in.now, f);
      const double base = At(in.base, f);
      if (!std::isfinite(now) || !std::isfinite(base)) {
        if (f == *features.begin()) return Evidence{label};
        continue;
      }
      e.now += scale * now / figure;
      e.base += scale * base / baseline;
    }
    return e;
  }

  // Carried >= kShareOfAdded of the added time, grew >= kPartGrowth x, and >= kOutgrowRest x as
  // much as the rest of the time per unit: when every part grows alike (a proportional slowdown)
  // the biggest part carries most of the added time without being its cause. `queued`: the wait
  // is off-CPU / block I/O wait and others moved >= kOthersBusy of the device's bytes — our
  // requests queued behind theirs, a mechanism seen apart from the time parts — and then a rest
  // that added < kAbsent of the added time is no sign of a proportional slowdown: the wait holds
  // > 80 % of it, and the rest's growth is that of a few ms per run (the zoo's other_readers
  // under CPU pressure: run-queue wait from 0.007 to 1.4 s/GiB). Not without the others' I/O:
  // healthy runs on a loop device whose worker waited for a CPU would read as `device`.
  bool Carries(const Evidence& e, bool queued = false) const {
    const double added = Added();
    if (!e.known || added <= 0 || e.Added() < kShareOfAdded * added) return false;
    if (!(e.now > e.base && e.now >= kPartGrowth * e.base)) return false;
    const double rest_now = scale / figure - e.now;
    const double rest_base = scale / baseline - e.base;
    if (queued && rest_now - rest_base < kAbsent * added) return true;
    const double rest_growth = rest_base > 0 && rest_now > 0 ? rest_now / rest_base : 1.0;
    return e.base <= 0 || e.now / e.base >= kOutgrowRest * rest_growth;
  }
};

// The readers' memory waits with re-reads (rule 3, verdict.h): reclaim + swap-in delay +
// max(thrashing delay, the block I/O wait's re-read share), now and at baseline; `memory_wait`
// itself (reclaim + thrashing + swap-in) when re-reads do not count: read amplification unknown
// now or at baseline, below kRereadAmplification, or reclaim took no part (the memory waits and
// the cgroup's memory stall < kAbsent of the added time: a run cut short by its time budget
// reads ahead beyond its last read, which is not a re-read).
Evidence WithRereads(const VerdictInput& in, const PerUnit& u, const Evidence& memory_wait,
                     const Evidence& blkio, const Evidence& cgroup_memory) {
  const double amp_now = At(in.now, DriftFeature::kReadAmplification);
  const double amp_base = At(in.base, DriftFeature::kReadAmplification);
  const double added = u.Added();
  auto took_part = [&](const Evidence& e) { return e.known && e.now >= kAbsent * added; };
  if (!memory_wait.known || !blkio.known || !std::isfinite(amp_now) || !std::isfinite(amp_base) ||
      amp_now < kRereadAmplification || added <= 0 ||
      !(took_part(memory_wait) || took_part(cgroup_memory))) {
    return memory_wait;
  }
  auto reread = [](double blkio_per_unit, double amp) {
    return amp >= kRereadAmplification ? blkio_per_unit * (1 - 1 / amp) : 0.0;
  };
  const Evidence thrashing = u.Of(in, {DriftFeature::kThrashingDelayRatio}, "");
  const double thrash_now = thrashing.known ? thrashing.now : 0;
  const double thrash_base = thrashing.known ? thrashing.base : 0;
  const double reread_now = reread(blkio.now, amp_now);
  if (reread_now <= thrash_now) return memory_wait;
  Evidence e = memory_wait;
  e.label = "reclaim delay and re-read block I/O";
  e.now += reread_now - thrash_now;
  e.base += std::max(thrash_base, reread(blkio.base, amp_base)) - thrash_base;
  return e;
}

std::string Verdictline(Cause cause, const std::string& figures) {
  return "Verdict: " + std::string(CauseName(cause)) + ": " + figures;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", 100 * ratio);
  return buf;
}

}  // namespace

std::string_view CauseName(Cause cause) {
  switch (cause) {
    case Cause::kDevice:
      return "device";
    case Cause::kDeviceBusy:
      return "device_busy";
    case Cause::kMemoryReclaim:
      return "memory_reclaim";
    case Cause::kMemoryCompaction:
      return "memory_compaction";
    case Cause::kPageAllocation:
      return "page_allocation";
    case Cause::kHypervisorReclaim:
      return "hypervisor_reclaim";
    case Cause::kCpuContention:
      return "cpu_contention";
    case Cause::kRemoteFilesystem:
      return "remote_filesystem";
    case Cause::kUndetermined:
      return "undetermined";
  }
  return "undetermined";
}

const std::vector<Cause>& AllCauses() {
  static const std::vector<Cause> all = {
      Cause::kDevice,           Cause::kDeviceBusy,       Cause::kMemoryReclaim,
      Cause::kMemoryCompaction, Cause::kPageAllocation,   Cause::kHypervisorReclaim,
      Cause::kCpuContention,    Cause::kRemoteFilesystem, Cause::kUndetermined};
  return all;
}

std::optional<Cause> ParseCauseName(std::string_view name) {
  for (Cause c : AllCauses()) {
    if (CauseName(c) == name) return c;
  }
  return std::nullopt;
}

Verdict DecideVerdict(const VerdictInput& in) {
  auto undetermined = [](const std::string& why) {
    return Verdict{Cause::kUndetermined, Verdictline(Cause::kUndetermined, why)};
  };
  if (!in.baseline || *in.baseline <= 0) return undetermined("no baseline yet");
  if (!in.figure || *in.figure <= 0) return undetermined("the last run has no figure");
  const double ratio = *in.figure / *in.baseline;
  if (ratio >= kSlowdownRatio) {
    return undetermined("no slowdown: the last run is at " + Percent(ratio) + " of baseline");
  }
  for (std::size_t i = in.previous_ratios.size(); i-- > 0;) {
    if (in.previous_ratios[i] >= kSlowdownRatio) {
      const std::size_t back = in.previous_ratios.size() - i;
      return undetermined(
          "a single slow run: the last run is at " + Percent(ratio) + " of baseline, the run " +
          (back == 1 ? std::string("before it") : std::to_string(back) + " before it") + " at " +
          Percent(in.previous_ratios[i]) + "; a cause is named once " +
          std::to_string(kSustainedRuns) + " runs in a row are below " + Percent(kSlowdownRatio));
    }
  }
  const bool throughput = IsThroughputKind(in.kind);
  const PerUnit u{throughput ? kGiB : 1.0, *in.figure, *in.baseline};
  const char* unit = throughput ? "s/GiB" : "ms/op";
  const double show = throughput ? 1.0 : 1e3;
  auto fmt = [&](double seconds_per_unit) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", seconds_per_unit * show);
    return std::string(buf);
  };
  const double added = u.Added();
  std::vector<PartEvidence> parts;
  for (const Part& p : kParts) {
    Evidence e = u.Of(in, {p.feature}, p.label);
    if (e.known) parts.push_back({p.cause, e});
  }
  if (parts.size() < 2) {
    return undetermined("the figure is at " + Percent(ratio) +
                        " of baseline, but the time parts of the last run or of the baseline "
                        "runs are unknown");
  }
  std::string figures;
  auto add_figure = [&](const Evidence& e) {
    if (!e.known) return;
    if (!figures.empty()) figures += "; ";
    figures += std::string(e.label) + " " + fmt(e.now) + " " + unit + " now vs " + fmt(e.base) +
               " at baseline";
  };
  for (const auto& p : parts) add_figure(p.evidence);
  const double dev_now = At(in.now, DriftFeature::kDeviceBusyPerGib);
  const double dev_base = At(in.base, DriftFeature::kDeviceBusyPerGib);
  if (throughput && std::isfinite(dev_now) && std::isfinite(dev_base)) {
    figures += "; device busy " + fmt(dev_now) + " vs " + fmt(dev_base) + " s/GiB";
  }
  // The kernel's reasons (overlapping the parts).
  const Evidence memory_wait =
      u.Of(in,
           {DriftFeature::kReclaimDelayRatio, DriftFeature::kThrashingDelayRatio,
            DriftFeature::kSwapinDelayRatio},
           "reclaim delay");
  const Evidence compaction = u.Of(in, {DriftFeature::kCompactionDelayRatio}, "compaction delay");
  const Evidence blkio = u.Of(in, {DriftFeature::kBlkioDelayRatio}, "block I/O wait");
  const Evidence throttled =
      u.Of(in, {DriftFeature::kCpuThrottledRatio}, "cgroup CPU quota throttling");
  const Evidence cgroup_memory =
      u.Of(in, {DriftFeature::kCgroupMemoryStallRatio}, "cgroup memory stall");
  add_figure(blkio);
  for (const Evidence* e : {&memory_wait, &compaction, &throttled, &cgroup_memory}) {
    if (e->now > 0 || e->base > 0) add_figure(*e);  // the reasons that took part
  }
  const double others = At(in.now, DriftFeature::kDeviceOthersRatio);
  if (std::isfinite(others)) figures += "; others' share of the device " + Percent(others);
  const double reclaim_stalls = At(in.now, DriftFeature::kDirectReclaimStalls);
  const double compaction_stalls = At(in.now, DriftFeature::kCompactionStalls);
  const bool delayacct = memory_wait.known && compaction.known && blkio.known;
  if (!delayacct && std::isfinite(reclaim_stalls) && std::isfinite(compaction_stalls)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "; direct reclaim stalls %.0f, compaction stalls %.0f",
                  reclaim_stalls, compaction_stalls);
    figures += buf;
  }
  const double amp_now = At(in.now, DriftFeature::kReadAmplification);
  const double amp_base = At(in.base, DriftFeature::kReadAmplification);
  if (std::isfinite(amp_now) && std::isfinite(amp_base) && amp_now > 0) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "; read from storage %.2fx the bytes read (%.2fx at baseline)",
                  amp_now, amp_base);
    figures += buf;
  }
  const double reported = At(in.now, DriftFeature::kPageReported);
  if (std::isfinite(reported) && reported > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "; free memory reported to the host %.0f MiB",
                  reported / (1 << 20));
    figures += buf;
  }
  std::string twin;
  if (in.twin_kind && in.twin_ratio) {
    twin = "; " + std::string(ProbeKindName(*in.twin_kind)) + " twin at " +
           Percent(*in.twin_ratio) + " of its baseline";
  } else if (in.twin_kind && in.twin_stale_offset_seconds) {
    char when[96];
    const double offset = *in.twin_stale_offset_seconds;
    std::snprintf(when, sizeof when, "%.0f s %s this run started", std::fabs(offset),
                  offset < 0 ? "before" : "after");
    twin = "; " + std::string(ProbeKindName(*in.twin_kind)) +
           " twin has no run from the same moment (its last run started " + when + ")";
  }
  // "figure at 31 % of baseline, 2.1 s/GiB added, 88 % of it reclaim wait; <figures><twin>"
  auto text = [&](const Evidence& e, const std::string& note) {
    const double share = added > 0 ? (e.now - e.base) / added : 0;
    return "figure at " + Percent(ratio) + " of baseline, " + fmt(added) + " " + unit + " added, " +
           Percent(std::max(0.0, share)) + " of it " + e.label + "; " + figures + twin +
           (note.empty() ? "" : " (" + note + ")");
  };
  auto named = [&](Cause cause, const Evidence& e, const std::string& note = "") {
    return Verdict{cause, Verdictline(cause, text(e, note))};
  };

  // 3. Memory waits, in whatever part they were spent; re-reads of evicted pages among them.
  Evidence reclaim_rereads = WithRereads(in, u, memory_wait, blkio, cgroup_memory);
  if (!memory_wait.known && !blkio.known && cgroup_memory.known) {
    // Without delay accounting, where the reads fetched their pages again: the daemon's cgroup
    // memory stall stands for the readers' reclaim delay and the off-CPU wait for their block
    // I/O (re-reads only; without them the stall alone names nothing here).
    const Evidence off_cpu = u.Of(in, {DriftFeature::kWaitRatio}, "off-CPU wait");
    Evidence stand_in = WithRereads(in, u, cgroup_memory, off_cpu, cgroup_memory);
    if (stand_in.label != cgroup_memory.label) {
      stand_in.label = "cgroup memory stall and re-read off-CPU wait";
      reclaim_rereads = stand_in;
    }
  }
  if (reclaim_rereads.label != memory_wait.label) add_figure(reclaim_rereads);
  const bool reclaim_carries = u.Carries(reclaim_rereads);
  const bool compaction_carries = u.Carries(compaction);
  if (reclaim_carries || compaction_carries) {
    if (reclaim_carries && (!compaction_carries || reclaim_rereads.Added() >= compaction.Added())) {
      return named(Cause::kMemoryReclaim, reclaim_rereads);
    }
    return named(Cause::kMemoryCompaction, compaction);
  }

  // 4. The part that added the most.
  const PartEvidence* top = &parts[0];
  for (const auto& p : parts) {
    if (p.evidence.Added() > top->evidence.Added()) top = &p;
  }
  const Evidence& part = top->evidence;
  auto no_cause = [&](const std::string& note) { return undetermined(text(part, note)); };
  const bool queued = std::isfinite(others) && others >= kOthersBusy;
  if (!u.Carries(part, top->cause == Cause::kDevice && queued)) return no_cause("");
  if (top->cause == Cause::kCpuContention) return named(Cause::kCpuContention, part);

  if (top->cause == Cause::kDevice) {  // off-CPU wait
    const bool blkio_carries = u.Carries(blkio, queued);
    if (u.Carries(throttled) && !blkio_carries) return named(Cause::kCpuContention, throttled);
    const double high_events = At(in.now, DriftFeature::kMemoryHighEvents);
    if (std::isfinite(high_events) && high_events > 0 && u.Carries(cgroup_memory) &&
        !blkio_carries) {
      return named(Cause::kMemoryReclaim, cgroup_memory,
                   "the daemon's cgroup is held at memory.high");
    }
    if (!in.remote) {
      return no_cause("whether the target is on a remote filesystem is unknown");
    }
    if (*in.remote) return named(Cause::kRemoteFilesystem, part, "the target is remote");
    // What is missing when block I/O wait is unknown.
    const std::string no_blkio =
        std::isfinite(At(in.now, DriftFeature::kBlkioDelayRatio))
            ? "the baseline has no block I/O wait figure (formed without delay accounting, or "
              "its figures were longer than the runs)"
            : "block I/O wait unknown (delay accounting off: set kernel.task_delayacct=1; or "
              "the figure was longer than the run)";
    Cause cause;
    const Evidence* evidence = &blkio;
    std::string note;
    if (blkio.known) {
      if (!blkio_carries) {
        return no_cause(
            "block I/O wait did not carry the off-CPU wait, and no other reason the "
            "kernel accounts for did");
      }
      if (!std::isfinite(others)) {
        return no_cause("whether the device was serving others' I/O is unknown");
      }
      if (others >= kOthersBusy) {
        cause = Cause::kDeviceBusy;
      } else if (others <= kOthersQuiet) {
        cause = Cause::kDevice;
      } else {
        return no_cause("the device served our I/O and others' alike");
      }
    } else {
      // The fallback. Block I/O without delay accounting: a direct read's off-CPU wait is its
      // own device requests (each O_DIRECT read is one, no page cache between); a buffered run
      // whose direct twin slowed from the same moment waited on the device the twin did (a twin
      // still to run is asked for below, rule 6). The device's bytes then say whose I/O it
      // served. Otherwise the wait is the device's only when the device was not serving others
      // and the io stall could hold the whole wait.
      if (!std::isfinite(others)) {
        return no_cause(no_blkio + " and whether the device served others unknown");
      }
      const bool direct = in.kind == ProbeKind::kDirect;
      const bool twin_slowed =
          in.kind == ProbeKind::kBuffered && in.twin_ratio && *in.twin_ratio < kSlowdownRatio;
      const bool twin_pending =
          in.kind == ProbeKind::kBuffered && in.twin_kind && in.twin_stale_offset_seconds;
      evidence = &part;
      if (direct || twin_slowed || twin_pending) {
        if (others >= kOthersBusy) {
          cause = Cause::kDeviceBusy;
        } else if (others <= kOthersQuiet) {
          cause = Cause::kDevice;
        } else {
          return no_cause("the device served our I/O and others' alike; " + no_blkio);
        }
        note = no_blkio + (direct ? ": a direct read's off-CPU wait is its own device requests"
                                  : ": the direct twin slowed as well");
      } else {
        if (others > kOthersQuiet) {
          return no_cause(
              "others moved " + Percent(others) +
              " of the device's bytes, and the wait cannot be put on block I/O: " + no_blkio);
        }
        // The daemon's own cgroup's io stall where it has one (a service's cgroup holds only the
        // daemon); else the system's, which weighs each CPU by its busy time.
        const double own_io = At(in.now, DriftFeature::kCgroupIoStallRatio);
        const bool own = std::isfinite(own_io);
        const double io = own ? own_io : At(in.now, DriftFeature::kPsiIo);
        const std::string stall = own ? "the daemon's cgroup io stall" : "the system's io stall";
        const double wait_share = At(in.now, DriftFeature::kWaitRatio);
        if (!std::isfinite(io)) return no_cause(no_blkio + " and no PSI io");
        if (io < kIoCover * wait_share) {
          return no_cause(stall + " covers only " + Percent(wait_share > 0 ? io / wait_share : 0) +
                          " of the off-CPU wait: not block I/O alone; " + no_blkio);
        }
        cause = Cause::kDevice;
        note = no_blkio + ": the wait is taken as block I/O as " + stall + " covers it";
      }
    }
    // Not the device when memory waits took part: the block I/O may then be re-reading pages
    // that reclaim took (readahead evicted before use, refaults), which the device did not cause.
    for (const Evidence* m : {&memory_wait, &compaction, &cgroup_memory}) {
      if (m->known && added > 0 && m->now >= kAbsent * added) {
        return no_cause("memory reclaim took part (" + std::string(m->label) + " " +
                        Percent(m->now / added) +
                        " of the added time): the block I/O may be re-reads of pages it took");
      }
    }
    // 5, 6: the direct twin.
    if (in.kind == ProbeKind::kBuffered && in.twin_ratio && *in.twin_ratio >= kSlowdownRatio) {
      return undetermined(text(*evidence, "direct reads did not slow: not the device"));
    }
    if (in.kind == ProbeKind::kBuffered && in.twin_kind && in.twin_stale_offset_seconds) {
      Verdict v =
          undetermined(text(*evidence, "without it, the device and memory cannot be told apart"));
      v.wants_twin_run = true;
      return v;
    }
    return named(cause, *evidence, note);
  }

  // Kernel CPU.
  const std::string kind(ProbeKindName(in.kind));
  if (memory_wait.known && compaction.known) {
    if (memory_wait.now + compaction.now >= kAbsent * added) {
      return no_cause("reclaim and compaction waits took part but did not carry it");
    }
    // Reclaim in a memory cgroup (its limit, memory.high) stalls in PSI, not always in the
    // readers' reclaim delay.
    if (cgroup_memory.known && cgroup_memory.now >= kAbsent * added) {
      return no_cause("the cgroup's memory stall took part but did not carry it");
    }
  } else {
    if (!std::isfinite(reclaim_stalls) || !std::isfinite(compaction_stalls)) {
      return no_cause(
          "whether the readers reclaimed or compacted memory is unknown: delay "
          "accounting off (set kernel.task_delayacct=1) and no allocstall or "
          "compact_stall in /proc/vmstat");
    }
    const std::string off = "delay accounting off: counted from /proc/vmstat";
    if (reclaim_stalls > 0 && compaction_stalls > 0) {
      return no_cause(
          "direct reclaim and compaction both stalled allocations during the run; "
          "delay accounting off (set kernel.task_delayacct=1) cannot tell which");
    }
    if (reclaim_stalls > 0) return named(Cause::kMemoryReclaim, part, off);
    if (compaction_stalls > 0) return named(Cause::kMemoryCompaction, part, off);
    // Reclaim in a memory cgroup is not in allocstall: the memory stall must be small.
    Evidence stall = cgroup_memory;
    if (!stall.known) stall = u.Of(in, {DriftFeature::kPsiMemory}, "memory stall");
    if (!stall.known) {
      return no_cause(
          "no memory stall figure to rule out reclaim in a memory cgroup; delay "
          "accounting off: set kernel.task_delayacct=1");
    }
    if (stall.now >= kAbsent * added) {
      return no_cause("memory stalled during the run (" + fmt(stall.now) + " " + unit +
                      "), maybe reclaim in a memory cgroup; delay accounting off: set "
                      "kernel.task_delayacct=1");
    }
  }
  if (in.kind != ProbeKind::kBuffered) {
    return no_cause("no reclaim or compaction, and a " + kind +
                    " run allocates no page-cache pages: what the kernel did is unknown");
  }
  if (std::isfinite(reported) && reported > 0) {
    return named(Cause::kHypervisorReclaim, part,
                 "pages allocated from memory the host took back must be faulted in again");
  }
  return named(Cause::kPageAllocation, part,
               std::isfinite(reported) ? "" : "free page reporting not seen on this machine");
}

const ProbeState* FindTwin(const ProbeSnapshot& all, const ProbeState& state) {
  const std::optional<ProbeKind> want = probes::Traits(state.spec.kind).twin;
  if (!want) return nullptr;
  for (const auto& other : all) {
    if (other && other->spec.kind == *want && other->spec.target == state.spec.target &&
        other->ran()) {
      return other.get();
    }
  }
  return nullptr;
}

bool Contemporaneous(const ProbeResult& run, const ProbeResult& twin_run) {
  const double run_end = run.start_time_seconds + std::max(0.0, run.duration_seconds);
  return twin_run.start_time_seconds >= run.start_time_seconds &&
         twin_run.start_time_seconds <= run_end + kTwinWindowSeconds;
}

Verdict VerdictOf(const ProbeState& state, const ProbeState* twin) {
  VerdictInput in;
  in.kind = state.spec.kind;
  in.baseline = state.baseline;
  if (!state.ran()) {
    return Verdict{Cause::kUndetermined, Verdictline(Cause::kUndetermined, "no run yet")};
  }
  if (state.last.success()) {
    in.figure = DriftFigure(state.last);
    in.now = ExtractDriftFeatures(state.last);
    // With a baseline_ratio (else rule 1 decides), recent_ratios ends with the last run's and
    // holds at most kSustainedRuns: the ones before it are the previous runs'.
    const auto& recent = state.recent_ratios;
    if (state.baseline_ratio && !recent.empty()) {
      in.previous_ratios.assign(recent.begin(), recent.end() - 1);
    }
  }
  in.base = state.baseline_features;
  const auto& target = state.last.target_info;
  if (target.remote == "1") {
    in.remote = true;
  } else if (target.remote == "0" || !target.device.empty()) {
    in.remote = false;
  }
  if (twin) {
    in.twin_kind = twin->spec.kind;
    if (twin->last.generation == twin->generation && Contemporaneous(state.last, twin->last)) {
      if (twin->last.success()) in.twin_ratio = twin->baseline_ratio;
    } else {
      in.twin_stale_offset_seconds = twin->last.start_time_seconds - state.last.start_time_seconds;
    }
  }
  if (!state.last.success()) {
    return Verdict{
        Cause::kUndetermined,
        Verdictline(Cause::kUndetermined, "the last run did not succeed (" +
                                              std::string(OutcomeName(state.last.outcome)) + ")")};
  }
  return DecideVerdict(in);
}

const ProbeState* TwinToRunNow(const ProbeSnapshot& all, const ProbeState& state) {
  const ProbeState* twin = FindTwin(all, state);
  return twin && VerdictOf(state, twin).wants_twin_run ? twin : nullptr;
}

}  // namespace iodrift::analysis
