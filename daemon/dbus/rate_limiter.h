// Token-bucket rate limits for on-demand probes (D-Bus RunProbe): one bucket per caller (the
// sender's unique bus name) and one global bucket, so neither one noisy client nor many clients
// together can turn iodrift into a load generator.
//
// A bucket holds up to `burst` tokens and gains `per_second` tokens a second. A call takes one
// token from its caller's bucket and one from the global bucket, or none when either is empty;
// then it is refused with the time until both would have a token.
//
// Thread-safety: all methods are safe to call concurrently. The clock is passed in, so tests
// drive time by hand.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace iodrift::daemon::dbus {

struct RateLimit {
  double burst = 1;       // bucket size (calls allowed at once)
  double per_second = 1;  // refill rate
};

struct RateLimiterOptions {
  RateLimit per_caller{3, 0.5};    // 3 at once, then one every 2 s per caller
  RateLimit global{10, 2};         // 10 at once, then two a second in all
  std::size_t max_callers = 1024;  // tracked callers; full (idle) buckets are forgotten beyond this
};

// "3 at once, then one every 2 s": a limit as its refusals name it.
std::string DescribeLimit(const RateLimit& limit);

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RateLimiter(RateLimiterOptions options = {});

  // Takes a token for `caller` at time `now`. Returns zero when the call may proceed, else how
  // long to wait until it would be allowed (at least 1 ms); nothing is taken then.
  std::chrono::milliseconds Acquire(const std::string& caller,
                                    Clock::time_point now = Clock::now());

  // Counts `runs` made on behalf of `caller` without refusing them (a recovery experiment's
  // runs, admitted once by Acquire): takes them from its bucket and the global one, which may go
  // below zero, so later calls wait until the debt has refilled.
  void Charge(const std::string& caller, double runs, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point updated;
  };
  static void Refill(Bucket& bucket, const RateLimit& limit, Clock::time_point now);
  static double WaitSeconds(const Bucket& bucket, const RateLimit& limit);
  void Prune(Clock::time_point now);

  RateLimiterOptions options_;
  std::mutex mu_;
  Bucket global_;
  std::map<std::string, Bucket> callers_;
};

}  // namespace iodrift::daemon::dbus
