#pragma once
// A Sleeper that does not sleep: it records each pause and moves the fake clock by it, so backoff
// and pacing are observable without real time passing.
#include <mutex>
#include <vector>

#include "tests/fakes/clock_fake.h"
#include "vertex/sleeper.h"

namespace vto::testing {

class AdvancingSleeper final : public vertex::Sleeper {
 public:
  explicit AdvancingSleeper(FakeClock& clock) : clock_(clock) {}

  void sleepFor(std::chrono::milliseconds duration) override {
    std::lock_guard lock(mutex_);
    pauses_.push_back(duration);
    clock_.advance(duration);
  }

  std::vector<std::chrono::milliseconds> pauses() const {
    std::lock_guard lock(mutex_);
    return pauses_;
  }

 private:
  FakeClock& clock_;
  mutable std::mutex mutex_;
  std::vector<std::chrono::milliseconds> pauses_;
};

}  // namespace vto::testing
