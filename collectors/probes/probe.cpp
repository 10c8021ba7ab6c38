#include "collectors/probes/probe.h"

namespace iodrift::probes {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kError:
      return "error";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kSkipped:
      return "skipped";
  }
  return "error";
}

const std::vector<double>& LatencyBucketBounds() {
  static const std::vector<double> kBounds = {
      10e-6,  25e-6,  50e-6,  100e-6, 250e-6, 500e-6,  // µs: stat ~2 µs, NVMe/virtio 4k ~60–100 µs
      1e-3,   2.5e-3, 5e-3,   10e-3,  25e-3,  50e-3,         // ms: loop p99, HDD seeks
      100e-3, 250e-3, 500e-3, 1.0,    2.5,    5.0,    10.0,  // stalls
  };
  return kBounds;
}

}  // namespace iodrift::probes
