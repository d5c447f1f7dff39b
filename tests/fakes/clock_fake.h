#pragma once
// A simulated clock for unit tests: time stands still until advance() moves it, and moving it wakes
// every thread blocked in waitUntil() so that timers fire without real sleeping.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "base/clock.h"

namespace vto::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(time_point start = time_point(std::chrono::hours(24 * 365 * 50)))
      : now_(start) {}

  time_point now() const override {
    std::lock_guard guard(mutex_);
    return now_;
  }

  // Checking the time and registering happen under one lock, and the caller's own mutex is held
  // until cv.wait releases it; advance() notifies with that mutex held, so no wake-up is lost.
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 time_point deadline) const override {
    Waiter self{lock.mutex(), &cv};
    {
      std::lock_guard guard(mutex_);
      if (now_ >= deadline) return;
      waiters_.push_back(self);
    }
    cv.wait(lock);
    std::lock_guard guard(mutex_);
    auto found = std::find(waiters_.begin(), waiters_.end(), self);
    if (found != waiters_.end()) waiters_.erase(found);
  }

  // Moves time forward and wakes the waiters. Must not race with the destruction of an object
  // that is waiting on this clock (tests advance and destroy from the same thread).
  void advance(duration by) {
    std::vector<Waiter> toWake;
    {
      std::lock_guard guard(mutex_);
      now_ += by;
      toWake = waiters_;
    }
    for (const auto& waiter : toWake) {
      std::lock_guard guard(*waiter.mutex);
      waiter.cv->notify_all();
    }
  }

  // How many threads are blocked in waitUntil(): tests wait for this before advancing so that the
  // advance is not missed by a thread that has not started waiting yet.
  size_t waiterCount() const {
    std::lock_guard guard(mutex_);
    return waiters_.size();
  }

 private:
  struct Waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
    bool operator==(const Waiter&) const = default;
  };
  mutable std::mutex mutex_;
  time_point now_;
  mutable std::vector<Waiter> waiters_;
};

}  // namespace vto::testing
