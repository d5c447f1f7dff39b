#pragma once
// How long a failed key waits before its next attempt: client-go's default controller rate limiter,
// the larger of a per-key exponential backoff and an overall token bucket.
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/clock.h"
#include "controller/object_key.h"

namespace vto::controller {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // The delay before `key` may be processed again; each call counts as one more failure.
  virtual Clock::duration when(const ObjectKey& key) = 0;
  // The key succeeded: its failure history is cleared.
  virtual void forget(const ObjectKey& key) = 0;
  virtual int numRequeues(const ObjectKey& key) = 0;
};

// base * 2^failures, capped at `max`.
class ExponentialFailureRateLimiter final : public RateLimiter {
 public:
  ExponentialFailureRateLimiter(Clock::duration base, Clock::duration max);
  Clock::duration when(const ObjectKey& key) override;
  void forget(const ObjectKey& key) override;
  int numRequeues(const ObjectKey& key) override;

 private:
  Clock::duration base_, max_;
  std::mutex mutex_;
  std::map<ObjectKey, int> failures_;
};

// A token bucket refilled at `perSecond` holding at most `burst`; a call when it is empty reserves
// a future token, so a storm of failures is spread out instead of dropped.
class TokenBucketRateLimiter final : public RateLimiter {
 public:
  TokenBucketRateLimiter(const Clock& clock, double perSecond, int burst);
  Clock::duration when(const ObjectKey& key) override;
  void forget(const ObjectKey&) override {}
  int numRequeues(const ObjectKey&) override { return 0; }

 private:
  const Clock& clock_;
  double perSecond_;
  double burst_;
  std::mutex mutex_;
  double tokens_;
  Clock::time_point last_;
};

// The longest delay of its parts.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  Clock::duration when(const ObjectKey& key) override;
  void forget(const ObjectKey& key) override;
  int numRequeues(const ObjectKey& key) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// controller-runtime's default: 5 ms doubling to 1000 s per key, and 10 per second (burst 100) overall.
std::unique_ptr<RateLimiter> defaultControllerRateLimiter(const Clock& clock);

}  // namespace vto::controller
