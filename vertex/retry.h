#pragma once
// Exponential backoff with full jitter for retryable Google API answers (429, 5xx, timeouts).
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <random>

namespace vto::vertex {

struct RetryPolicy {
  int maxAttempts = 6;  // the first try included
  std::chrono::milliseconds initialBackoff{500};
  std::chrono::milliseconds maxBackoff{32000};
  double multiplier = 2.0;
};

class Backoff {
 public:
  explicit Backoff(RetryPolicy policy, std::uint32_t seed = std::random_device{}());
  // The pause before retry number `retry` (1 = the first retry): uniform in [ceiling/2, ceiling]
  // where the ceiling grows by `multiplier` per retry up to maxBackoff. A server's Retry-After is a
  // floor, so the client never comes back earlier than asked.
  std::chrono::milliseconds delay(int retry, std::optional<std::chrono::milliseconds> retryAfter = std::nullopt);
  const RetryPolicy& policy() const { return policy_; }

 private:
  RetryPolicy policy_;
  std::mutex mutex_;
  std::mt19937 random_;
};

}  // namespace vto::vertex
