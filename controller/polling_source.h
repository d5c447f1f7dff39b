#pragma once
// A source of reconcile work for what has no watch (Vertex AI jobs, a tenant's bucket or Prometheus):
// independent targets polled on the injected clock, each on its own schedule and with its own
// backoff, so one failing target never delays the others' schedules. What one poll does (list,
// update a cache, enqueue keys) is the caller's; this class only decides when, and on which thread.
// run() is a Manager loop; tests call pollDue() on a fake clock.
//
// With `workers` > 1, run() polls on that many threads, and at most `maxPerGroup` targets of one
// group (e.g. a namespace) at once: a slow or dead endpoint holds only its own group's share, so
// other groups' polls go on (fairness between tenants).
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
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
  // Threads that poll in run(); 1 polls on run()'s own thread, one target after another.
  int workers = 1;
  // With workers > 1: a target's group, and how many targets of one group are polled at once.
  std::function<std::string(const std::string& target)> groupOf;
  size_t maxPerGroup = 1;
  // With workers > 1 and maxUntrustedWorkers > 0: a group is trusted while its last poll ended within
  // `slowAfter` without an error; every other group (new, slow, failing) shares at most
  // maxUntrustedWorkers workers, whatever their number, so that a few tenants whose endpoints hang
  // never hold every worker (each such group is still limited to maxPerGroup too).
  Clock::duration slowAfter = std::chrono::seconds(5);
  size_t maxUntrustedWorkers = 0;
};

class PollingSource {
 public:
  // The targets to poll (stable names); a new one is due at once, one no longer listed is dropped.
  using Targets = std::function<std::vector<std::string>()>;
  // Polls one target and returns how long until its next poll. Throwing backs this target off
  // (doubling from minBackoff up to maxBackoff); the others keep their schedules.
  using Poll = std::function<Clock::duration(const std::string& target)>;

  PollingSource(const Clock& clock, Targets targets, Poll poll, PollingSourceOptions options = {});

  // Polls every target that is due now, each at most once, on this thread; returns when the next one
  // is due.
  Clock::time_point pollDue();
  // Polls until `stop` is requested, waiting on the clock in between: pollDue() in a loop, or with
  // workers > 1, due targets handed to the workers within their groups' limits.
  void run(std::stop_token stop);
  // Makes `target` due now (its subject changed): polled at the next round instead of on schedule.
  void markDue(const std::string& target);
  // Makes `target` due within `within` from now, unless it is due sooner. A poll in flight may have
  // missed the change that asked: the poll after it comes within `within` of the ask.
  void pollWithin(const std::string& target, Clock::duration within);
  // Asks for the targets again now (one was added): a new target is polled at once, not after up to
  // targetRefresh (at a start, every run's first job waits for its place's first poll).
  void refreshNow();
  // Consecutive failures of `target` (0 when its last poll succeeded or it was never polled).
  int failures(const std::string& target) const;

 private:
  struct Schedule {
    Clock::time_point due{};
    int failures = 0;
    bool inFlight = false;  // a worker is polling it
    // Asked for by pollWithin while a poll was in flight: the next poll comes no later than this.
    std::optional<Clock::time_point> dueBy{};
  };
  // Re-reads the targets (keeping known schedules); with mutex_ held.
  void refreshTargets(Clock::time_point now);
  // Polls `target` (without mutex_) and records its next due time and failures; returns whether the
  // poll succeeded.
  bool pollOne(const std::string& target, Clock::time_point now);
  // The earliest due time, no later than the next target refresh; with mutex_ held.
  Clock::time_point nextDue(Clock::time_point now) const;
  void runWorkers(std::stop_token stop);

  const Clock& clock_;
  Targets targets_;
  Poll poll_;
  PollingSourceOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Schedule> schedules_;
  std::map<std::string, size_t> inFlightPerGroup_;
  std::set<std::string> trustedGroups_;
  size_t untrustedInFlight_ = 0;
  bool refreshAsked_ = false;  // refreshNow() since the targets were last read
};

}  // namespace vto::controller
