// ResultStore: the last result of every probe plus running totals, shared by the scheduler
// (writer) and the exporter, `--once` and D-Bus (readers).
//
// Per probe it keeps the last ProbeResult (scheduled or on-demand), the number of runs per
// outcome (iodrift_probe_runs_total{result}), the cumulative bytes read
// (iodrift_probe_read_bytes_total) and an in-memory baseline: the median throughput of the
// first kBaselineRuns successful runs recorded since the store was made (the daemon starts at
// boot, so this is the post-boot baseline; it is not persisted across daemon restarts).
//
// Thread-safety: all methods are safe to call concurrently; readers get copies.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/probes/probe.h"

namespace iodrift::probes {

inline constexpr std::size_t kBaselineRuns = 3;

struct ProbeRecord {
  ProbeResult last;
  std::map<Outcome, std::uint64_t> runs;   // every Outcome present, 0 when never seen
  std::uint64_t read_bytes_total = 0;
  LatencyHistogram latency_total;          // cumulative over all runs (a histogram only grows)
  std::optional<double> baseline_bytes_per_second;
  std::vector<double> baseline_samples;    // until kBaselineRuns are in
};

class ResultStore {
 public:
  // Stores `result` as the last one of `result.name` and updates its totals. A result whose kind
  // or target differs from the stored one (the probe was redefined by a reload) starts a fresh
  // record: totals and baseline must never mix two different measurements.
  void Record(const ProbeResult& result);

  // The record of one probe; nullopt when it never ran.
  std::optional<ProbeRecord> Get(const std::string& name) const;

  // All records, ordered by probe name.
  std::vector<ProbeRecord> Snapshot() const;

  // Forgets every probe not in `names` (after a reload removed them).
  void Retain(const std::set<std::string>& names);

 private:
  mutable std::mutex mu_;
  std::map<std::string, ProbeRecord> records_;
};

}  // namespace iodrift::probes
