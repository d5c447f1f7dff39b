#include "controller/workqueue.h"

#include <algorithm>

namespace vto::controller {

WorkQueue::WorkQueue(const Clock& clock, std::unique_ptr<RateLimiter> rateLimiter,
                     WorkQueueMetrics* metrics, Clock::duration lowPriorityMaxWait)
    : clock_(clock),
      rateLimiter_(std::move(rateLimiter)),
      lowPriorityMaxWait_(lowPriorityMaxWait),
      metrics_(metrics ? *metrics : noMetrics_) {}

void WorkQueue::add(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  addLocked(key);
}

void WorkQueue::addLocked(const ObjectKey& key, bool wake) {
  if (shuttingDown_) return;
  if (dirty_.count(key)) {
    // Queued low: raised (its wait still counted from when it was first queued).
    if (lowKeys_.erase(key) == 0 || processing_.count(key)) return;
    low_.erase(std::find(low_.begin(), low_.end(), key));
    ready_.push_back(key);
    return;
  }
  metrics_.added();
  dirty_[key] = clock_.now();
  if (processing_.count(key)) return;  // done() will queue it
  pushReadyLocked(key);
  if (wake) wakeOneLocked();
}

void WorkQueue::addLowPriority(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  if (shuttingDown_ || dirty_.count(key)) return;  // queued already, at its priority or higher
  metrics_.added();
  dirty_[key] = clock_.now();
  lowKeys_.insert(key);
  if (processing_.count(key)) return;  // done() will queue it
  pushReadyLocked(key);
  wakeOneLocked();
}

void WorkQueue::pushReadyLocked(const ObjectKey& key) {
  (lowKeys_.count(key) ? low_ : ready_).push_back(key);
  metrics_.depth(ready_.size() + low_.size());
}

void WorkQueue::wakeOneLocked() {
  // One key needs one worker: waking them all would have every idle worker take the lock only to
  // find nothing (at 1,000 runs that herd was a fifth of the operator's steady-state CPU).
  if (idleWorkers_ > 0) {
    idle_.notify_one();
  } else if (timerWorker_) {
    timer_.notify_one();
  }
}

void WorkQueue::addAfter(const ObjectKey& key, Clock::duration delay) {
  std::lock_guard guard(mutex_);
  if (shuttingDown_) return;
  if (delay <= Clock::duration::zero()) return addLocked(key);
  auto due = clock_.now() + delay;
  bool earliest = waitingByDue_.empty() || due < waitingByDue_.begin()->first;
  auto existing = waiting_.find(key);
  if (existing != waiting_.end()) {
    if (existing->second <= due) return;  // already due sooner: keep the earlier time
    waitingByDue_.erase({existing->second, key});
  }
  waiting_[key] = due;
  waitingByDue_.insert({due, key});
  if (!earliest) return;  // the worker that keeps the timer already wakes sooner
  if (timerWorker_) {
    timer_.notify_one();  // it waits for a later time: re-arm
  } else if (idleWorkers_ > 0) {
    idle_.notify_one();  // one of them takes the timer
  }
}

void WorkQueue::addRateLimited(const ObjectKey& key, Clock::duration atLeast) {
  metrics_.retried();
  addAfter(key, std::max(rateLimiter_->when(key), atLeast));
}

void WorkQueue::forget(const ObjectKey& key) { rateLimiter_->forget(key); }

int WorkQueue::numRequeues(const ObjectKey& key) { return rateLimiter_->numRequeues(key); }

void WorkQueue::promoteDueLocked(bool wake) {
  auto now = clock_.now();
  while (!waitingByDue_.empty() && waitingByDue_.begin()->first <= now) {
    auto key = waitingByDue_.begin()->second;
    waitingByDue_.erase(waitingByDue_.begin());
    waiting_.erase(key);
    addLocked(key, wake);
  }
}

std::optional<ObjectKey> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (shuttingDown_) return std::nullopt;
    // No wake-up per promoted key: this worker takes one and passes the rest on below.
    promoteDueLocked(/*wake=*/false);
    if (anyReadyLocked()) break;
    // One idle worker waits for the earliest delayed key; the others wait to be handed one.
    if (!waitingByDue_.empty() && !timerWorker_) {
      timerWorker_ = true;
      clock_.waitUntil(lock, timer_, waitingByDue_.begin()->first);
      timerWorker_ = false;
    } else {
      ++idleWorkers_;
      idle_.wait(lock);
      --idleWorkers_;
    }
  }
  auto now = clock_.now();
  // Low priority waits behind the rest, but never longer than lowPriorityMaxWait_.
  bool low = !low_.empty() && (ready_.empty() || now - dirty_[low_.front()] >= lowPriorityMaxWait_);
  auto& lane = low ? low_ : ready_;
  auto key = lane.front();
  lane.pop_front();
  lowKeys_.erase(key);
  // This worker may have held the timer, and more keys may be ready: pass either on.
  if (anyReadyLocked()) {
    wakeOneLocked();
  } else if (!waitingByDue_.empty() && !timerWorker_ && idleWorkers_ > 0) {
    idle_.notify_one();
  }
  metrics_.depth(ready_.size() + low_.size());
  metrics_.queuedFor(now - dirty_[key]);
  dirty_.erase(key);
  processing_[key] = now;
  return key;
}

void WorkQueue::done(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  auto found = processing_.find(key);
  if (found == processing_.end()) return;
  metrics_.workedFor(clock_.now() - found->second);
  processing_.erase(found);
  if (dirty_.count(key) && !shuttingDown_) {
    pushReadyLocked(key);
    wakeOneLocked();
  }
  if (processing_.empty()) drained_.notify_all();  // drain() may be waiting for the last one
}

void WorkQueue::shutDown() {
  std::lock_guard guard(mutex_);
  shuttingDown_ = true;
  idle_.notify_all();
  timer_.notify_all();
  drained_.notify_all();
}

bool WorkQueue::drain(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  while (!processing_.empty()) {
    if (clock_.now() >= deadline) return false;
    clock_.waitUntil(lock, drained_, deadline);
  }
  return true;
}

bool WorkQueue::shuttingDown() {
  std::lock_guard guard(mutex_);
  return shuttingDown_;
}

size_t WorkQueue::len() {
  std::lock_guard guard(mutex_);
  promoteDueLocked();
  return ready_.size() + low_.size();
}

std::pair<double, double> WorkQueue::unfinishedWork() {
  std::lock_guard guard(mutex_);
  auto now = clock_.now();
  double total = 0, longest = 0;
  for (const auto& [key, since] : processing_) {
    double seconds = std::chrono::duration<double>(now - since).count();
    total += seconds;
    longest = std::max(longest, seconds);
  }
  return {total, longest};
}

}  // namespace vto::controller
