#pragma once
// Time comes from a Clock so tests can move it instead of sleeping. Only RealClock reads the wall
// clock; everything else receives a Clock& through its constructor.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace vto {

class Clock {
 public:
  using time_point = std::chrono::system_clock::time_point;
  using duration = std::chrono::system_clock::duration;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;

  // Blocks on `cv` (with `lock` held on entry and on return) until it is notified or this clock
  // reaches `deadline`; like cv.wait_until, it may also return spuriously, so callers re-check
  // their condition. A simulated clock wakes these waiters when it is advanced. The default waits
  // in real time, which is right for any clock that follows the wall clock.
  virtual void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         time_point deadline) const {
    cv.wait_until(lock, deadline);
  }
};

class RealClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace vto
