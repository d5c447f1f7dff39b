#pragma once
#include <atomic>
#include <functional>
#include <stop_token>
#include <thread>
// Runs a set of controllers the way controller-runtime's manager does: metrics and health servers,
// informers (ready once their caches are synced), optional leader election (controllers run only
// while leading and stop at once when the lease is lost), and a graceful stop that drains in-flight
// reconciles within the grace period and then releases the lease.
#include <prometheus/registry.h>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "controller/controller.h"
#include "controller/health_server.h"
#include "controller/informer.h"
#include "controller/kube_client.h"
#include "controller/leader_elector.h"
#include "controller/runtime_metrics.h"
#include "controller/workqueue.h"
#include "metrics/metrics_server.h"

namespace vto::controller {

struct ManagerOptions {
  // Loopback unless configured otherwise: whoever reaches these ports reaches the process.
  std::string metricsBindAddress = "127.0.0.1:8080";      // "0" disables the metrics server
  std::string healthProbeBindAddress = "127.0.0.1:8081";  // "0" disables the probes
  bool leaderElect = false;
  LeaderElectionConfig leaderElection{};
  Clock::duration gracefulShutdown = std::chrono::seconds(30);
  // Fencing. When the lease is lost the queues are shut at once; then, by default, the process
  // exits with status 1 on the spot (as controller-runtime does): a reconcile in flight must not
  // go on writing once another replica may lead. Tests that run a manager in-process turn the exit
  // off, and run() returns 1 after draining instead.
  bool exitOnLeaseLost = true;
  std::function<void()> onLeaseLost;  // called first, from the fencing thread (tests: record the time)
};

class Manager {
 public:
  // `registry` is the process's Prometheus registry (other layers add vto_* metrics to it).
  // `metrics` may be given when the kube client must report into it before the manager exists.
  Manager(KubeClient& client, const Clock& clock, ManagerOptions options,
          std::shared_ptr<prometheus::Registry> registry, std::shared_ptr<RuntimeMetrics> metrics = nullptr);
  ~Manager();

  RuntimeMetrics& metrics() { return *metrics_; }
  // Informers and controllers are added before run(); the references stay valid until the
  // manager is destroyed.
  Informer& addInformer(InformerOptions options);
  // A controller with its own rate-limited queue named `name` (the metrics' controller/name label).
  Controller& addController(const std::string& name, Reconciler& reconciler,
                            int maxConcurrentReconciles);
  WorkQueue& queue(const std::string& controllerName);
  // A background loop that runs beside the controllers, only while they run (only on the leader):
  // started with them, asked to stop through its token and joined before they drain.
  void addLoop(std::function<void(std::stop_token)> loop);
  // Metrics computed when scraped (e.g. vto's process and TrainingRun collectors), served beside the
  // registry; added before run(), held weakly.
  void addCollectable(std::weak_ptr<prometheus::Collectable> collectable);

  // Blocks until `stop` is requested (returns 0 after a graceful stop) or the lease is lost
  // (exits the process, or returns 1 without exitOnLeaseLost: the process should exit so that it
  // restarts as a standby).
  int run(std::stop_token stop);
  bool cachesSynced() const;
  // The ports run() bound (port 0 in the options picks free ones); 0 until it has bound them.
  int metricsPort() const { return metricsPort_; }
  int healthPort() const { return healthPort_; }

 private:
  struct Runnable;
  void startControllers();
  void stopControllers();

  KubeClient& client_;
  const Clock& clock_;
  ManagerOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<RuntimeMetrics> metrics_;
  std::vector<std::unique_ptr<Informer>> informers_;
  std::vector<std::unique_ptr<Runnable>> controllers_;
  std::vector<std::function<void(std::stop_token)>> loops_;
  std::vector<std::jthread> loopThreads_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  std::unique_ptr<metrics::MetricsServer> metricsServer_;
  std::unique_ptr<HealthServer> healthServer_;
  std::atomic<int> metricsPort_{0}, healthPort_{0};
};

}  // namespace vto::controller
