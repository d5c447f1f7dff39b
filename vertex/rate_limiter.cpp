#include "vertex/rate_limiter.h"

namespace vto::vertex {

void SlidingWindow::forget(Clock::time_point now) {
  while (!events_.empty() && events_.front() + window_ <= now) events_.pop_front();
}

bool SlidingWindow::tryRecord(Clock::time_point now, int limit) {
  forget(now);
  if (events_.size() >= static_cast<std::size_t>(limit)) return false;
  events_.push_back(now);
  return true;
}

Clock::duration SlidingWindow::waitFor(Clock::time_point now, int limit) {
  forget(now);
  if (events_.size() < static_cast<std::size_t>(limit)) return Clock::duration::zero();
  // One more fits once the limit-th most recent event has left the window.
  return events_[events_.size() - limit] + window_ - now;
}

std::size_t SlidingWindow::count(Clock::time_point now) {
  forget(now);
  return events_.size();
}

QuotaPacingError::QuotaPacingError(const std::string& key, std::chrono::milliseconds delay)
    : RetryableError("client-side quota for " + key + " is used up for now; retrying in " +
                         std::to_string(delay.count()) + " ms (raise --vertex-creates-per-minute or "
                         "--vertex-requests-per-minute if the project's Vertex quota allows more)",
                     delay) {}

QuotaPacer::QuotaPacer(const Clock& clock, std::chrono::milliseconds window) : clock_(clock), window_(window) {}

std::optional<std::chrono::milliseconds> QuotaPacer::tryAcquire(const std::string& key, int perWindow) {
  if (perWindow <= 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto& window = windows_.try_emplace(key, window_).first->second;
  auto now = clock_.now();
  if (window.tryRecord(now, perWindow)) return std::nullopt;
  return std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(window.waitFor(now, perWindow)));
}

std::optional<std::chrono::milliseconds> QuotaPacer::tryAcquireShared(const std::string& key, const std::string& group,
                                                                      int perWindow) {
  if (perWindow <= 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  auto wait = [](Clock::duration d) {
    return std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(d));
  };
  auto& groups = groups_[key];
  // Groups that neither asked nor hold anything for a whole window are forgotten: the map holds only
  // who shares the quota now.
  for (auto it = groups.begin(); it != groups.end();) {
    bool idle = it->second.lastAsked + window_ <= now && it->second.granted.count(now) == 0;
    it = it->first != group && idle ? groups.erase(it) : std::next(it);
  }
  auto& own = groups.try_emplace(group, GroupState{SlidingWindow(window_), now}).first->second;
  own.lastAsked = now;
  int share = std::max(1, perWindow / static_cast<int>(groups.size()));
  if (own.granted.count(now) >= static_cast<std::size_t>(share)) return wait(own.granted.waitFor(now, share));
  auto& total = windows_.try_emplace(key, window_).first->second;
  if (!total.tryRecord(now, perWindow)) return wait(total.waitFor(now, perWindow));
  own.granted.tryRecord(now, perWindow);
  return std::nullopt;
}

void QuotaPacer::acquireOrThrow(const std::string& key, int perWindow) {
  if (auto wait = tryAcquire(key, perWindow)) throw QuotaPacingError(key, *wait);
}

}  // namespace vto::vertex
