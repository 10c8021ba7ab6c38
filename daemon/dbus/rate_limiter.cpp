#include "daemon/dbus/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace iodrift::daemon::dbus {

std::string DescribeLimit(const RateLimit& limit) {
  auto number = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return std::string(text);
  };
  std::string out = number(limit.burst) + " at once, then ";
  if (limit.per_second <= 0) return out + "none";
  if (limit.per_second >= 1) return out + number(limit.per_second) + " a second";
  return out + "one every " + number(1 / limit.per_second) + " s";
}

RateLimiter::RateLimiter(RateLimiterOptions options) : options_(options) {
  global_.tokens = options_.global.burst;
  global_.updated = Clock::now();
}

void RateLimiter::Refill(Bucket& bucket, const RateLimit& limit, Clock::time_point now) {
  if (now > bucket.updated) {
    double seconds = std::chrono::duration<double>(now - bucket.updated).count();
    bucket.tokens = std::min(limit.burst, bucket.tokens + seconds * limit.per_second);
    bucket.updated = now;
  }
}

double RateLimiter::WaitSeconds(const Bucket& bucket, const RateLimit& limit) {
  if (bucket.tokens >= 1) return 0;
  if (limit.per_second <= 0) return 3600;
  return (1 - bucket.tokens) / limit.per_second;
}

void RateLimiter::Prune(Clock::time_point now) {
  // Buckets that refilled completely carry no state worth keeping.
  for (auto it = callers_.begin(); it != callers_.end();) {
    Refill(it->second, options_.per_caller, now);
    it = it->second.tokens >= options_.per_caller.burst ? callers_.erase(it) : std::next(it);
  }
}

std::chrono::milliseconds RateLimiter::Acquire(const std::string& caller, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = callers_.find(caller);
  if (it == callers_.end()) {
    if (callers_.size() >= options_.max_callers) Prune(now);
    it = callers_.emplace(caller, Bucket{options_.per_caller.burst, now}).first;
  }
  Bucket& mine = it->second;
  Refill(mine, options_.per_caller, now);
  Refill(global_, options_.global, now);
  double wait =
      std::max(WaitSeconds(mine, options_.per_caller), WaitSeconds(global_, options_.global));
  if (wait > 0) {
    return std::chrono::milliseconds(
        std::max<long long>(1, static_cast<long long>(std::ceil(wait * 1000))));
  }
  mine.tokens -= 1;
  global_.tokens -= 1;
  return std::chrono::milliseconds(0);
}

void RateLimiter::Charge(const std::string& caller, double runs, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = callers_.find(caller);
  if (it == callers_.end()) {
    if (callers_.size() >= options_.max_callers) Prune(now);
    it = callers_.emplace(caller, Bucket{options_.per_caller.burst, now}).first;
  }
  Refill(it->second, options_.per_caller, now);
  Refill(global_, options_.global, now);
  it->second.tokens -= runs;
  global_.tokens -= runs;
}

}  // namespace iodrift::daemon::dbus
