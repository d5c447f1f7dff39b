#include "controller/polling_source.h"

#include <algorithm>
#include <spdlog/spdlog.h>

#include "base/retryable_error.h"

namespace vto::controller {

PollingSource::PollingSource(const Clock& clock, Targets targets, Poll poll, PollingSourceOptions options)
    : clock_(clock), targets_(std::move(targets)), poll_(std::move(poll)), options_(options) {}

Clock::time_point PollingSource::pollDue() {
  auto now = clock_.now();
  std::vector<std::string> due;
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, Schedule> current;
    for (auto& target : targets_()) {
      auto known = schedules_.find(target);
      current[target] = known != schedules_.end() ? known->second : Schedule{now, 0};
    }
    schedules_ = std::move(current);
    for (const auto& [target, schedule] : schedules_) {
      if (schedule.due <= now) due.push_back(target);
    }
  }
  // Polled outside the lock: a slow target delays the others' polls in this round, never their
  // schedules, and a failing one only pushes back its own.
  for (const auto& target : due) {
    Clock::time_point next;
    int failures = 0;
    try {
      next = now + poll_(target);
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      auto found = schedules_.find(target);
      failures = found != schedules_.end() ? found->second.failures + 1 : 1;
      auto backoff = options_.minBackoff;
      for (int i = 1; i < failures && backoff < options_.maxBackoff; ++i) backoff *= 2;
      backoff = std::min(backoff, options_.maxBackoff);
      // A server's (or the quota pacer's) "not before" wins over our own backoff: clients fail fast.
      if (const auto* retryable = dynamic_cast<const RetryableError*>(&e); retryable && retryable->retryAfter()) {
        backoff = std::max<Clock::duration>(backoff, *retryable->retryAfter());
      }
      next = now + backoff;
      spdlog::warn("polling {} failed ({} in a row; next try in {}s): {}", target, failures,
                   std::chrono::duration_cast<std::chrono::seconds>(next - now).count(), e.what());
    }
    std::lock_guard lock(mutex_);
    auto found = schedules_.find(target);
    if (found != schedules_.end()) found->second = Schedule{next, failures};
  }
  std::lock_guard lock(mutex_);
  auto next = now + options_.targetRefresh;
  for (const auto& [target, schedule] : schedules_) next = std::min(next, schedule.due);
  return next;
}

void PollingSource::run(std::stop_token stop) {
  std::stop_callback wakeOnStop(stop, [this] {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  });
  while (!stop.stop_requested()) {
    auto next = pollDue();
    std::unique_lock lock(mutex_);
    if (stop.stop_requested()) break;
    clock_.waitUntil(lock, wake_, next);
  }
}

int PollingSource::failures(const std::string& target) const {
  std::lock_guard lock(mutex_);
  auto found = schedules_.find(target);
  return found == schedules_.end() ? 0 : found->second.failures;
}

}  // namespace vto::controller
