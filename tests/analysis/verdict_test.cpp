// The verdict (collectors/analysis/verdict.h) on recorded time-part figures: each case is the
// parts of real runs (docs/reading-drift.md "Reading a slowdown" has the commands that produced
// them).
#include "collectors/analysis/verdict.h"

#include <cmath>

#include <gtest/gtest.h>

#include "collectors/analysis/explain.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

constexpr double kMiB = 1 << 20;

struct Shares {
  double kernel;
  double wait;
  double runqueue;
  double device_busy_per_gib;
};

DriftFeatures Features(const Shares& s) {
  DriftFeatures f = UnknownFeatures();
  f[static_cast<std::size_t>(DriftFeature::kKernelCpuRatio)] = s.kernel;
  f[static_cast<std::size_t>(DriftFeature::kWaitRatio)] = s.wait;
  f[static_cast<std::size_t>(DriftFeature::kRunqueueWaitRatio)] = s.runqueue;
  f[static_cast<std::size_t>(DriftFeature::kDeviceBusyPerGib)] = s.device_busy_per_gib;
  return f;
}

VerdictInput Input(ProbeKind kind, double figure, double baseline, const Shares& now,
                   const Shares& base) {
  VerdictInput in;
  in.kind = kind;
  in.figure = figure;
  in.baseline = baseline;
  in.now = Features(now);
  in.base = Features(base);
  return in;
}

TEST(Verdict, TimePartsBecomeDriftFeatures) {
  ProbeResult r;
  r.kind = ProbeKind::kBuffered;
  r.outcome = Outcome::kOk;
  r.bytes = 512ull << 20;
  TimeParts tp;
  tp.wall = 2;
  tp.kernel_cpu = 0.6;
  tp.runqueue_wait = 0.2;
  tp.device_busy = 0.4;
  tp.device_wait = 0.4;
  tp.other = 0.8;
  r.time_seconds = tp;
  DriftFeatures f = ExtractDriftFeatures(r);
  auto at = [&](DriftFeature which) { return f[static_cast<std::size_t>(which)]; };
  EXPECT_DOUBLE_EQ(at(DriftFeature::kKernelCpuPerGib), 1.2);
  EXPECT_DOUBLE_EQ(at(DriftFeature::kDeviceBusyPerGib), 0.8);
  EXPECT_DOUBLE_EQ(at(DriftFeature::kKernelCpuRatio), 0.3);
  EXPECT_DOUBLE_EQ(at(DriftFeature::kWaitRatio), 0.6);
  EXPECT_DOUBLE_EQ(at(DriftFeature::kRunqueueWaitRatio), 0.1);
  r.kind = ProbeKind::kRandom;  // not per GiB: no byte budget to divide by
  f = ExtractDriftFeatures(r);
  EXPECT_TRUE(std::isnan(at(DriftFeature::kKernelCpuPerGib)));
  EXPECT_DOUBLE_EQ(at(DriftFeature::kKernelCpuRatio), 0.3);
}

TEST(Verdict, CauseNamesAreTheContract) {
  EXPECT_EQ(CauseName(Cause::kDevice), "device");
  EXPECT_EQ(CauseName(Cause::kMemoryManagement), "memory_management");
  EXPECT_EQ(CauseName(Cause::kCpuContention), "cpu_contention");
  EXPECT_EQ(CauseName(Cause::kUndetermined), "undetermined");
}

// Issue 15's slow state: a buffered run spent 81 % of its wall time in kernel CPU (1.16 s/GiB)
// against 0.10 s/GiB in the fast state; 562 vs 819 MiB/s. The device was as busy per GiB.
TEST(Verdict, KernelCpuGrowthIsMemoryManagement) {
  // share = seconds per GiB x throughput / GiB: 1.16 s/GiB at 562 MiB/s = 0.64 of the wall.
  const Shares now{1.16 * 562 / 1024, 0.20 * 562 / 1024, 0.0, 0.21};
  const Shares base{0.10 * 819 / 1024, 0.20 * 819 / 1024, 0.0, 0.20};
  auto in = Input(ProbeKind::kBuffered, 562 * kMiB, 819 * kMiB, now, base);
  in.twin_kind = ProbeKind::kDirect;
  in.twin_ratio = 0.99;
  const Verdict v = DecideVerdict(in);
  EXPECT_EQ(v.cause, Cause::kMemoryManagement) << v.line;
  EXPECT_EQ(v.line.rfind("Verdict: memory_management: ", 0), 0u) << v.line;
  EXPECT_NE(v.line.find("kernel CPU 1.16 s/GiB now vs 0.1 at baseline"), std::string::npos)
      << v.line;
  EXPECT_NE(v.line.find("direct twin at 99 %"), std::string::npos) << v.line;
}

TEST(Verdict, OffCpuWaitGrowthWithDirectFallingIsTheDevice) {
  // Recorded: see ThrottledLoopDevice below for the raw figures.
  const Shares base{0.30, 0.62, 0.01, 0.55};
  const Shares now{0.05, 0.94, 0.0, 0.60};
  auto in = Input(ProbeKind::kBuffered, 60 * kMiB, 400 * kMiB, now, base);
  in.twin_kind = ProbeKind::kDirect;
  in.twin_ratio = 0.2;
  const Verdict v = DecideVerdict(in);
  EXPECT_EQ(v.cause, Cause::kDevice) << v.line;
  EXPECT_NE(v.line.find("direct twin at 20 %"), std::string::npos) << v.line;
}

TEST(Verdict, WaitGrowthButDirectUnchangedIsNotTheDevice) {
  const Shares base{0.30, 0.62, 0.01, 0.55};
  const Shares now{0.05, 0.94, 0.0, 0.60};
  auto in = Input(ProbeKind::kBuffered, 60 * kMiB, 400 * kMiB, now, base);
  in.twin_kind = ProbeKind::kDirect;
  in.twin_ratio = 0.97;
  const Verdict v = DecideVerdict(in);
  EXPECT_EQ(v.cause, Cause::kUndetermined) << v.line;
  EXPECT_NE(v.line.find("not the device"), std::string::npos) << v.line;
}

TEST(Verdict, RunQueueGrowthIsCpuContention) {
  const Shares base{0.40, 0.55, 0.02, 0.5};
  const Shares now{0.15, 0.20, 0.63, 0.5};
  const Verdict v = DecideVerdict(Input(ProbeKind::kRandom, 900, 2500, now, base));
  EXPECT_EQ(v.cause, Cause::kCpuContention) << v.line;
  EXPECT_NE(v.line.find("ms/op"), std::string::npos) << v.line;
}

TEST(Verdict, NoSlowdownNoBaselineNoPartsAreUndetermined) {
  const Shares s{0.3, 0.6, 0.0, 0.5};
  Verdict v = DecideVerdict(Input(ProbeKind::kDirect, 950, 1000, s, s));
  EXPECT_EQ(v.cause, Cause::kUndetermined);
  EXPECT_NE(v.line.find("no slowdown"), std::string::npos) << v.line;

  VerdictInput none = Input(ProbeKind::kDirect, 500, 1000, s, s);
  none.baseline.reset();
  v = DecideVerdict(none);
  EXPECT_EQ(v.line, "Verdict: undetermined: no baseline yet");

  VerdictInput old = Input(ProbeKind::kDirect, 500, 1000, s, s);
  old.base = UnknownFeatures();  // a baseline formed before time parts existed
  v = DecideVerdict(old);
  EXPECT_EQ(v.cause, Cause::kUndetermined);
  EXPECT_NE(v.line.find("unknown"), std::string::npos) << v.line;
}

// Slower, but the added time is spread over the parts: no single part carries half of it.
TEST(Verdict, SpreadSlowdownIsUndetermined) {
  const Shares base{0.30, 0.60, 0.10, 0.5};
  const Shares now{0.30, 0.60, 0.10, 0.5};  // same shares: every part grew alike
  const Verdict v = DecideVerdict(Input(ProbeKind::kBuffered, 500, 1000, now, base));
  EXPECT_EQ(v.cause, Cause::kUndetermined) << v.line;
}

// The whole path on probe states: the last run's time parts become features, the baseline
// features are the baseline parts, the direct twin is found by target, and explain opens with
// the verdict line.
TEST(Verdict, ExplainOpensWithTheVerdictOfTheStateAndItsTwin) {
  auto run = [](ProbeKind kind, double gib_per_s, double kernel_s_per_gib) {
    ProbeResult r;
    r.name = kind == ProbeKind::kBuffered ? "b" : "d";
    r.kind = kind;
    r.target = "/dev/loop7";
    r.outcome = Outcome::kOk;
    r.bytes = 1ull << 30;
    r.duration_seconds = 1 / gib_per_s;
    r.throughput_bytes_per_second = gib_per_s * (1ull << 30);
    TimeParts tp;
    tp.wall = r.duration_seconds;
    tp.kernel_cpu = kernel_s_per_gib;
    tp.user_cpu = 0.01;
    tp.runqueue_wait = 0.0;
    tp.device_busy = 0.2;
    tp.device_wait = 0.2;
    tp.other = tp.wall - tp.kernel_cpu - tp.user_cpu - 0.2;
    r.time_seconds = tp;
    return r;
  };
  auto state = [&](ProbeKind kind, const ProbeResult& base_run, const ProbeResult& last) {
    auto s = std::make_shared<ProbeState>();
    s->spec.name = last.name;
    s->spec.kind = kind;
    s->spec.target = last.target;
    s->runs[Outcome::kOk] = 6;
    s->last = last;
    s->baseline = *base_run.throughput_bytes_per_second;
    s->baseline_features = ExtractDriftFeatures(base_run);
    s->last_figure = DriftFigure(last);
    s->baseline_ratio = *s->last_figure / *s->baseline;
    return std::shared_ptr<const ProbeState>(s);
  };
  // Buffered: 2 GiB/s with 0.1 s/GiB kernel CPU at baseline, now 0.7 GiB/s with 1.16 s/GiB.
  auto buffered = state(ProbeKind::kBuffered, run(ProbeKind::kBuffered, 2.0, 0.10),
                        run(ProbeKind::kBuffered, 0.7, 1.16));
  auto direct = state(ProbeKind::kDirect, run(ProbeKind::kDirect, 1.0, 0.02),
                      run(ProbeKind::kDirect, 0.98, 0.02));
  const ProbeSnapshot all = {buffered, direct};
  ASSERT_EQ(FindTwin(all, *buffered), direct.get());
  ASSERT_EQ(FindTwin(all, *direct), buffered.get());
  const Verdict v = VerdictOf(*buffered, FindTwin(all, *buffered));
  EXPECT_EQ(v.cause, Cause::kMemoryManagement) << v.line;
  const std::string text = ExplainProbe(*buffered, buffered->window, direct.get());
  EXPECT_EQ(text.rfind(v.line + "\nprobe b (buffered, /dev/loop7)\n", 0), 0u) << text;
  EXPECT_NE(text.find("  time:      wall "), std::string::npos) << text;
  EXPECT_EQ(VerdictOf(*direct, buffered.get()).cause, Cause::kUndetermined);  // 98 %: no slowdown
}

// The twin rule (verdict.h): replay of a clean-clone CI failure. A buffered probe on a loop device
// throttled to 1 % of its baseline, all of the added time off-CPU wait; its direct twin's last run
// was from before the throttle (221 % of its baseline, 120 s earlier). That stale run must not
// clear the device; the verdict waits for a twin run from the same moment, which then decides.
class TwinRule : public ::testing::Test {
 protected:
  // kernel_share: of wall time; at 0.5 GiB/s 0.3 is 0.6 s/GiB, at 0.005 GiB/s 0.003 the same.
  static ProbeResult Run(const std::string& name, ProbeKind kind, double start, double gib_per_s,
                         double wait_share, double kernel_share = 0.003) {
    ProbeResult r;
    r.name = name;
    r.kind = kind;
    r.target = "/dev/loop7";
    r.outcome = Outcome::kOk;
    r.generation = 1;
    r.bytes = 64ull << 20;
    r.start_time_seconds = start;
    r.duration_seconds = static_cast<double>(r.bytes) / (gib_per_s * (1ull << 30));
    r.throughput_bytes_per_second = gib_per_s * (1ull << 30);
    TimeParts tp;
    tp.wall = r.duration_seconds;
    tp.kernel_cpu = kernel_share * tp.wall;
    tp.user_cpu = 0.01 * tp.wall;
    tp.runqueue_wait = 0.0;
    tp.device_wait = wait_share * tp.wall;
    tp.other = tp.wall - tp.kernel_cpu - tp.user_cpu - *tp.device_wait;
    r.time_seconds = tp;
    return r;
  }
  static std::shared_ptr<const ProbeState> State(const ProbeResult& base_run,
                                                 const ProbeResult& last,
                                                 std::uint64_t generation = 1) {
    auto s = std::make_shared<ProbeState>();
    s->spec.name = last.name;
    s->spec.kind = last.kind;
    s->spec.target = last.target;
    s->generation = generation;
    s->runs[Outcome::kOk] = 6;
    s->last = last;
    s->baseline = *base_run.throughput_bytes_per_second;
    s->baseline_features = ExtractDriftFeatures(base_run);
    s->last_figure = DriftFigure(last);
    s->baseline_ratio = *s->last_figure / *s->baseline;
    return s;
  }
  // Buffered at baseline 0.5 GiB/s (wait 40 % of wall), now 0.005 GiB/s (wait 99 %), run at
  // t = 1000 s for 12.5 s.
  const ProbeResult buffered_base_ = Run("b", ProbeKind::kBuffered, 0, 0.5, 0.40, 0.30);
  const ProbeResult buffered_slow_ = Run("b", ProbeKind::kBuffered, 1000, 0.005, 0.99);
  const ProbeResult direct_base_ = Run("d", ProbeKind::kDirect, 0, 0.4, 0.90, 0.05);
};

TEST_F(TwinRule, StaleTwinFromBeforeTheThrottleIsNotEvidence) {
  auto buffered = State(buffered_base_, buffered_slow_);
  auto direct = State(direct_base_, Run("d", ProbeKind::kDirect, 880, 0.884, 0.90));  // 221 %
  const ProbeSnapshot all = {buffered, direct};
  ASSERT_EQ(FindTwin(all, *buffered), direct.get());
  const Verdict v = VerdictOf(*buffered, direct.get());
  EXPECT_EQ(v.cause, Cause::kUndetermined) << v.line;
  EXPECT_TRUE(v.wants_twin_run) << v.line;
  EXPECT_EQ(v.line.find("not the device"), std::string::npos) << v.line;  // the old answer
  EXPECT_NE(v.line.find("direct twin has no run from the same moment (its last run started "
                        "120 s before this run started)"),
            std::string::npos)
      << v.line;
  EXPECT_EQ(TwinToRunNow(all, *buffered), direct.get());
}

TEST_F(TwinRule, ATwinRunThatCloselyFollowsDecides) {
  auto buffered = State(buffered_base_, buffered_slow_);
  const double end = buffered_slow_.start_time_seconds + buffered_slow_.duration_seconds;
  // The follow-up run, throttled as well (2 % of its baseline): the device.
  auto slow_twin = State(direct_base_, Run("d", ProbeKind::kDirect, end + 0.01, 0.008, 0.99));
  Verdict v = VerdictOf(*buffered, slow_twin.get());
  EXPECT_EQ(v.cause, Cause::kDevice) << v.line;
  EXPECT_FALSE(v.wants_twin_run);
  EXPECT_NE(v.line.find("direct twin at 2 %"), std::string::npos) << v.line;
  const ProbeSnapshot all = {buffered, slow_twin};
  EXPECT_EQ(TwinToRunNow(all, *buffered), nullptr);
  // The same follow-up run unchanged (direct fine): not the device, as before the twin rule.
  auto fine_twin = State(direct_base_, Run("d", ProbeKind::kDirect, end + 0.01, 0.39, 0.90));
  v = VerdictOf(*buffered, fine_twin.get());
  EXPECT_EQ(v.cause, Cause::kUndetermined) << v.line;
  EXPECT_NE(v.line.find("not the device"), std::string::npos) << v.line;
}

TEST_F(TwinRule, WindowAndGeneration) {
  const double end = buffered_slow_.start_time_seconds + buffered_slow_.duration_seconds;
  auto twin_at = [&](double start) { return Run("d", ProbeKind::kDirect, start, 0.008, 0.99); };
  EXPECT_TRUE(Contemporaneous(buffered_slow_, twin_at(buffered_slow_.start_time_seconds)));
  EXPECT_TRUE(Contemporaneous(buffered_slow_, twin_at(end + kTwinWindowSeconds - 0.5)));
  EXPECT_FALSE(Contemporaneous(buffered_slow_, twin_at(end + kTwinWindowSeconds + 0.5)));
  EXPECT_FALSE(Contemporaneous(buffered_slow_, twin_at(buffered_slow_.start_time_seconds - 1)));
  // A run closely following, but made under the twin's previous definition (a reload changed
  // it since): not evidence either.
  auto buffered = State(buffered_base_, buffered_slow_);
  auto redefined = State(direct_base_, twin_at(end + 0.01), /*generation=*/2);
  const Verdict v = VerdictOf(*buffered, redefined.get());
  EXPECT_EQ(v.cause, Cause::kUndetermined) << v.line;
  EXPECT_TRUE(v.wants_twin_run);
  // No twin configured at all: the decision does not depend on one.
  EXPECT_EQ(VerdictOf(*buffered, nullptr).cause, Cause::kDevice);
}

}  // namespace
}  // namespace iodrift::probes
