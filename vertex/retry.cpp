#include "vertex/retry.h"

#include <algorithm>
#include <cmath>

namespace vto::vertex {

Backoff::Backoff(RetryPolicy policy, std::uint32_t seed) : policy_(policy), random_(seed) {}

std::chrono::milliseconds Backoff::delay(int retry, std::optional<std::chrono::milliseconds> retryAfter) {
  double ceiling = static_cast<double>(policy_.initialBackoff.count()) *
                   std::pow(policy_.multiplier, std::max(0, retry - 1));
  ceiling = std::min(ceiling, static_cast<double>(policy_.maxBackoff.count()));
  double jittered;
  {
    std::lock_guard lock(mutex_);
    jittered = std::uniform_real_distribution<double>(ceiling / 2, ceiling)(random_);
  }
  auto pause = std::chrono::milliseconds(static_cast<long long>(jittered));
  if (retryAfter && *retryAfter > pause) pause = *retryAfter;
  return pause;
}

}  // namespace vto::vertex
