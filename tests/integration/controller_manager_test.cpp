// The manager end to end on a real API server: elect, reconcile what kubectl changes, report ready,
// and on stop drain the reconcile in flight before releasing the lease.
#include "controller/manager.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

#include "tests/support/ports.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::runShell;
using vto::testing::sharedCluster;
using vto::testing::waitFor;

// Holds the "slow" key until released, so a stop arrives while it is being reconciled.
class GatedReconciler final : public Reconciler {
 public:
  Result reconcile(const ObjectKey& key) override {
    std::unique_lock lock(mutex_);
    seen_.insert(key.name);
    changed_.notify_all();
    if (key.name == "slow") {
      changed_.wait(lock, [&] { return released_; });
      slowFinished_ = true;
    }
    return {};
  }
  bool seen(const std::string& name) {
    std::lock_guard guard(mutex_);
    return seen_.count(name) > 0;
  }
  void release() {
    std::lock_guard guard(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  bool slowFinished() {
    std::lock_guard guard(mutex_);
    return slowFinished_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<std::string> seen_;
  bool released_ = false;
  bool slowFinished_ = false;
};

TEST(ManagerTest, LeadsReconcilesAndDrainsOnStop) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace manager-test").exitCode, 0);
  RestKubeClient client(loadKubeconfig(cluster.kubeconfig()));
  RealClock clock;
  ManagerOptions options;
  options.metricsBindAddress = "127.0.0.1:0";  // the manager binds free ports and reports them
  options.healthProbeBindAddress = "127.0.0.1:0";
  options.leaderElect = true;
  options.leaderElection.leaseNamespace = "manager-test";
  options.leaderElection.identity = "manager-test-1";
  Manager manager(client, clock, options, std::make_shared<prometheus::Registry>());
  GatedReconciler reconciler;
  manager.addController("configmap", reconciler, 2);
  auto& informer = manager.addInformer(
      {.resource = {"", "v1", "configmaps", true}, .namespaces = {"manager-test"}});
  informer.addHandler(enqueueKey(manager.queue("configmap")));

  std::stop_source stop;
  auto running = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  ASSERT_EQ(cluster.kubectl("create configmap fast -n manager-test").exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return reconciler.seen("fast"); }, 30s));
  auto lease = cluster.kubectl("get lease vto-controller-leader -n manager-test -o jsonpath='{.spec.holderIdentity}'");
  EXPECT_EQ(lease.output, "manager-test-1");
  ASSERT_TRUE(waitFor([&] { return manager.metricsPort() != 0 && manager.healthPort() != 0; }, 30s));
  auto ready = runShell("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                        std::to_string(manager.healthPort()) + "/readyz");
  EXPECT_EQ(ready.output, "200");
  auto scraped = runShell("curl -sf http://127.0.0.1:" + std::to_string(manager.metricsPort()) + "/metrics");
  EXPECT_NE(scraped.output.find("leader_election_master_status{name=\"vto-controller-leader\"} 1"),
            std::string::npos) << scraped.output;

  ASSERT_EQ(cluster.kubectl("create configmap slow -n manager-test").exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return reconciler.seen("slow"); }, 30s));
  stop.request_stop();
  reconciler.release();
  EXPECT_EQ(running.get(), 0);
  EXPECT_TRUE(reconciler.slowFinished()) << "run() returned before the in-flight reconcile ended";
  lease = cluster.kubectl("get lease vto-controller-leader -n manager-test -o jsonpath='{.spec.holderIdentity}'");
  EXPECT_EQ(lease.output, "") << "the lease is released on stop";
}

}  // namespace
}  // namespace vto::controller
