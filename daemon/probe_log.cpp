#include "daemon/probe_log.h"

#include <spdlog/spdlog.h>

namespace iodrift::daemon {

void ProbeLog::Record(const probes::ProbeResult& r) {
  const std::string_view kind = probes::ProbeKindName(r.kind);
  std::optional<State> before;
  State now;
  {
    std::lock_guard lock(mu_);
    auto it = states_.find(r.name);
    if (it != states_.end()) before = it->second;
    now.outcome = r.outcome;
    now.failed_runs = r.success() ? 0 : (before ? before->failed_runs : 0) + 1;
    states_[r.name] = now;
  }
  if (r.success()) {
    if (before && before->outcome != probes::Outcome::kOk) {
      spdlog::info("probe={} kind={} result=ok duration={:.3f}s: recovered after {} failed runs",
                   r.name, kind, r.duration_seconds, before->failed_runs);
    } else {
      spdlog::debug("probe={} kind={} result=ok duration={:.3f}s", r.name, kind,
                    r.duration_seconds);
    }
    return;
  }
  const char* outcome = probes::OutcomeName(r.outcome);
  if (!before || before->outcome != r.outcome) {
    spdlog::warn("probe={} kind={} result={} error=\"{}\" (logged once; repeats at debug)", r.name,
                 kind, outcome, r.error);
  } else {
    spdlog::debug("probe={} kind={} result={} error=\"{}\" failed_runs={}", r.name, kind, outcome,
                  r.error, now.failed_runs);
  }
}

}  // namespace iodrift::daemon
