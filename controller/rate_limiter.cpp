#include "controller/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace vto::controller {

using std::chrono::duration_cast;

ExponentialFailureRateLimiter::ExponentialFailureRateLimiter(Clock::duration base,
                                                             Clock::duration max)
    : base_(base), max_(max) {}

Clock::duration ExponentialFailureRateLimiter::when(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  int exponent = failures_[key]++;
  // Computed in floating point so that a long failure history cannot overflow the duration.
  double delay = std::chrono::duration<double>(base_).count() * std::pow(2.0, exponent);
  if (delay >= std::chrono::duration<double>(max_).count()) return max_;
  return duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
}

void ExponentialFailureRateLimiter::forget(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  failures_.erase(key);
}

int ExponentialFailureRateLimiter::numRequeues(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  auto found = failures_.find(key);
  return found == failures_.end() ? 0 : found->second;
}

TokenBucketRateLimiter::TokenBucketRateLimiter(const Clock& clock, double perSecond, int burst)
    : clock_(clock), perSecond_(perSecond), burst_(burst), tokens_(burst), last_(clock.now()) {}

Clock::duration TokenBucketRateLimiter::when(const ObjectKey&) {
  std::lock_guard guard(mutex_);
  auto now = clock_.now();
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * perSecond_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return Clock::duration::zero();
  return duration_cast<Clock::duration>(std::chrono::duration<double>(-tokens_ / perSecond_));
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

Clock::duration MaxOfRateLimiter::when(const ObjectKey& key) {
  Clock::duration longest = Clock::duration::zero();
  for (auto& limiter : limiters_) longest = std::max(longest, limiter->when(key));
  return longest;
}

void MaxOfRateLimiter::forget(const ObjectKey& key) {
  for (auto& limiter : limiters_) limiter->forget(key);
}

int MaxOfRateLimiter::numRequeues(const ObjectKey& key) {
  int most = 0;
  for (auto& limiter : limiters_) most = std::max(most, limiter->numRequeues(key));
  return most;
}

std::unique_ptr<RateLimiter> defaultControllerRateLimiter(const Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> parts;
  parts.push_back(std::make_unique<ExponentialFailureRateLimiter>(std::chrono::milliseconds(5),
                                                                  std::chrono::seconds(1000)));
  parts.push_back(std::make_unique<TokenBucketRateLimiter>(clock, 10.0, 100));
  return std::make_unique<MaxOfRateLimiter>(std::move(parts));
}

}  // namespace vto::controller
