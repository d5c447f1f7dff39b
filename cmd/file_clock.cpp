#include "cmd/file_clock.h"

#include <fstream>

namespace vto::cmd {

Clock::duration FileClock::offset() const {
  std::lock_guard guard(mutex_);
  auto real = std::chrono::steady_clock::now();
  if (real - readAt_ >= std::chrono::milliseconds(20)) {
    readAt_ = real;
    long long seconds = 0;
    // A missing or half-written file keeps the last offset: time never jumps back to zero.
    if (std::ifstream in(path_); in >> seconds) offset_ = std::chrono::seconds(seconds);
  }
  return offset_;
}

Clock::time_point FileClock::now() const { return std::chrono::system_clock::now() + offset(); }

void FileClock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          time_point deadline) const {
  auto step = std::min<duration>(deadline - now(), std::chrono::milliseconds(50));
  if (step <= duration::zero()) return;
  cv.wait_for(lock, step);
}

}  // namespace vto::cmd
