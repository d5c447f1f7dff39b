#pragma once
// A clock for end-to-end tests of time-driven behaviour (`vto run --clock-offset-file`): real time
// plus an offset in seconds that the test writes to a file, so a test can jump the operator minutes
// ahead instead of waiting for them. Never used unless that hidden flag is given.
#include <atomic>
#include <mutex>
#include <string>

#include "base/clock.h"

namespace vto::cmd {

class FileClock final : public Clock {
 public:
  explicit FileClock(std::string path) : path_(std::move(path)) {}
  time_point now() const override;
  // Waits in short real-time steps so that a jump of the offset is noticed; returning early is
  // allowed (callers re-check their condition).
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 time_point deadline) const override;

 private:
  duration offset() const;

  std::string path_;
  mutable std::mutex mutex_;
  mutable std::chrono::steady_clock::time_point readAt_{};
  mutable duration offset_{};
};

}  // namespace vto::cmd
