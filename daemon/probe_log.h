// ProbeLog: the log line of every probe run, loud only when a probe changes state.
//
// A probe's first failure and every change of outcome to a failure (ok -> error, error ->
// timeout, ...) log once at warning; the return to ok logs once at info with the number of failed
// runs in between; repeated failures and ordinary successes log at debug. So `journalctl -p
// warning` shows each breakage once, and the per-run detail is one --log-level away. The counts
// per outcome stay in the metrics (iodrift_probe_runs_total).
//
// Thread-safety: Record may be called from any thread (the scheduler's dispatcher calls it).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "collectors/probes/probe.h"

namespace iodrift::daemon {

class ProbeLog {
 public:
  void Record(const probes::ProbeResult& result);

 private:
  struct State {
    probes::Outcome outcome = probes::Outcome::kOk;
    std::uint64_t failed_runs = 0;  // consecutive runs that were not ok
  };
  std::mutex mu_;
  std::map<std::string, State> states_;  // by probe name; absent: no run yet
};

}  // namespace iodrift::daemon
