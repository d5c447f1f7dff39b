#pragma once
// Per-minute quotas, the shape of Vertex's: at most N events in any sliding window. The client
// paces itself with RateLimiter (a burst is spread out instead of being answered with 429); the
// emulator enforces a quota with the same SlidingWindow (a burst beyond it is rejected).
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "vertex/sleeper.h"

namespace vto::vertex {

// The times of recent events; not thread-safe (owners lock).
class SlidingWindow {
 public:
  explicit SlidingWindow(std::chrono::milliseconds window) : window_(window) {}
  // The earliest time >= now at which one more event keeps at most `limit` in any window; the
  // event is recorded at that time.
  Clock::time_point reserve(Clock::time_point now, int limit);
  // Records an event at `now` if that keeps at most `limit` in the window; false otherwise.
  bool tryRecord(Clock::time_point now, int limit);

 private:
  void forget(Clock::time_point now);
  std::chrono::milliseconds window_;
  std::deque<Clock::time_point> events_;  // oldest first; reserved slots may lie in the future
};

class RateLimiter {
 public:
  RateLimiter(const Clock& clock, Sleeper& sleeper, std::chrono::milliseconds window = std::chrono::minutes(1));
  // Blocks (through the Sleeper) until one more request under `key` stays within `perWindow`
  // requests per window, then records it. perWindow <= 0 means unlimited. Returns the time waited.
  std::chrono::milliseconds acquire(const std::string& key, int perWindow);

 private:
  const Clock& clock_;
  Sleeper& sleeper_;
  std::chrono::milliseconds window_;
  std::mutex mutex_;
  std::map<std::string, SlidingWindow> windows_;
};

}  // namespace vto::vertex
