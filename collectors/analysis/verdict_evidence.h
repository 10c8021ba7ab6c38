// The evidence the verdict's rules read (verdict.h), gathered once per decision from a
// VerdictInput, and the one formatter of the verdict's text. Internal to verdict_rules.cpp and
// verdict_evidence.cpp; nothing else includes it.
//
// Work unit: a GiB for throughput kinds, an operation for random and metadata (verdict.h). Every
// Evidence is put per unit of work, now and at baseline.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/analysis/verdict.h"

namespace iodrift::analysis::verdict_detail {

// One piece of evidence per unit of work (seconds per GiB or per op), now and at baseline.
struct Evidence {
  const char* label = "";
  bool known = false;
  double now = 0;
  double base = 0;
  double Added() const { return now - base; }
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
              const char* label) const;
  // Carried >= kShareOfAdded of the added time, grew >= kPartGrowth x, and >= kOutgrowRest x as
  // much as the rest of the time per unit (verdict_evidence.cpp says why, and what `queued`
  // changes).
  bool Carries(const Evidence& e, bool queued = false) const;
};

// One of the three parts of the sum the verdict compares (rule 4).
enum class Part { kKernelCpu, kOffCpuWait, kRunqueueWait };

// Everything the rules after rule 2 read, gathered once (Gather).
struct Facts {
  const VerdictInput& in;
  PerUnit u;
  double ratio = 0;  // figure / baseline
  double added = 0;  // time per unit the slowdown added
  bool throughput = false;
  // The part that added the most (rule 4) and its evidence.
  Part top = Part::kOffCpuWait;
  Evidence part{};
  // The kernel's reasons (overlapping the parts).
  Evidence memory_wait{};      // reclaim + thrashing + swap-in delay
  Evidence reclaim_rereads{};  // memory_wait with re-reads of evicted pages (rule 3)
  Evidence compaction{};
  Evidence blkio{};
  Evidence throttled{};
  Evidence cgroup_memory{};
  double others = 0;    // others' share of the device's bytes (NaN: unknown)
  bool queued = false;  // others >= kOthersBusy
  bool blkio_carries = false;
  double reclaim_stalls = 0;     // vmstat allocstall_* (NaN: unknown)
  double compaction_stalls = 0;  // vmstat compact_stall (NaN: unknown)
  double reported = 0;           // free memory reported to the host (NaN: unknown)
  // The figures every text carries, and what the twin said ("" when no twin).
  std::string figures{};
  std::string twin{};
};

// Gathers the facts; nullopt when fewer than two parts are known now and at baseline. Needs a
// figure and a baseline > 0.
std::optional<Facts> Gather(const VerdictInput& in);

// What a rule found: the cause it names (kUndetermined: it decides that none can be named), the
// evidence the text puts first, and a note.
struct Finding {
  Cause cause = Cause::kUndetermined;
  Evidence evidence;
  std::string note;
  bool wants_twin_run = false;
};

// The verdict's text, the one formatter for every rule after rule 2:
// "Verdict: <cause>: figure at 31 % of baseline, 2.1 s/GiB added, 88 % of it reclaim wait;
// <figures><twin> (<note>)".
Verdict Format(const Facts& f, const Finding& finding);
// "Verdict: undetermined: <why>" (rules 1 and 2, and a run that did not succeed).
Verdict Undetermined(const std::string& why);

std::string Percent(double ratio);
// A time per unit as the texts show it (s/GiB, or ms/op) with its unit.
std::string TimePerUnit(const Facts& f, double seconds_per_unit);
double At(const DriftFeatures& f, DriftFeature which);

}  // namespace iodrift::analysis::verdict_detail
