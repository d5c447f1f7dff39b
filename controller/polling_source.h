#pragma once
// A source of reconcile work for a system that has no watch (Vertex AI): independent targets polled
// on the injected clock, each on its own schedule and with its own backoff, so one failing target
// never delays the others. What one poll does (list, update a cache, enqueue keys) is the caller's;
// this class only decides when. run() is a Manager loop; tests call pollDue() on a fake clock.
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"

namespace vto::controller {

struct PollingSourceOptions {
  Clock::duration minBackoff = std::chrono::seconds(1);
  Clock::duration maxBackoff = std::chrono::minutes(5);
  // How often run() asks for the targets again while nothing is due (a new target is polled at once then).
  Clock::duration targetRefresh = std::chrono::seconds(1);
};

class PollingSource {
 public:
  // The targets to poll (stable names); a new one is due at once, one no longer listed is dropped.
  using Targets = std::function<std::vector<std::string>()>;
  // Polls one target and returns how long until its next poll. Throwing backs this target off
  // (doubling from minBackoff up to maxBackoff); the others keep their schedules.
  using Poll = std::function<Clock::duration(const std::string& target)>;

  PollingSource(const Clock& clock, Targets targets, Poll poll, PollingSourceOptions options = {});

  // Polls every target that is due now, each at most once; returns when the next one is due.
  Clock::time_point pollDue();
  // pollDue() in a loop, waiting on the clock in between, until `stop` is requested.
  void run(std::stop_token stop);
  // Consecutive failures of `target` (0 when its last poll succeeded or it was never polled).
  int failures(const std::string& target) const;

 private:
  struct Schedule {
    Clock::time_point due{};
    int failures = 0;
  };

  const Clock& clock_;
  Targets targets_;
  Poll poll_;
  PollingSourceOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Schedule> schedules_;
};

}  // namespace vto::controller
