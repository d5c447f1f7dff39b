#include "controller/polling_source.h"

#include <algorithm>
#include <spdlog/spdlog.h>
#include <thread>

#include "base/retryable_error.h"

namespace vto::controller {

PollingSource::PollingSource(const Clock& clock, Targets targets, Poll poll, PollingSourceOptions options)
    : clock_(clock), targets_(std::move(targets)), poll_(std::move(poll)), options_(std::move(options)) {}

void PollingSource::refreshTargets(Clock::time_point now) {
  refreshAsked_ = false;
  std::map<std::string, Schedule> current;
  for (auto& target : targets_()) {
    auto known = schedules_.find(target);
    current[target] = known != schedules_.end() ? known->second : Schedule{now, 0, false, std::nullopt};
  }
  schedules_ = std::move(current);
}

Clock::time_point PollingSource::nextDue(Clock::time_point now) const {
  auto next = now + options_.targetRefresh;
  for (const auto& [target, schedule] : schedules_) {
    if (!schedule.inFlight) next = std::min(next, schedule.due);
  }
  return next;
}

bool PollingSource::pollOne(const std::string& target, Clock::time_point now) {
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
  if (found != schedules_.end()) {
    if (found->second.dueBy) next = std::min(next, *found->second.dueBy);
    found->second = Schedule{next, failures, false, std::nullopt};
  }
  return failures == 0;
}

Clock::time_point PollingSource::pollDue() {
  auto now = clock_.now();
  std::vector<std::string> due;
  {
    std::lock_guard lock(mutex_);
    refreshTargets(now);
    for (auto& [target, schedule] : schedules_) {
      if (schedule.due > now) continue;
      schedule.inFlight = true;  // so that a pollWithin meanwhile is kept for the poll after
      due.push_back(target);
    }
  }
  // Polled outside the lock: a slow target delays the others' polls in this round, never their
  // schedules, and a failing one only pushes back its own.
  for (const auto& target : due) pollOne(target, now);
  std::lock_guard lock(mutex_);
  return nextDue(now);
}

void PollingSource::run(std::stop_token stop) {
  std::stop_callback wakeOnStop(stop, [this] {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  });
  if (options_.workers > 1) return runWorkers(stop);
  while (!stop.stop_requested()) {
    auto next = pollDue();
    std::unique_lock lock(mutex_);
    if (stop.stop_requested()) break;
    if (!refreshAsked_) clock_.waitUntil(lock, wake_, next);
  }
}

void PollingSource::runWorkers(std::stop_token stop) {
  // Due targets handed to the workers, in the order they fell due, with the group each was counted in
  // (a target's group may change while it is polled) and whether it took an untrusted worker.
  struct Handed {
    std::string target, group;
    bool untrusted = false;
  };
  std::deque<Handed> ready;
  std::condition_variable_any work;
  std::vector<std::jthread> workers;
  auto groupOf = [this](const std::string& target) { return options_.groupOf ? options_.groupOf(target) : ""; };
  bool limitUntrusted = options_.maxUntrustedWorkers > 0;
  for (int i = 0; i < options_.workers; ++i) {
    workers.emplace_back([&, this](std::stop_token) {
      std::unique_lock lock(mutex_);
      while (work.wait(lock, stop, [&] { return !ready.empty(); })) {
        auto handed = ready.front();
        ready.pop_front();
        lock.unlock();
        auto started = clock_.now();
        bool succeeded = pollOne(handed.target, started);
        bool fast = clock_.now() - started <= options_.slowAfter;
        lock.lock();
        if (--inFlightPerGroup_[handed.group] == 0) inFlightPerGroup_.erase(handed.group);
        if (handed.untrusted) --untrustedInFlight_;
        if (limitUntrusted) {
          if (succeeded && fast) {
            trustedGroups_.insert(handed.group);
          } else {
            trustedGroups_.erase(handed.group);
          }
        }
        wake_.notify_all();  // the dispatcher: a group may take its next target
      }
    });
  }
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    auto now = clock_.now();
    refreshTargets(now);
    for (auto& [target, schedule] : schedules_) {
      if (schedule.inFlight || schedule.due > now) continue;
      auto group = groupOf(target);
      auto& busy = inFlightPerGroup_[group];
      if (busy >= std::max<size_t>(1, options_.maxPerGroup)) continue;  // its group waits; others go on
      bool untrusted = limitUntrusted && !trustedGroups_.contains(group);
      if (untrusted && untrustedInFlight_ >= options_.maxUntrustedWorkers) continue;  // the trusted keep theirs
      ++busy;
      if (untrusted) ++untrustedInFlight_;
      schedule.inFlight = true;
      ready.push_back({target, std::move(group), untrusted});
      work.notify_one();
    }
    // Until the next target falls due; a due target whose group is busy waits for a poll of its group
    // to end, which wakes this loop.
    auto next = now + options_.targetRefresh;
    for (const auto& [target, schedule] : schedules_) {
      if (!schedule.inFlight && schedule.due > now) next = std::min(next, schedule.due);
    }
    clock_.waitUntil(lock, wake_, next);
  }
  lock.unlock();
  work.notify_all();
  workers.clear();  // joins: each stops at its wait, or after its poll in flight
}

void PollingSource::markDue(const std::string& target) { pollWithin(target, Clock::duration::zero()); }

void PollingSource::pollWithin(const std::string& target, Clock::duration within) {
  std::lock_guard lock(mutex_);
  auto found = schedules_.find(target);
  if (found == schedules_.end()) return;  // a new target is polled at once anyway
  auto by = clock_.now() + within;
  auto& schedule = found->second;
  if (schedule.inFlight) {
    schedule.dueBy = std::min(schedule.dueBy.value_or(by), by);
    return;
  }
  if (by >= schedule.due) return;
  schedule.due = by;
  wake_.notify_all();
}

void PollingSource::refreshNow() {
  std::lock_guard lock(mutex_);
  refreshAsked_ = true;  // read under the lock before waiting: a call between a refresh and the wait is not lost
  wake_.notify_all();
}

int PollingSource::failures(const std::string& target) const {
  std::lock_guard lock(mutex_);
  auto found = schedules_.find(target);
  return found == schedules_.end() ? 0 : found->second.failures;
}

}  // namespace vto::controller
