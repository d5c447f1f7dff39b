#pragma once
// When a running run may look for its newest checkpoint, so that GCS lists do not grow with the
// fleet: each run at most once per --checkpoint-poll-interval (its first look spread over one
// interval by its uid, so a thousand runs started together do not list together), and the whole
// operator at most --checkpoint-lists-per-minute (a token bucket). A look forced by a state change
// (a job that ended, a resume) is recorded too, so the pass that its own status write triggers does
// not list again.
#include <map>
#include <mutex>
#include <string>

#include "base/clock.h"

namespace vto::reconcilers {

class CheckpointSchedule {
 public:
  CheckpointSchedule(Clock::duration interval, int listsPerMinute);

  // True when run `uid` may list now (and the look is counted); else false and `next` is when to ask again.
  bool take(const std::string& uid, Clock::time_point now, Clock::time_point& next);
  // A look made outside take() (forced by a state change).
  void listed(const std::string& uid, Clock::time_point now);
  // The run finished or is gone.
  void forget(const std::string& uid);

  Clock::duration interval() const { return interval_; }

 private:
  Clock::duration spread(const std::string& uid) const;
  void refill(Clock::time_point now);

  const Clock::duration interval_;
  const double perSecond_;
  const double burst_;
  std::mutex mutex_;
  double tokens_;
  Clock::time_point refilledAt_{};
  std::map<std::string, Clock::time_point> due_;  // by run uid
};

}  // namespace vto::reconcilers
