// The verdict's rules (verdict.h, "Rules, in order"), one function per rule: each returns the
// Finding it makes (a cause named, or undetermined with the reason) or nullopt when the case is
// not its own. DecideVerdict walks them in kRules order; the first finding is the verdict, put
// in words by the one formatter (verdict_evidence.h Format).
#include <cmath>
#include <optional>
#include <string>

#include "collectors/analysis/verdict.h"
#include "collectors/analysis/verdict_evidence.h"
#include "collectors/probes/kinds.h"

namespace iodrift::analysis {

using namespace verdict_detail;  // NOLINT: the rules read the gathered facts
namespace {

using Rule = std::optional<Finding> (*)(const Facts&);

Finding Named(Cause cause, const Evidence& e, std::string note = "") {
  return Finding{cause, e, std::move(note)};
}
// Undetermined, with the part that added the most first in the text.
Finding NoCause(const Facts& f, std::string note = "") {
  return Finding{Cause::kUndetermined, f.part, std::move(note)};
}

// 1. Nothing to compare: no baseline or no figure (the time parts: Gather).
std::optional<std::string> NothingToCompare(const VerdictInput& in) {
  if (!in.baseline || *in.baseline <= 0) return "no baseline yet";
  if (!in.figure || *in.figure <= 0) return "the last run has no figure";
  return std::nullopt;
}

// 2. No slowdown, or one that did not last kSustainedRuns runs.
std::optional<std::string> NoLastingSlowdown(const VerdictInput& in) {
  const double ratio = *in.figure / *in.baseline;
  if (ratio >= kSlowdownRatio) {
    return "no slowdown: the last run is at " + Percent(ratio) + " of baseline";
  }
  for (std::size_t i = in.previous_ratios.size(); i-- > 0;) {
    if (in.previous_ratios[i] < kSlowdownRatio) continue;
    const std::size_t back = in.previous_ratios.size() - i;
    return "a single slow run: the last run is at " + Percent(ratio) + " of baseline, the run " +
           (back == 1 ? std::string("before it") : std::to_string(back) + " before it") + " at " +
           Percent(in.previous_ratios[i]) + "; a cause is named once " +
           std::to_string(kSustainedRuns) + " runs in a row are below " + Percent(kSlowdownRatio);
  }
  return std::nullopt;
}

// 3. Memory waits carry, in whatever part they were spent (re-reads of evicted pages among
// them): memory_reclaim or memory_compaction, whichever added more.
std::optional<Finding> MemoryWaits(const Facts& f) {
  const bool reclaim = f.u.Carries(f.reclaim_rereads);
  const bool compaction = f.u.Carries(f.compaction);
  if (reclaim && (!compaction || f.reclaim_rereads.Added() >= f.compaction.Added())) {
    return Named(Cause::kMemoryReclaim, f.reclaim_rereads);
  }
  if (compaction) return Named(Cause::kMemoryCompaction, f.compaction);
  return std::nullopt;
}

// 4. The part that added the most must carry.
std::optional<Finding> TopPartCarries(const Facts& f) {
  if (f.u.Carries(f.part, f.top == Part::kOffCpuWait && f.queued)) return std::nullopt;
  return NoCause(f);
}

// 4, run-queue wait → cpu_contention.
std::optional<Finding> RunqueueWait(const Facts& f) {
  if (f.top != Part::kRunqueueWait) return std::nullopt;
  return Named(Cause::kCpuContention, f.part);
}

// 4, off-CPU wait: the cgroup's CPU quota throttling carries, block I/O wait does not.
std::optional<Finding> CpuQuota(const Facts& f) {
  if (f.top != Part::kOffCpuWait || !f.u.Carries(f.throttled) || f.blkio_carries) {
    return std::nullopt;
  }
  return Named(Cause::kCpuContention, f.throttled);
}

// 4, off-CPU wait: the daemon's cgroup at memory.high, its memory stall carries, block I/O wait
// does not.
std::optional<Finding> MemoryHigh(const Facts& f) {
  const double high_events = At(f.in.now, DriftFeature::kMemoryHighEvents);
  if (f.top != Part::kOffCpuWait || !std::isfinite(high_events) || high_events <= 0 ||
      !f.u.Carries(f.cgroup_memory) || f.blkio_carries) {
    return std::nullopt;
  }
  return Named(Cause::kMemoryReclaim, f.cgroup_memory,
               "the daemon's cgroup is held at memory.high");
}

// 4, off-CPU wait on a remote target → remote_filesystem; a target not known to be local is
// undetermined.
std::optional<Finding> RemoteFilesystem(const Facts& f) {
  if (f.top != Part::kOffCpuWait) return std::nullopt;
  if (!f.in.remote) return NoCause(f, "whether the target is on a remote filesystem is unknown");
  if (*f.in.remote) return Named(Cause::kRemoteFilesystem, f.part, "the target is remote");
  return std::nullopt;
}

// device or device_busy by others' share of the device's bytes; nullopt between.
std::optional<Cause> DeviceByOthers(double others) {
  if (others >= kOthersBusy) return Cause::kDeviceBusy;
  if (others <= kOthersQuiet) return Cause::kDevice;
  return std::nullopt;
}

// What is missing when block I/O wait is unknown.
std::string NoBlkio(const Facts& f) {
  return std::isfinite(At(f.in.now, DriftFeature::kBlkioDelayRatio))
             ? "the baseline has no block I/O wait figure (formed without delay accounting, or "
               "its figures were longer than the runs)"
             : "block I/O wait unknown (delay accounting off: set kernel.task_delayacct=1; or "
               "the figure was longer than the run)";
}

// 4, off-CPU wait on a local target, with delay accounting: block I/O wait must carry; others'
// share of the device decides between device and device_busy.
Finding BlockIoWait(const Facts& f) {
  if (!f.blkio_carries) {
    return NoCause(f,
                   "block I/O wait did not carry the off-CPU wait, and no other reason the "
                   "kernel accounts for did");
  }
  if (!std::isfinite(f.others)) {
    return NoCause(f, "whether the device was serving others' I/O is unknown");
  }
  if (auto cause = DeviceByOthers(f.others)) return Named(*cause, f.blkio);
  return NoCause(f, "the device served our I/O and others' alike");
}

// 4, off-CPU wait on a local target, without delay accounting (the fallback). A direct read's
// off-CPU wait is its own device requests (each O_DIRECT read is one, no page cache between); a
// buffered run whose direct twin slowed from the same moment waited on the device the twin did
// (a twin still to run is asked for, rule 6). The device's bytes then say whose I/O it served.
// Otherwise the wait is the device's only when the device was not serving others and the io
// stall could hold the whole wait.
Finding OffCpuAsBlockIo(const Facts& f) {
  const std::string no_blkio = NoBlkio(f);
  if (!std::isfinite(f.others)) {
    return NoCause(f, no_blkio + " and whether the device served others unknown");
  }
  const VerdictInput& in = f.in;
  const bool direct = in.kind == ProbeKind::kDirect;
  const bool twin_slowed =
      in.kind == ProbeKind::kBuffered && in.twin_ratio && *in.twin_ratio < kSlowdownRatio;
  const bool twin_pending =
      in.kind == ProbeKind::kBuffered && in.twin_kind && in.twin_stale_offset_seconds;
  if (direct || twin_slowed || twin_pending) {
    auto cause = DeviceByOthers(f.others);
    if (!cause) return NoCause(f, "the device served our I/O and others' alike; " + no_blkio);
    return Named(*cause, f.part,
                 no_blkio + (direct ? ": a direct read's off-CPU wait is its own device requests"
                                    : ": the direct twin slowed as well"));
  }
  if (f.others > kOthersQuiet) {
    return NoCause(
        f, "others moved " + Percent(f.others) +
               " of the device's bytes, and the wait cannot be put on block I/O: " + no_blkio);
  }
  // The daemon's own cgroup's io stall where it has one (a service's cgroup holds only the
  // daemon); else the system's, which weighs each CPU by its busy time.
  const double own_io = At(in.now, DriftFeature::kCgroupIoStallRatio);
  const bool own = std::isfinite(own_io);
  const double io = own ? own_io : At(in.now, DriftFeature::kPsiIo);
  const std::string stall = own ? "the daemon's cgroup io stall" : "the system's io stall";
  const double wait_share = At(in.now, DriftFeature::kWaitRatio);
  if (!std::isfinite(io)) return NoCause(f, no_blkio + " and no PSI io");
  if (io < kIoCover * wait_share) {
    return NoCause(f, stall + " covers only " + Percent(wait_share > 0 ? io / wait_share : 0) +
                          " of the off-CPU wait: not block I/O alone; " + no_blkio);
  }
  return Named(Cause::kDevice, f.part,
               no_blkio + ": the wait is taken as block I/O as " + stall + " covers it");
}

// Not the device when memory waits took part: the block I/O may then be re-reading pages that
// reclaim took (readahead evicted before use, refaults), which the device did not cause.
std::optional<Finding> MemoryTookPart(const Facts& f) {
  for (const Evidence* m : {&f.memory_wait, &f.compaction, &f.cgroup_memory}) {
    if (m->known && f.added > 0 && m->now >= kAbsent * f.added) {
      return NoCause(f, "memory reclaim took part (" + std::string(m->label) + " " +
                            Percent(m->now / f.added) +
                            " of the added time): the block I/O may be re-reads of pages it took");
    }
  }
  return std::nullopt;
}

// 5. A buffered probe's direct twin kept its figure: the device did not slow direct reads.
// 6. Its direct twin has no run from the same moment: the verdict waits for one.
std::optional<Finding> DirectTwin(const Facts& f, const Evidence& evidence) {
  const VerdictInput& in = f.in;
  if (in.kind != ProbeKind::kBuffered) return std::nullopt;
  if (in.twin_ratio && *in.twin_ratio >= kSlowdownRatio) {
    return Finding{Cause::kUndetermined, evidence, "direct reads did not slow: not the device"};
  }
  if (in.twin_kind && in.twin_stale_offset_seconds) {
    return Finding{Cause::kUndetermined, evidence,
                   "without it, the device and memory cannot be told apart", true};
  }
  return std::nullopt;
}

// 4, off-CPU wait on a local target → device or device_busy (with delay accounting or the
// fallback), unless memory took part (rule 4) or the direct twin says otherwise (rules 5, 6).
std::optional<Finding> Device(const Facts& f) {
  if (f.top != Part::kOffCpuWait) return std::nullopt;
  const Finding device = f.blkio.known ? BlockIoWait(f) : OffCpuAsBlockIo(f);
  if (device.cause == Cause::kUndetermined) return device;
  if (auto veto = MemoryTookPart(f)) return veto;
  if (auto veto = DirectTwin(f, device.evidence)) return veto;
  return device;
}

// 4, kernel CPU, with delay accounting: reclaim and compaction delays, and the cgroup's memory
// stall, must be absent.
std::optional<Finding> KernelCpuMemoryWaits(const Facts& f) {
  if (f.top != Part::kKernelCpu || !f.memory_wait.known || !f.compaction.known) {
    return std::nullopt;
  }
  if (f.memory_wait.now + f.compaction.now >= kAbsent * f.added) {
    return NoCause(f, "reclaim and compaction waits took part but did not carry it");
  }
  // Reclaim in a memory cgroup (its limit, memory.high) stalls in PSI, not always in the
  // readers' reclaim delay.
  if (f.cgroup_memory.known && f.cgroup_memory.now >= kAbsent * f.added) {
    return NoCause(f, "the cgroup's memory stall took part but did not carry it");
  }
  return std::nullopt;
}

// 4, kernel CPU, without delay accounting: the direct reclaim and compaction stalls of
// /proc/vmstat name memory_reclaim or memory_compaction; none, and a small memory stall, rule
// memory out.
std::optional<Finding> KernelCpuStalls(const Facts& f) {
  if (f.top != Part::kKernelCpu || (f.memory_wait.known && f.compaction.known)) {
    return std::nullopt;
  }
  if (!std::isfinite(f.reclaim_stalls) || !std::isfinite(f.compaction_stalls)) {
    return NoCause(f,
                   "whether the readers reclaimed or compacted memory is unknown: delay "
                   "accounting off (set kernel.task_delayacct=1) and no allocstall or "
                   "compact_stall in /proc/vmstat");
  }
  const std::string off = "delay accounting off: counted from /proc/vmstat";
  if (f.reclaim_stalls > 0 && f.compaction_stalls > 0) {
    return NoCause(f,
                   "direct reclaim and compaction both stalled allocations during the run; "
                   "delay accounting off (set kernel.task_delayacct=1) cannot tell which");
  }
  if (f.reclaim_stalls > 0) return Named(Cause::kMemoryReclaim, f.part, off);
  if (f.compaction_stalls > 0) return Named(Cause::kMemoryCompaction, f.part, off);
  // Reclaim in a memory cgroup is not in allocstall: the memory stall must be small.
  Evidence stall = f.cgroup_memory;
  if (!stall.known) stall = f.u.Of(f.in, {DriftFeature::kPsiMemory}, "memory stall");
  if (!stall.known) {
    return NoCause(f,
                   "no memory stall figure to rule out reclaim in a memory cgroup; delay "
                   "accounting off: set kernel.task_delayacct=1");
  }
  if (stall.now >= kAbsent * f.added) {
    return NoCause(f, "memory stalled during the run (" + TimePerUnit(f, stall.now) +
                          "), maybe reclaim in a memory cgroup; delay accounting off: set "
                          "kernel.task_delayacct=1");
  }
  return std::nullopt;
}

// 4, kernel CPU with memory ruled out: on a buffered probe page_allocation, or
// hypervisor_reclaim when the guest reported free memory to the host during the step.
std::optional<Finding> PageAllocation(const Facts& f) {
  if (f.top != Part::kKernelCpu) return std::nullopt;
  if (f.in.kind != ProbeKind::kBuffered) {
    return NoCause(f, "no reclaim or compaction, and a " +
                          std::string(probes::ProbeKindName(f.in.kind)) +
                          " run allocates no page-cache pages: what the kernel did is unknown");
  }
  if (std::isfinite(f.reported) && f.reported > 0) {
    return Named(Cause::kHypervisorReclaim, f.part,
                 "pages allocated from memory the host took back must be faulted in again");
  }
  return Named(Cause::kPageAllocation, f.part,
               std::isfinite(f.reported) ? "" : "free page reporting not seen on this machine");
}

// The rules after the facts are gathered, in the order verdict.h documents; every case of the
// top part ends in one of them (Device and PageAllocation always find).
constexpr Rule kRules[] = {
    MemoryWaits,           // 3
    TopPartCarries,        // 4
    RunqueueWait,          // 4, run-queue wait
    CpuQuota,              // 4, off-CPU wait
    MemoryHigh,            //
    RemoteFilesystem,      //
    Device,                //    and 5, 6
    KernelCpuMemoryWaits,  // 4, kernel CPU
    KernelCpuStalls,       //
    PageAllocation,        //
};

}  // namespace

Verdict DecideVerdict(const VerdictInput& in) {
  if (auto why = NothingToCompare(in)) return Undetermined(*why);
  if (auto why = NoLastingSlowdown(in)) return Undetermined(*why);
  const std::optional<Facts> facts = Gather(in);
  if (!facts) {
    return Undetermined("the figure is at " + Percent(*in.figure / *in.baseline) +
                        " of baseline, but the time parts of the last run or of the baseline "
                        "runs are unknown");
  }
  for (Rule rule : kRules) {
    if (auto finding = rule(*facts)) return Format(*facts, *finding);
  }
  return Format(*facts, NoCause(*facts));  // not reached: the last rule of each part finds
}

}  // namespace iodrift::analysis
