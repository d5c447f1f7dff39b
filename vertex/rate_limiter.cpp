#include "vertex/rate_limiter.h"

namespace vto::vertex {

void SlidingWindow::forget(Clock::time_point now) {
  while (!events_.empty() && events_.front() + window_ <= now) events_.pop_front();
}

Clock::time_point SlidingWindow::reserve(Clock::time_point now, int limit) {
  forget(now);
  auto slot = now;
  if (events_.size() >= static_cast<std::size_t>(limit)) {
    // Allowed once the limit-th most recent event has left the window.
    slot = std::max(now, events_[events_.size() - limit] + window_);
  }
  events_.push_back(slot);
  return slot;
}

bool SlidingWindow::tryRecord(Clock::time_point now, int limit) {
  forget(now);
  if (events_.size() >= static_cast<std::size_t>(limit)) return false;
  events_.push_back(now);
  return true;
}

RateLimiter::RateLimiter(const Clock& clock, Sleeper& sleeper, std::chrono::milliseconds window)
    : clock_(clock), sleeper_(sleeper), window_(window) {}

std::chrono::milliseconds RateLimiter::acquire(const std::string& key, int perWindow) {
  if (perWindow <= 0) return std::chrono::milliseconds(0);
  Clock::time_point slot;
  {
    // Reserve under the lock, wait outside it so that other keys are not held up.
    std::lock_guard lock(mutex_);
    slot = windows_.try_emplace(key, window_).first->second.reserve(clock_.now(), perWindow);
  }
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(slot - clock_.now());
  if (wait.count() <= 0) return std::chrono::milliseconds(0);
  sleeper_.sleepFor(wait);
  return wait;
}

}  // namespace vto::vertex
