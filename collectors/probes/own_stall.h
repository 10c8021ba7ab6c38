// The I/O stall iodriftd's own probe runs cause, as a share of PSI io "some" avg10.
//
// A buffered or direct read waits for the device, so every probe run adds to /proc/pressure/io
// itself. The io_pressure suspect rule (context.h) asks whether *someone else* was waiting for
// I/O before a run started; without this, probes a few seconds apart (or several probes on one
// disk) mark each other suspect and no baseline ever forms (seen at 1 s intervals: every run
// suspect). The runner records each run's io_some stall here and subtracts the estimate from
// avg10 before applying the rule.
//
// The estimate follows the kernel's averaging (kernel/sched/psi.c): every 2 s,
// avg10 = avg10 * e^(-2/10) + pct * (1 - e^(-2/10)), pct being the stalled share of that period
// in percent. A stall of s seconds that ended t seconds ago therefore still contributes about
// 100 * s / 2 * (1 - e^(-0.2)) * e^(-t/10) ≈ 9.06 * s * e^(-t/10) percentage points. Runs older
// than a minute (≤ 0.25 % of their weight left) are dropped. Overlapping runs on two probe
// threads count their shared stall twice, which errs towards not flagging.
//
// Thread-safety: all members may be called from any thread.
#pragma once

#include <deque>
#include <mutex>
#include <utility>

namespace iodrift::probes {

class OwnIoStall {
 public:
  // A run that ended at `end_mono` (CLOCK_MONOTONIC seconds) stalled on I/O for `stall_seconds`
  // (its PSI io "some" delta). Non-positive stalls are ignored.
  void Record(double end_mono, double stall_seconds);

  // Percentage points of PSI io "some" avg10 that the recorded runs account for at `now_mono`.
  double Avg10Share(double now_mono) const;

  // The io_pressure rule: avg10 minus the own share, against `threshold` (percent).
  static bool Exceeds(double avg10, double own_share, double threshold) {
    return avg10 - own_share > threshold;
  }

 private:
  static constexpr double kHorizonSeconds = 60;
  // Drops runs that ended more than kHorizonSeconds before `now_mono`. Caller holds mu_.
  void ForgetOlderThanHorizon(double now_mono) const;
  mutable std::mutex mu_;
  mutable std::deque<std::pair<double, double>> runs_;  // (end_mono, stall_seconds), oldest first
};

}  // namespace iodrift::probes
