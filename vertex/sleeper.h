#pragma once
// Waiting for a duration (backoff, pacing) behind an interface: unit tests record the waits and
// advance their fake clock instead of sleeping.
#include <chrono>
#include <thread>

namespace vto::vertex {

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleepFor(std::chrono::milliseconds duration) = 0;
};

class RealSleeper final : public Sleeper {
 public:
  void sleepFor(std::chrono::milliseconds duration) override { std::this_thread::sleep_for(duration); }
};

}  // namespace vto::vertex
