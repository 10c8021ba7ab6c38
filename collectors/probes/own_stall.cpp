// OwnIoStall: see own_stall.h for the averaging it mirrors.
#include "collectors/probes/own_stall.h"

#include <algorithm>
#include <cmath>

namespace iodrift::probes {

namespace {
// 100 % / 2 s period * (1 - e^(-2 s / 10 s)): avg10 points per stalled second, just after it.
const double kPointsPerStallSecond = 100.0 / 2.0 * (1.0 - std::exp(-0.2));
constexpr double kAvg10Seconds = 10;
}  // namespace

void OwnIoStall::Record(double end_mono, double stall_seconds) {
  if (!(stall_seconds > 0)) return;
  std::lock_guard lock(mu_);
  runs_.emplace_back(end_mono, stall_seconds);
  ForgetOlderThanHorizon(end_mono);
}

void OwnIoStall::ForgetOlderThanHorizon(double now_mono) const {
  while (!runs_.empty() && runs_.front().first < now_mono - kHorizonSeconds) runs_.pop_front();
}

double OwnIoStall::Avg10Share(double now_mono) const {
  std::lock_guard lock(mu_);
  ForgetOlderThanHorizon(now_mono);
  double share = 0;
  for (const auto& [end, stall] : runs_) {
    const double age = std::max(0.0, now_mono - end);
    share += kPointsPerStallSecond * stall * std::exp(-age / kAvg10Seconds);
  }
  return share;
}

}  // namespace iodrift::probes
