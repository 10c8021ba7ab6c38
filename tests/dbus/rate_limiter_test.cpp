#include "daemon/dbus/rate_limiter.h"

#include <gtest/gtest.h>

#include "daemon/dbus/result_dict.h"

namespace iodrift::daemon::dbus {
namespace {

using std::chrono::milliseconds;
using Clock = RateLimiter::Clock;

TEST(RateLimiter, AllowsTheBurstThenAsksToWait) {
  RateLimiter limiter({{2, 1}, {100, 100}, 16});
  auto t = Clock::now();
  EXPECT_EQ(limiter.Acquire("a", t).count(), 0);
  EXPECT_EQ(limiter.Acquire("a", t).count(), 0);
  auto wait = limiter.Acquire("a", t);
  EXPECT_GE(wait.count(), 999);
  EXPECT_LE(wait.count(), 1000);
  EXPECT_EQ(limiter.Acquire("a", t + milliseconds(1000)).count(), 0);
}

TEST(RateLimiter, CallersHaveTheirOwnBucketsButShareTheGlobalOne) {
  RateLimiter limiter({{1, 1}, {2, 0.5}, 16});
  auto t = Clock::now() + milliseconds(10);
  EXPECT_EQ(limiter.Acquire("a", t).count(), 0);
  EXPECT_GT(limiter.Acquire("a", t).count(), 0);  // a's bucket is empty
  EXPECT_EQ(limiter.Acquire("b", t).count(), 0);  // b has its own
  auto wait = limiter.Acquire("c", t);            // the global bucket is empty
  EXPECT_GE(wait.count(), 1999);
  EXPECT_EQ(limiter.Acquire("c", t + milliseconds(2000)).count(), 0);
}

TEST(RateLimiter, RefusedCallsTakeNoToken) {
  RateLimiter limiter({{1, 1}, {1, 1}, 16});
  auto t = Clock::now() + milliseconds(10);
  EXPECT_EQ(limiter.Acquire("a", t).count(), 0);
  for (int i = 0; i < 1000; ++i) EXPECT_GT(limiter.Acquire("a", t).count(), 0);
  EXPECT_EQ(limiter.Acquire("a", t + milliseconds(1000)).count(), 0);
}

// An experiment's runs are charged (never refused): its caller and everyone else then wait for
// the debt to refill before the next RunProbe or DiagnoseBegin.
TEST(RateLimiter, ChargedRunsAreDebtThatLaterCallsWaitFor) {
  RateLimiter limiter({{3, 0.5}, {10, 2}, 16});
  auto t = Clock::now() + milliseconds(10);
  EXPECT_EQ(limiter.Acquire("a", t).count(), 0);  // DiagnoseBegin: a 2, global 9
  limiter.Charge("a", 15, t);                     // its runs: a -13, global -6
  auto mine = limiter.Acquire("a", t);
  EXPECT_GE(mine.count(), 27999);  // (1 - -13) / 0.5 s
  auto others = limiter.Acquire("b", t);
  EXPECT_GE(others.count(), 3499);  // (1 - -6) / 2 s
  EXPECT_EQ(limiter.Acquire("b", t + milliseconds(3500)).count(), 0);
}

TEST(RateLimiter, ForgetsIdleCallersBeyondTheLimit) {
  RateLimiter limiter({{1, 10}, {1e9, 1e9}, 4});
  auto t = Clock::now() + milliseconds(10);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(limiter.Acquire("c" + std::to_string(i), t + milliseconds(200 * i)).count(), 0);
  }
}

TEST(DescribeLimit, NamesBurstAndRefillAsARefusalShowsThem) {
  EXPECT_EQ(DescribeLimit({3, 0.2}), "3 at once, then one every 5 s");
  EXPECT_EQ(DescribeLimit({10, 2}), "10 at once, then 2 a second");
  EXPECT_EQ(DescribeLimit({3, 0.5}), "3 at once, then one every 2 s");
  EXPECT_EQ(DescribeLimit({1, 0}), "1 at once, then none");
}

TEST(ResultDict, RoundTripsAProbeResult) {
  probes::ProbeResult r;
  r.name = "rnd";
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/srv";
  r.outcome = probes::Outcome::kTimeout;
  r.error = "timed out";
  r.duration_seconds = 1.5;
  r.bytes = 4096;
  r.ops_per_second = {{"read", 250}};
  r.latency = probes::LatencyHistogram{};
  r.latency->p50_seconds = 0.001;
  r.latency->count = 64;
  r.cpu_user_seconds = 0.25;
  r.suspect = {"low_free_memory"};
  r.context = {{"MemFree", 1 << 20}};
  r.vmstat_delta = {{"pgpgin", -3}};
  r.target_info.fstype = "ext4";
  Dict d = ToDict(r);
  EXPECT_EQ(d.count("throughput_bytes_per_second"), 0u);  // null: left out
  probes::ProbeResult back = FromDict(d);
  EXPECT_EQ(back.name, "rnd");
  EXPECT_EQ(back.kind, probes::ProbeKind::kRandom);
  EXPECT_EQ(back.outcome, probes::Outcome::kTimeout);
  EXPECT_EQ(back.error, "timed out");
  EXPECT_EQ(back.bytes, 4096u);
  EXPECT_FALSE(back.throughput_bytes_per_second);
  EXPECT_EQ(back.ops_per_second, r.ops_per_second);
  ASSERT_TRUE(back.latency);
  EXPECT_EQ(back.latency->p50_seconds, 0.001);
  EXPECT_FALSE(back.latency->p99_seconds);
  EXPECT_EQ(back.latency->count, 64u);
  EXPECT_EQ(back.cpu_user_seconds, 0.25);
  EXPECT_EQ(back.suspect, r.suspect);
  EXPECT_EQ(back.context, r.context);
  EXPECT_EQ(back.vmstat_delta, r.vmstat_delta);
  EXPECT_EQ(back.target_info.fstype, "ext4");
}

TEST(ResultDict, IgnoresKeysOfTheWrongType) {
  Dict d;
  d["name"] = sdbus::Variant(std::uint64_t{7});
  d["bytes"] = sdbus::Variant(std::string("many"));
  probes::ProbeResult r = FromDict(d);
  EXPECT_EQ(r.name, "");
  EXPECT_EQ(r.bytes, 0u);
}

}  // namespace
}  // namespace iodrift::daemon::dbus
