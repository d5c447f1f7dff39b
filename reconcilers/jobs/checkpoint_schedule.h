#pragma once
// When a running run may look for its newest checkpoint, so that GCS lists do not grow with the
// fleet: each run at most once per --checkpoint-poll-interval (its first look spread over one
// interval by its uid, so a thousand runs started together do not list together), and the whole
// operator at most --checkpoint-lists-per-minute. When more runs are due than that rate allows, each
// due run reserves the next free slot of the rate and is told to come back then, when its look is
// granted: a run wakes once per look, never to be refused again (retrying a refused token cost a
// reconcile per refusal, most of the steady state's CPU). A look forced by a state change
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
  struct Due {
    Clock::time_point at;
    bool reserved = false;  // `at` is a slot of the rate: the look is granted then
  };
  Clock::duration spread(const std::string& uid) const;

  const Clock::duration interval_;
  const Clock::duration gap_;    // between two slots of the rate
  const Clock::duration burst_;  // how far behind `now` a free slot may be (five seconds' worth)
  std::mutex mutex_;
  Clock::time_point nextSlot_{};
  std::map<std::string, Due> due_;  // by run uid
};

}  // namespace vto::reconcilers
