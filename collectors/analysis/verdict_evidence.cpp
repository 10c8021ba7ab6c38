#include "collectors/analysis/verdict_evidence.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "collectors/common/text.h"
#include "collectors/probes/kinds.h"

namespace iodrift::analysis::verdict_detail {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

constexpr double kGiB = 1ull << 30;

struct PartFeature {
  Part part;
  DriftFeature feature;
  const char* label;
};
constexpr PartFeature kParts[] = {
    {Part::kKernelCpu, DriftFeature::kKernelCpuRatio, "kernel CPU"},
    {Part::kOffCpuWait, DriftFeature::kWaitRatio, "off-CPU wait"},
    {Part::kRunqueueWait, DriftFeature::kRunqueueWaitRatio, "run-queue wait"},
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

// Rule 3's memory waits: with re-reads; where the readers' reclaim delay is unknown and the
// reads fetched their pages again, the daemon's cgroup memory stall stands for that delay, and
// the block I/O wait (or, without delay accounting, the off-CPU wait) for their block I/O
// (re-reads only; without them the stall alone names nothing). The reclaim delay is unknown
// without delay accounting, and also with it where taskstats cannot be read (the packaged
// service has no CAP_NET_ADMIN): block I/O wait then comes from /proc/thread-self/stat alone.
Evidence ReclaimWithRereads(const VerdictInput& in, const Facts& f) {
  Evidence reclaim_rereads = WithRereads(in, f.u, f.memory_wait, f.blkio, f.cgroup_memory);
  if (!f.memory_wait.known && f.cgroup_memory.known) {
    const Evidence io =
        f.blkio.known ? f.blkio : f.u.Of(in, {DriftFeature::kWaitRatio}, "off-CPU wait");
    Evidence stand_in = WithRereads(in, f.u, f.cgroup_memory, io, f.cgroup_memory);
    if (stand_in.label != f.cgroup_memory.label) {
      stand_in.label = f.blkio.known ? "cgroup memory stall and re-read block I/O"
                                     : "cgroup memory stall and re-read off-CPU wait";
      reclaim_rereads = stand_in;
    }
  }
  return reclaim_rereads;
}

// "; direct reclaim stalls 5, compaction stalls 0; read from storage ..." — the figures after
// the evidence: the stall counts without delay accounting, read amplification, page reporting.
std::string OtherFigures(const Facts& f, bool delayacct) {
  std::string out;
  if (!delayacct && std::isfinite(f.reclaim_stalls) && std::isfinite(f.compaction_stalls)) {
    out += text::Printf("; direct reclaim stalls %.0f, compaction stalls %.0f", f.reclaim_stalls,
                        f.compaction_stalls);
  }
  const double amp_now = At(f.in.now, DriftFeature::kReadAmplification);
  const double amp_base = At(f.in.base, DriftFeature::kReadAmplification);
  if (std::isfinite(amp_now) && std::isfinite(amp_base) && amp_now > 0) {
    out += text::Printf("; read from storage %.2fx the bytes read (%.2fx at baseline)", amp_now,
                        amp_base);
  }
  if (std::isfinite(f.reported) && f.reported > 0) {
    out += text::Printf("; free memory reported to the host %.0f MiB", f.reported / (1 << 20));
  }
  return out;
}

std::string TwinFigures(const VerdictInput& in) {
  if (in.twin_kind && in.twin_ratio) {
    return "; " + std::string(ProbeKindName(*in.twin_kind)) + " twin at " +
           Percent(*in.twin_ratio) + " of its baseline";
  }
  if (in.twin_kind && in.twin_stale_offset_seconds) {
    const double offset = *in.twin_stale_offset_seconds;
    return "; " + std::string(ProbeKindName(*in.twin_kind)) +
           " twin has no run from the same moment (its last run started " +
           text::Printf("%.0f s ", std::fabs(offset)) + (offset < 0 ? "before" : "after") +
           " this run started)";
  }
  return "";
}

}  // namespace

double At(const DriftFeatures& f, DriftFeature which) { return f[static_cast<std::size_t>(which)]; }

Evidence PerUnit::Of(const VerdictInput& in, std::initializer_list<DriftFeature> features,
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

// When every part grows alike (a proportional slowdown) the biggest part carries most of the
// added time without being its cause. `queued`: the wait is off-CPU / block I/O wait and others
// moved >= kOthersBusy of the device's bytes — our requests queued behind theirs, a mechanism
// seen apart from the time parts — and then a rest that added < kAbsent of the added time is no
// sign of a proportional slowdown: the wait holds > 80 % of it, and the rest's growth is that of
// a few ms per run (the zoo's other_readers under CPU pressure: run-queue wait from 0.007 to
// 1.4 s/GiB). Not without the others' I/O: healthy runs on a loop device whose worker waited for
// a CPU would read as `device`.
bool PerUnit::Carries(const Evidence& e, bool queued) const {
  const double added = Added();
  if (!e.known || added <= 0 || e.Added() < kShareOfAdded * added) return false;
  if (!(e.now > e.base && e.now >= kPartGrowth * e.base)) return false;
  const double rest_now = scale / figure - e.now;
  const double rest_base = scale / baseline - e.base;
  if (queued && rest_now - rest_base < kAbsent * added) return true;
  const double rest_growth = rest_base > 0 && rest_now > 0 ? rest_now / rest_base : 1.0;
  return e.base <= 0 || e.now / e.base >= kOutgrowRest * rest_growth;
}

std::optional<Facts> Gather(const VerdictInput& in) {
  const bool throughput = IsThroughputKind(in.kind);
  Facts f{.in = in, .u = PerUnit{throughput ? kGiB : 1.0, *in.figure, *in.baseline}};
  f.throughput = throughput;
  f.ratio = *in.figure / *in.baseline;
  f.added = f.u.Added();
  auto add_figure = [&](const Evidence& e) {
    if (!e.known) return;
    if (!f.figures.empty()) f.figures += "; ";
    f.figures += std::string(e.label) + " " + TimePerUnit(f, e.now) + " now vs " +
                 text::Printf("%.3g", e.base * (throughput ? 1.0 : 1e3)) + " at baseline";
  };
  int known_parts = 0;
  for (const PartFeature& p : kParts) {
    const Evidence e = f.u.Of(in, {p.feature}, p.label);
    if (!e.known) continue;
    if (known_parts++ == 0 || e.Added() > f.part.Added()) {
      f.top = p.part;
      f.part = e;
    }
    add_figure(e);
  }
  if (known_parts < 2) return std::nullopt;
  const double dev_now = At(in.now, DriftFeature::kDeviceBusyPerGib);
  const double dev_base = At(in.base, DriftFeature::kDeviceBusyPerGib);
  if (throughput && std::isfinite(dev_now) && std::isfinite(dev_base)) {
    f.figures += "; device busy " + text::Printf("%.3g", dev_now) + " vs " +
                 text::Printf("%.3g", dev_base) + " s/GiB";
  }
  f.memory_wait = f.u.Of(in,
                         {DriftFeature::kReclaimDelayRatio, DriftFeature::kThrashingDelayRatio,
                          DriftFeature::kSwapinDelayRatio},
                         "reclaim delay");
  f.compaction = f.u.Of(in, {DriftFeature::kCompactionDelayRatio}, "compaction delay");
  f.blkio = f.u.Of(in, {DriftFeature::kBlkioDelayRatio}, "block I/O wait");
  f.throttled = f.u.Of(in, {DriftFeature::kCpuThrottledRatio}, "cgroup CPU quota throttling");
  f.cgroup_memory = f.u.Of(in, {DriftFeature::kCgroupMemoryStallRatio}, "cgroup memory stall");
  add_figure(f.blkio);
  for (const Evidence* e : {&f.memory_wait, &f.compaction, &f.throttled, &f.cgroup_memory}) {
    if (e->now > 0 || e->base > 0) add_figure(*e);  // the reasons that took part
  }
  f.others = At(in.now, DriftFeature::kDeviceOthersRatio);
  if (std::isfinite(f.others)) f.figures += "; others' share of the device " + Percent(f.others);
  f.queued = std::isfinite(f.others) && f.others >= kOthersBusy;
  f.blkio_carries = f.u.Carries(f.blkio, f.queued);
  f.reclaim_stalls = At(in.now, DriftFeature::kDirectReclaimStalls);
  f.compaction_stalls = At(in.now, DriftFeature::kCompactionStalls);
  f.reported = At(in.now, DriftFeature::kPageReported);
  f.figures += OtherFigures(f, f.memory_wait.known && f.compaction.known && f.blkio.known);
  f.twin = TwinFigures(in);
  f.reclaim_rereads = ReclaimWithRereads(in, f);
  if (f.reclaim_rereads.label != f.memory_wait.label) add_figure(f.reclaim_rereads);
  return f;
}

Verdict Format(const Facts& f, const Finding& finding) {
  const Evidence& e = finding.evidence;
  const double share = f.added > 0 ? (e.now - e.base) / f.added : 0;
  const std::string text = "figure at " + Percent(f.ratio) + " of baseline, " +
                           TimePerUnit(f, f.added) + " added, " + Percent(std::max(0.0, share)) +
                           " of it " + e.label + "; " + f.figures + f.twin +
                           (finding.note.empty() ? "" : " (" + finding.note + ")");
  return Verdict{finding.cause, "Verdict: " + std::string(CauseName(finding.cause)) + ": " + text,
                 finding.wants_twin_run};
}

Verdict Undetermined(const std::string& why) {
  return Verdict{Cause::kUndetermined, "Verdict: undetermined: " + why};
}

std::string Percent(double ratio) { return text::Printf("%.0f %%", 100 * ratio); }

std::string TimePerUnit(const Facts& f, double seconds_per_unit) {
  return text::Printf("%.3g", seconds_per_unit * (f.throughput ? 1.0 : 1e3)) +
         (f.throughput ? " s/GiB" : " ms/op");
}

}  // namespace iodrift::analysis::verdict_detail
