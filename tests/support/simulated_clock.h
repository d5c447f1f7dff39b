#pragma once
// The clock of an operator started with `vto run --clock-offset-file`: real time plus an offset in a
// file both sides read, so a test jumps the operator minutes ahead instead of waiting for them.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "base/clock.h"

namespace vto::testing {

// The operator's clock: real time plus the offset in a file both sides read.
class SimulatedClock {
 public:
  explicit SimulatedClock(std::string path) : path_(std::move(path)) { write(0); }
  // Sets the clock back, if needed, so that it reads at most 30 s into a minute: a test that creates a
  // policy and then jumps to "the next minute" must not see a real minute boundary pass in between (the
  // operator would run that slot on its own). Call before the operator starts; objects the API server
  // stamps are then up to 30 s ahead of the operator's clock, which a schedule treats as "created now".
  void startClearOfAMinuteBoundary() {
    auto real = std::chrono::system_clock::now();
    auto intoMinute = std::chrono::ceil<std::chrono::seconds>(real - std::chrono::floor<std::chrono::minutes>(real));
    write(intoMinute > std::chrono::seconds(30) ? -(intoMinute - std::chrono::seconds(30)).count() : 0);
  }
  Clock::time_point now() const { return std::chrono::system_clock::now() + std::chrono::seconds(offset_); }
  // The first `* * * * *` slot after the simulated now.
  Clock::time_point nextMinute() const { return std::chrono::floor<std::chrono::minutes>(now()) + std::chrono::minutes(1); }
  // Moves the operator's clock to at least `t` (it keeps running from there).
  void jumpTo(Clock::time_point t) {
    auto needed = std::chrono::ceil<std::chrono::seconds>(t - std::chrono::system_clock::now()).count();
    if (needed > offset_) write(needed);
  }
  // Jumps just past the next slot and returns the slot.
  Clock::time_point jumpPastNextMinute() {
    auto slot = nextMinute();
    jumpTo(slot + std::chrono::seconds(2));
    return slot;
  }

 private:
  void write(long long offset) {
    offset_ = offset;
    std::string temp = path_ + ".tmp";
    std::ofstream(temp) << offset << "\n";
    std::rename(temp.c_str(), path_.c_str());  // the operator never reads a half-written file
  }
  std::string path_;
  long long offset_ = 0;
};

}  // namespace vto::testing
