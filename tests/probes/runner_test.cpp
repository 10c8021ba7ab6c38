// RunProbe: every kind on one directory target, the common fields it fills, the thread's I/O
// priority during and after a run, cancellation.
#include "collectors/probes/runner.h"

#include <sys/syscall.h>

#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/probes/target.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

int CurrentIoprio() { return static_cast<int>(syscall(SYS_ioprio_get, 1, 0)); }

TEST(RunProbe, RunsEveryKindOnADirectoryAndFillsTheCommonFields) {
  TempDir dir;
  TempDir state;
  const auto env = testing::MakeEnv(state.path());
  for (auto kind :
       {probes::ProbeKind::kCached, probes::ProbeKind::kBuffered, probes::ProbeKind::kDirect,
        probes::ProbeKind::kRandom, probes::ProbeKind::kMetadata, probes::ProbeKind::kMemory}) {
    const std::string name(probes::ProbeKindName(kind));
    auto spec = testing::MakeSpec("p-" + name, kind,
                                  kind == probes::ProbeKind::kMemory ? "" : dir.str(), 8 << 20);
    spec.time_budget = std::chrono::milliseconds(50);
    const double before = WallSeconds();
    const ProbeResult r = RunProbe(spec, env);
    SCOPED_TRACE(name);
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.error;
    EXPECT_EQ(r.name, "p-" + name);
    EXPECT_EQ(r.kind, kind);
    EXPECT_EQ(r.target, spec.target);
    EXPECT_GE(r.start_time_seconds, before - 1);
    EXPECT_GT(r.duration_seconds, 0);
    EXPECT_GE(r.cpu_user_seconds, 0);
    EXPECT_GE(r.cpu_system_seconds, 0);
    if (kind == probes::ProbeKind::kCached || kind == probes::ProbeKind::kMemory) {
      EXPECT_GT(r.cpu_user_seconds + r.cpu_system_seconds, 0.02);  // ≥ 50 ms of copying
    }
    EXPECT_TRUE(r.context.count("MemFree"));
    EXPECT_TRUE(r.context.count("MemAvailable"));
    EXPECT_TRUE(r.uptime_seconds.has_value());
    EXPECT_FALSE(r.vmstat_delta.empty());
    if (kind != probes::ProbeKind::kMemory) {
      EXPECT_FALSE(r.target_info.fstype.empty());
    }
  }
  // Only what iodrift owns is in the directory.
  std::set<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) names.insert(e.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{std::string(kProbeFileName), std::string(kMetaDirName)}));
}

TEST(RunProbe, RunsAtBestEffortSevenAndRestoresThePriority) {
  const int before = CurrentIoprio();
  ASSERT_NE(before, (2 << 13) | 7) << "test thread already at best-effort 7";
  const pid_t tid = gettid();
  std::atomic<bool> done{false};
  std::atomic<int> seen{-1};
  std::thread watcher([&] {  // ioprio_get(IOPRIO_WHO_PROCESS, tid) reads another thread's value
    while (!done) {
      const int p = static_cast<int>(syscall(SYS_ioprio_get, 1, tid));
      if (p == ((2 << 13) | 7)) seen = p;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  auto spec = testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 16 << 20);
  spec.time_budget = std::chrono::milliseconds(200);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  done = true;
  watcher.join();
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(seen.load(), (2 << 13) | 7);  // best effort (class 2), level 7 during the run
  EXPECT_EQ(CurrentIoprio(), before);     // and restored after it
}

TEST(RunProbe, StopsAtTheNextCheckWhenCancelled) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteRandomFile(dir.path() / "f", 32 << 20));
  std::atomic<bool> cancel{true};
  ProbeEnv env = testing::MakeEnv("");
  env.cancel = &cancel;
  auto spec =
      testing::MakeSpec("b", probes::ProbeKind::kBuffered, (dir.path() / "f").string(), 32 << 20);
  spec.time_budget = std::chrono::seconds(10);
  const ProbeResult r = RunProbe(spec, env);
  EXPECT_EQ(r.outcome, Outcome::kSkipped);
  EXPECT_NE(r.error.find("cancelled"), std::string::npos) << r.error;
  EXPECT_LE(r.bytes, 1u << 20);  // one chunk, then the check
}

TEST(RunProbe, TimesOutAtTheSpecTimeoutBetweenCalls) {
  TempDir dir;
  auto spec = testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 16 << 20);
  spec.timeout = std::chrono::milliseconds(1);
  spec.time_budget = std::chrono::milliseconds(100);  // windows of 20 ms > the timeout
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  EXPECT_EQ(r.outcome, Outcome::kTimeout) << r.error;
  EXPECT_LT(r.duration_seconds, 1.0);
}

}  // namespace
}  // namespace iodrift::probes
