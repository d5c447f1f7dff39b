#include "controller/manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace vto::controller {

struct Manager::Runnable {
  std::string name;
  std::unique_ptr<WorkQueueMetrics> queueMetrics;
  std::unique_ptr<ControllerMetrics> controllerMetrics;
  std::unique_ptr<WorkQueue> queue;
  std::unique_ptr<Controller> controller;
};

Manager::Manager(KubeClient& client, const Clock& clock, ManagerOptions options,
                 std::shared_ptr<prometheus::Registry> registry, std::shared_ptr<RuntimeMetrics> metrics)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      registry_(std::move(registry)),
      metrics_(metrics ? std::move(metrics) : std::make_shared<RuntimeMetrics>(*registry_)) {}

Manager::~Manager() { stopControllers(); }

Informer& Manager::addInformer(InformerOptions options) {
  informers_.push_back(std::make_unique<Informer>(client_, clock_, std::move(options)));
  metrics_->watchInformer(*informers_.back());
  return *informers_.back();
}

Controller& Manager::addController(const std::string& name, Reconciler& reconciler,
                                   int maxConcurrentReconciles) {
  auto runnable = std::make_unique<Runnable>();
  runnable->name = name;
  runnable->queueMetrics = metrics_->forQueue(name);
  runnable->controllerMetrics = metrics_->forController(name);
  runnable->queue = std::make_unique<WorkQueue>(clock_, defaultControllerRateLimiter(clock_),
                                                runnable->queueMetrics.get());
  metrics_->watchUnfinishedWork(name, *runnable->queue);
  runnable->controller =
      std::make_unique<Controller>(name, reconciler, *runnable->queue, clock_,
                                   maxConcurrentReconciles, runnable->controllerMetrics.get());
  controllers_.push_back(std::move(runnable));
  return *controllers_.back()->controller;
}

WorkQueue& Manager::queue(const std::string& controllerName) {
  for (auto& runnable : controllers_) {
    if (runnable->name == controllerName) return *runnable->queue;
  }
  throw std::invalid_argument("no controller named " + controllerName);
}

bool Manager::cachesSynced() const {
  for (const auto& informer : informers_) {
    if (informer->gatesReadiness() && !informer->hasSynced()) return false;
  }
  return true;
}

void Manager::addLoop(std::function<void(std::stop_token)> loop) { loops_.push_back(std::move(loop)); }

void Manager::startControllers() {
  for (auto& runnable : controllers_) runnable->controller->start();
  for (auto& loop : loops_) loopThreads_.emplace_back(loop);
}

void Manager::stopControllers() {
  for (auto& thread : loopThreads_) thread.request_stop();
  loopThreads_.clear();  // joins
  // Shut every queue at once so no controller starts new work while another drains.
  for (auto& runnable : controllers_) runnable->queue->shutDown();
  for (auto& runnable : controllers_) runnable->controller->stop(options_.gracefulShutdown);
}

void Manager::addCollectable(std::weak_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(std::move(collectable));
}

int Manager::run(std::stop_token stop) {
  if (options_.metricsBindAddress != "0") {
    auto collectables = collectables_;
    collectables.insert(collectables.begin(), metrics_);
    metricsServer_ = std::make_unique<metrics::MetricsServer>(options_.metricsBindAddress, registry_, collectables);
  }
  if (options_.healthProbeBindAddress != "0") {
    healthServer_ = std::make_unique<HealthServer>(options_.healthProbeBindAddress);
    // A standby is ready too: readiness is about serving, not about leading.
    healthServer_->addReadyCheck("informers-synced", [this] { return cachesSynced(); });
    // A stale watch: the cache no longer follows the API server, so the pod should not count as
    // serving. Liveness is untouched: restarting cannot heal the network, and the watch recovers
    // by itself once the API server answers again.
    healthServer_->addReadyCheck("watches-live", [this] {
      return std::none_of(informers_.begin(), informers_.end(),
                          [](const auto& informer) { return informer->gatesReadiness() && informer->stale(); });
    });
  }
  // The addresses actually bound (port 0 picks one): tests and the demo read them from this log.
  auto hostOf = [](const std::string& bindAddress) {
    std::string host = bindAddress.substr(0, bindAddress.rfind(':'));
    return host.empty() ? std::string("0.0.0.0") : host;
  };
  if (metricsServer_) metricsPort_ = metricsServer_->port();
  if (healthServer_) healthPort_ = healthServer_->port();
  if (metricsServer_)
    spdlog::info("metrics listening on http://{}:{}/metrics", hostOf(options_.metricsBindAddress), metricsServer_->port());
  if (healthServer_)
    spdlog::info("health probes listening on http://{}:{}/healthz", hostOf(options_.healthProbeBindAddress),
                 healthServer_->port());
  for (auto& informer : informers_) informer->start();

  std::mutex mutex;
  std::condition_variable wake;
  bool lost = false;
  std::stop_callback wakeOnStop(stop, [&] {
    std::lock_guard guard(mutex);
    wake.notify_all();
  });

  std::atomic<bool> releasing{false};
  std::unique_ptr<LeaderElector> elector;
  std::jthread election;
  if (options_.leaderElect) {
    elector = std::make_unique<LeaderElector>(
        client_, clock_, options_.leaderElection,
        LeaderElector::Callbacks{
            .startedLeading = [this] { startControllers(); },
            .stoppedLeading =
                [&] {
                  // Fencing: no new reconcile starts once the lease may belong to someone else.
                  for (auto& runnable : controllers_) runnable->queue->shutDown();
                  if (releasing) return;  // our own graceful release, not a loss
                  if (options_.onLeaseLost) options_.onLeaseLost();
                  if (options_.exitOnLeaseLost) {
                    spdlog::error("lost the leader lease: exiting at once so that no worker acts while "
                                  "another replica may lead; this process restarts as a standby");
                    spdlog::shutdown();  // flushes the log line
                    std::_Exit(1);
                  }
                  std::lock_guard guard(mutex);
                  lost = true;
                  wake.notify_all();
                }},
        metrics_.get());
    election = std::jthread([&elector](std::stop_token electionStop) { elector->run(electionStop); });
  } else {
    startControllers();
  }

  {
    std::unique_lock lock(mutex);
    wake.wait(lock, [&] { return stop.stop_requested() || lost; });
  }
  bool lostLease = lost;
  if (lostLease) spdlog::error("lost the leader lease: stopping so that this process can restart as a standby");
  stopControllers();
  if (election.joinable()) {
    releasing = true;
    election.request_stop();  // releases the lease when we still hold it
    election.join();
  }
  for (auto& informer : informers_) informer->stop();
  return lostLease ? 1 : 0;
}

}  // namespace vto::controller
