#include "collectors/analysis/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collectors/probes/kinds.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

constexpr double kGiB = 1ull << 30;

struct Part {
  Cause cause;
  DriftFeature feature;
  const char* label;
};
constexpr Part kParts[] = {
    {Cause::kMemoryManagement, DriftFeature::kKernelCpuRatio, "kernel CPU"},
    {Cause::kDevice, DriftFeature::kWaitRatio, "off-CPU wait"},
    {Cause::kCpuContention, DriftFeature::kRunqueueWaitRatio, "run-queue wait"},
};

double At(const DriftFeatures& f, DriftFeature which) { return f[static_cast<std::size_t>(which)]; }

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
    case Cause::kMemoryManagement:
      return "memory_management";
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
  static const std::vector<Cause> all = {Cause::kDevice,           Cause::kDeviceBusy,
                                         Cause::kMemoryReclaim,    Cause::kMemoryCompaction,
                                         Cause::kPageAllocation,   Cause::kHypervisorReclaim,
                                         Cause::kMemoryManagement, Cause::kCpuContention,
                                         Cause::kRemoteFilesystem, Cause::kUndetermined};
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
  const bool throughput = IsThroughputKind(in.kind);
  // Seconds per unit from a share of wall time; shown in s/GiB or ms/op.
  const double scale = throughput ? kGiB : 1.0;
  const char* unit = throughput ? "s/GiB" : "ms/op";
  const double show = throughput ? 1.0 : 1e3;
  auto fmt = [&](double seconds_per_unit) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", seconds_per_unit * show);
    return std::string(buf);
  };
  const double added = scale * (1 / *in.figure - 1 / *in.baseline);
  struct Moved {
    const Part* part;
    double now;
    double base;
  };
  std::vector<Moved> moved;
  for (const Part& p : kParts) {
    const double now_share = At(in.now, p.feature);
    const double base_share = At(in.base, p.feature);
    if (!std::isfinite(now_share) || !std::isfinite(base_share)) continue;
    moved.push_back({&p, scale * now_share / *in.figure, scale * base_share / *in.baseline});
  }
  if (moved.size() < 2) {
    return undetermined("the figure is at " + Percent(ratio) +
                        " of baseline, but the time parts of the last run or of the baseline "
                        "runs are unknown");
  }
  const Moved* top = &moved[0];
  for (const auto& m : moved) {
    if (m.now - m.base > top->now - top->base) top = &m;
  }
  std::string figures;
  for (const auto& m : moved) {
    if (!figures.empty()) figures += "; ";
    figures += std::string(m.part->label) + " " + fmt(m.now) + " " + unit + " now vs " +
               fmt(m.base) + " at baseline";
  }
  const double dev_now = At(in.now, DriftFeature::kDeviceBusyPerGib);
  const double dev_base = At(in.base, DriftFeature::kDeviceBusyPerGib);
  if (throughput && std::isfinite(dev_now) && std::isfinite(dev_base)) {
    figures += "; device busy " + fmt(dev_now) + " vs " + fmt(dev_base) + " s/GiB";
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
  const double share = added > 0 ? (top->now - top->base) / added : 0;
  const std::string head = "figure at " + Percent(ratio) + " of baseline, " + fmt(added) + " " +
                           unit + " added, " + Percent(std::max(0.0, share)) + " of it " +
                           top->part->label + "; ";
  // The part must have grown, and faster than the rest of the time per unit: when every part
  // grows alike (a proportional slowdown) the biggest part carries most of the added time without
  // being its cause.
  const double rest_now = scale / *in.figure - top->now;
  const double rest_base = scale / *in.baseline - top->base;
  const double rest_growth = rest_base > 0 && rest_now > 0 ? rest_now / rest_base : 1.0;
  const bool grew = top->now >= kPartGrowth * top->base && top->now > top->base &&
                    (top->base <= 0 || top->now / top->base >= kOutgrowRest * rest_growth);
  if (share < kShareOfAdded || !grew) return undetermined(head + figures + twin);
  if (top->part->cause == Cause::kDevice && in.kind == ProbeKind::kBuffered && in.twin_ratio &&
      *in.twin_ratio >= kSlowdownRatio) {
    return undetermined(head + figures + twin + " (direct reads did not slow: not the device)");
  }
  if (top->part->cause == Cause::kDevice && in.kind == ProbeKind::kBuffered && in.twin_kind &&
      in.twin_stale_offset_seconds) {
    Verdict v = undetermined(head + figures + twin +
                             " (without it, device and memory management cannot be told apart)");
    v.wants_twin_run = true;
    return v;
  }
  return Verdict{top->part->cause, Verdictline(top->part->cause, head + figures + twin)};
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
  }
  in.base = state.baseline_features;
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
