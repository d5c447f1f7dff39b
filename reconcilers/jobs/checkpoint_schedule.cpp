#include "reconcilers/jobs/checkpoint_schedule.h"

#include <algorithm>
#include <functional>

namespace vto::reconcilers {

CheckpointSchedule::CheckpointSchedule(Clock::duration interval, int listsPerMinute)
    : interval_(std::max<Clock::duration>(interval, std::chrono::seconds(1))),
      gap_(std::chrono::duration_cast<Clock::duration>(std::chrono::minutes(1)) / std::max(1, listsPerMinute)),
      burst_(std::chrono::seconds(5)) {}

Clock::duration CheckpointSchedule::spread(const std::string& uid) const {
  auto slots = std::max<Clock::duration::rep>(1, interval_.count());
  return Clock::duration(static_cast<Clock::duration::rep>(std::hash<std::string>{}(uid) % static_cast<size_t>(slots)));
}

bool CheckpointSchedule::take(const std::string& uid, Clock::time_point now, Clock::time_point& next) {
  std::lock_guard lock(mutex_);
  auto [due, inserted] = due_.try_emplace(uid, Due{now + spread(uid)});
  if (now < due->second.at) {
    next = due->second.at;
    return false;
  }
  if (!due->second.reserved) {
    // Due: the next free slot of the rate, or one of the last five seconds' unused ones.
    auto slot = std::max(nextSlot_, now - burst_);
    nextSlot_ = slot + gap_;
    if (slot > now) {
      due->second = Due{slot, true};
      next = slot;
      return false;
    }
  }
  due->second = Due{now + interval_};
  next = due->second.at;
  return true;
}

void CheckpointSchedule::listed(const std::string& uid, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  due_[uid] = Due{now + interval_};  // a reserved slot goes unused
}

void CheckpointSchedule::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  due_.erase(uid);
}

}  // namespace vto::reconcilers
