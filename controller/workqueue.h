#pragma once
// A rate-limited work queue of object keys with controller-runtime's semantics:
// - a key is queued at most once however often it is added (deduplication);
// - a key being processed is never handed to a second worker; if it is added meanwhile it is
//   queued again once, when the first worker calls done();
// - addAfter / addRateLimited hold a key back until its time has come on the injected clock;
// - addLowPriority queues a key behind every key added with add(), for at most `lowPriorityMaxWait`
//   (then it goes first): a pass that only catches up (records a job an earlier pass created, follows
//   a job's progress) waits while passes that may start work run. In a burst of new runs every job is
//   then created before the status writes that record them take the API server's time.
//   controller-runtime's priority queue makes the same choice for its initial list. add() raises a
//   key queued low;
// - after shutDown() get() returns nothing and adds are ignored; drain() waits for in-flight work.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <deque>

#include "base/clock.h"
#include "controller/object_key.h"
#include "controller/rate_limiter.h"
#include "controller/workqueue_metrics.h"

namespace vto::controller {

class WorkQueue {
 public:
  // `metrics` may be null; it must outlive the queue.
  WorkQueue(const Clock& clock, std::unique_ptr<RateLimiter> rateLimiter,
            WorkQueueMetrics* metrics = nullptr, Clock::duration lowPriorityMaxWait = std::chrono::seconds(30));

  void add(const ObjectKey& key);
  void addLowPriority(const ObjectKey& key);
  void addAfter(const ObjectKey& key, Clock::duration delay);
  // Adds after the rate limiter's delay for this key (counts one more failure), or after
  // `atLeast` when that is longer (a server's Retry-After).
  void addRateLimited(const ObjectKey& key, Clock::duration atLeast = Clock::duration::zero());
  // Clears the key's failure history after a success.
  void forget(const ObjectKey& key);
  int numRequeues(const ObjectKey& key);

  // Blocks until a key is ready, then marks it processing; nullopt once the queue is shut down.
  std::optional<ObjectKey> get();
  // The worker finished `key`; re-queues it if it was added while being processed.
  void done(const ObjectKey& key);

  void shutDown();
  // Waits until no key is being processed or the clock reaches `deadline`; returns whether drained.
  bool drain(Clock::time_point deadline);
  bool shuttingDown();

  size_t len();  // keys ready to be handed out now, of either priority
  // Seconds of work in flight (summed) and the longest single one, for the workqueue_unfinished_*
  // gauges.
  std::pair<double, double> unfinishedWork();

 private:
  // `wake` false: the caller is a worker in get(), which hands on what it does not take itself.
  void addLocked(const ObjectKey& key, bool wake = true);
  void promoteDueLocked(bool wake = true);  // moves waiting keys whose time has come into the ready queue
  void wakeOneLocked();     // a key became ready: wake one waiting worker
  void pushReadyLocked(const ObjectKey& key);  // into the lane of its priority
  bool anyReadyLocked() const { return !ready_.empty() || !low_.empty(); }

  const Clock& clock_;
  std::unique_ptr<RateLimiter> rateLimiter_;
  Clock::duration lowPriorityMaxWait_;
  WorkQueueMetrics noMetrics_;
  WorkQueueMetrics& metrics_;

  std::mutex mutex_;
  // Idle workers wait on idle_, except one (timerWorker_) that waits on timer_ until the earliest
  // delayed key is due; drain() waits on drained_. Each wake-up is for one worker.
  std::condition_variable idle_, timer_, drained_;
  int idleWorkers_ = 0;
  bool timerWorker_ = false;
  bool shuttingDown_ = false;
  std::deque<ObjectKey> ready_;
  std::deque<ObjectKey> low_;     // ready keys of low priority, oldest first
  std::set<ObjectKey> lowKeys_;   // queued (or to re-queue) at low priority
  std::map<ObjectKey, Clock::time_point> dirty_;       // queued or to re-queue; value: when added
  std::map<ObjectKey, Clock::time_point> processing_;  // value: when handed out
  std::map<ObjectKey, Clock::time_point> waiting_;     // delayed keys; value: when due
  std::set<std::pair<Clock::time_point, ObjectKey>> waitingByDue_;
};

}  // namespace vto::controller
