#include "reconcilers/checkpoint_schedule.h"

#include <algorithm>
#include <functional>

namespace vto::reconcilers {

CheckpointSchedule::CheckpointSchedule(Clock::duration interval, int listsPerMinute)
    : interval_(std::max<Clock::duration>(interval, std::chrono::seconds(1))),
      perSecond_(std::max(1, listsPerMinute) / 60.0),
      burst_(std::max(1.0, std::max(1, listsPerMinute) / 12.0)),  // five seconds' worth
      tokens_(burst_) {}

Clock::duration CheckpointSchedule::spread(const std::string& uid) const {
  auto slots = std::max<Clock::duration::rep>(1, interval_.count());
  return Clock::duration(static_cast<Clock::duration::rep>(std::hash<std::string>{}(uid) % static_cast<size_t>(slots)));
}

void CheckpointSchedule::refill(Clock::time_point now) {
  if (refilledAt_ == Clock::time_point{}) refilledAt_ = now;
  double elapsed = std::chrono::duration<double>(now - refilledAt_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * perSecond_);
    refilledAt_ = now;
  }
}

bool CheckpointSchedule::take(const std::string& uid, Clock::time_point now, Clock::time_point& next) {
  std::lock_guard lock(mutex_);
  auto [due, inserted] = due_.try_emplace(uid, now + spread(uid));
  if (now < due->second) {
    next = due->second;
    return false;
  }
  refill(now);
  if (tokens_ < 1) {
    // Out of budget: come back when a token is there, spread again so the waiting runs do not stampede.
    auto wait = std::chrono::duration<double>((1 - tokens_) / perSecond_);
    next = now + std::chrono::duration_cast<Clock::duration>(wait) + spread(uid);
    due->second = next;
    return false;
  }
  tokens_ -= 1;
  due->second = now + interval_;
  next = due->second;
  return true;
}

void CheckpointSchedule::listed(const std::string& uid, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  due_[uid] = now + interval_;
}

void CheckpointSchedule::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  due_.erase(uid);
}

}  // namespace vto::reconcilers
