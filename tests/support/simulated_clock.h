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
