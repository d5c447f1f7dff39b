#pragma once
// Per-minute quotas, the shape of Vertex's: at most N events in any sliding window. The client
// paces itself with QuotaPacer (a request beyond the quota is not sent; the caller is told when to
// come back, and the work queue requeues the run then); the emulator enforces a quota with the same
// SlidingWindow (a burst beyond it is rejected). This is not the work queue's per-key failure
// backoff (controller/rate_limiter.h): that one decides when a failed key is retried.
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/retryable_error.h"

namespace vto::vertex {

// The times of recent events; not thread-safe (owners lock).
class SlidingWindow {
 public:
  explicit SlidingWindow(std::chrono::milliseconds window) : window_(window) {}
  // Records an event at `now` if that keeps at most `limit` in the window; false otherwise.
  bool tryRecord(Clock::time_point now, int limit);
  // How long from `now` until one more event fits (zero when it fits now).
  Clock::duration waitFor(Clock::time_point now, int limit);
  // How many events are in the window at `now`.
  std::size_t count(Clock::time_point now);

 private:
  void forget(Clock::time_point now);
  std::chrono::milliseconds window_;
  std::deque<Clock::time_point> events_;  // oldest first
};

// The client's own quota said "not yet": retry after the delay it gives.
class QuotaPacingError : public RetryableError {
 public:
  QuotaPacingError(const std::string& key, std::chrono::milliseconds delay);
};

class QuotaPacer {
 public:
  explicit QuotaPacer(const Clock& clock, std::chrono::milliseconds window = std::chrono::minutes(1));
  // Records one request under `key` if it stays within `perWindow` per window (<= 0: unlimited);
  // otherwise records nothing and returns how long to wait. Never blocks.
  std::optional<std::chrono::milliseconds> tryAcquire(const std::string& key, int perWindow);
  // tryAcquire, throwing QuotaPacingError{retryAfter = the wait} when the quota is used up.
  void acquireOrThrow(const std::string& key, int perWindow);
  // tryAcquire for one of several groups (tenants) sharing `key`'s quota, fairly: while n groups
  // have made requests under `key` in the window (this one counted), a group may hold at most
  // perWindow / n of them (at least one); a group that asked in the window counts as sharing even
  // while it is refused. One group alone may use it all; a group that has used its
  // share waits while others still have room, so one group's burst (a failover loop) cannot take a
  // quota every group needs. "" is a group like any other.
  std::optional<std::chrono::milliseconds> tryAcquireShared(const std::string& key, const std::string& group,
                                                            int perWindow);

 private:
  const Clock& clock_;
  std::chrono::milliseconds window_;
  std::mutex mutex_;
  std::map<std::string, SlidingWindow> windows_;
  struct GroupState {
    SlidingWindow granted;
    Clock::time_point lastAsked;  // a group refused for now still shares: it waits for its part
  };
  std::map<std::string, std::map<std::string, GroupState>> groups_;  // by key, then group
};

}  // namespace vto::vertex
