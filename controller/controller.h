#pragma once
// Workers that take keys from a WorkQueue and call a Reconciler, applying its Result:
// requeueAfter -> addAfter (backoff reset); requeue or a retryable exception -> backoff;
// TerminalError -> no retry; success -> backoff reset. Exceptions never escape a worker.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "controller/controller_metrics.h"
#include "controller/reconciler.h"
#include "controller/workqueue.h"

namespace vto::controller {

class Controller {
 public:
  // `metrics` may be null; everything passed in must outlive the controller.
  Controller(std::string name, Reconciler& reconciler, WorkQueue& queue, const Clock& clock,
             int maxConcurrentReconciles, ControllerMetrics* metrics = nullptr);
  ~Controller();  // stops the workers if still running
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  const std::string& name() const { return name_; }
  void start();
  // Stops handing out keys at once (fencing), then waits for in-flight reconciles until `grace`
  // passes on the clock; returns whether they all finished. Idempotent.
  bool stop(Clock::duration grace = std::chrono::seconds(30));

  // Runs one queued key on the calling thread (blocking until one is ready); false once the queue
  // is shut down. What each worker does in a loop; public so tests can step deterministically.
  bool processNext();

 private:
  void finish(const ObjectKey& key, ReconcileOutcome outcome, Clock::time_point started);

  std::string name_;
  Reconciler& reconciler_;
  WorkQueue& queue_;
  const Clock& clock_;
  int maxConcurrent_;
  ControllerMetrics noMetrics_;
  ControllerMetrics& metrics_;
  std::atomic<int> active_{0};
  std::mutex mutex_;
  std::condition_variable workersExited_;
  int runningWorkers_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace vto::controller
