#include "controller/controller.h"

#include <spdlog/spdlog.h>

#include "controller/api_error.h"

namespace vto::controller {

Controller::Controller(std::string name, Reconciler& reconciler, WorkQueue& queue,
                       const Clock& clock, int maxConcurrentReconciles, ControllerMetrics* metrics)
    : name_(std::move(name)),
      reconciler_(reconciler),
      queue_(queue),
      clock_(clock),
      maxConcurrent_(maxConcurrentReconciles),
      metrics_(metrics ? *metrics : noMetrics_) {
  if (maxConcurrentReconciles < 1) {
    throw std::invalid_argument("--max-concurrent-reconciles must be at least 1, got " +
                                std::to_string(maxConcurrentReconciles));
  }
  metrics_.maxConcurrentReconciles(maxConcurrent_);
  metrics_.activeWorkers(0);
}

Controller::~Controller() { stop(); }

void Controller::start() {
  std::lock_guard guard(mutex_);
  if (!workers_.empty()) return;
  runningWorkers_ = maxConcurrent_;
  for (int i = 0; i < maxConcurrent_; ++i) {
    workers_.emplace_back([this] {
      while (processNext()) {
      }
      std::lock_guard guard(mutex_);
      --runningWorkers_;
      workersExited_.notify_all();
    });
  }
  spdlog::info("controller {}: started {} workers", name_, maxConcurrent_);
}

bool Controller::stop(Clock::duration grace) {
  queue_.shutDown();
  bool drained = queue_.drain(clock_.now() + grace);
  std::vector<std::thread> workers;
  {
    std::lock_guard guard(mutex_);
    workers.swap(workers_);
  }
  for (auto& worker : workers) {
    // A reconcile stuck past the grace period must not hold the process: leave it behind.
    if (drained) worker.join();
    else worker.detach();
  }
  if (!drained) spdlog::warn("controller {}: reconciles still running after the grace period", name_);
  return drained;
}

bool Controller::processNext() {
  auto key = queue_.get();
  if (!key) return false;
  metrics_.activeWorkers(++active_);
  auto started = clock_.now();
  try {
    Result result = reconciler_.reconcile(*key);
    if (result.requeueAfter > Clock::duration::zero()) {
      queue_.forget(*key);
      queue_.addAfter(*key, result.requeueAfter);
      finish(*key, ReconcileOutcome::RequeueAfter, started);
    } else if (result.requeue) {
      queue_.addRateLimited(*key);
      finish(*key, ReconcileOutcome::Requeue, started);
    } else if (result.catchUp) {
      queue_.forget(*key);
      queue_.addLowPriority(*key);
      finish(*key, ReconcileOutcome::Requeue, started);
    } else {
      queue_.forget(*key);
      finish(*key, ReconcileOutcome::Success, started);
    }
  } catch (const TerminalError& error) {
    spdlog::error("controller {}: {}: {} (not retried until the object changes)", name_,
                  key->str(), error.what());
    queue_.forget(*key);
    finish(*key, ReconcileOutcome::Error, started);
  } catch (const RetryableError& error) {
    // Any remote API (kube, Vertex, GCS, the client's own quota pacer) may say when to come back:
    // never sooner than that. Clients do not retry by themselves; this is the one backoff layer.
    spdlog::warn("controller {}: {}: {} (retrying with backoff)", name_, key->str(), error.what());
    queue_.addRateLimited(*key, error.retryAfter().value_or(std::chrono::milliseconds(0)));
    finish(*key, ReconcileOutcome::Error, started);
  } catch (const std::exception& error) {
    spdlog::warn("controller {}: {}: {} (retrying with backoff)", name_, key->str(), error.what());
    queue_.addRateLimited(*key);
    finish(*key, ReconcileOutcome::Error, started);
  } catch (...) {
    spdlog::warn("controller {}: {}: unknown exception (retrying with backoff)", name_, key->str());
    queue_.addRateLimited(*key);
    finish(*key, ReconcileOutcome::Error, started);
  }
  return true;
}

void Controller::finish(const ObjectKey& key, ReconcileOutcome outcome, Clock::time_point started) {
  metrics_.reconciled(outcome, clock_.now() - started);
  metrics_.activeWorkers(--active_);
  queue_.done(key);
}

}  // namespace vto::controller
