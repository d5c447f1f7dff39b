// Fencing on a simulated clock: when the lease cannot be renewed for the renew deadline, the
// manager stops handing out work at once and run() reports the loss.
#include "controller/manager.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/kube_client_fake.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::FakeClock;
using vto::testing::FakeKubeClient;
using vto::testing::waitFor;

class CountingReconciler final : public Reconciler {
 public:
  Result reconcile(const ObjectKey&) override {
    ++calls;
    return {};
  }
  std::atomic<int> calls{0};
};

TEST(ManagerFencingTest, LosingTheLeaseStopsReconcilingAndRunReturnsOne) {
  FakeClock clock;
  FakeKubeClient client;
  ManagerOptions options;
  options.metricsBindAddress = "0";
  options.healthProbeBindAddress = "0";
  options.leaderElect = true;
  options.leaderElection.leaseNamespace = "vto-system";
  options.leaderElection.identity = "me";
  options.exitOnLeaseLost = false;  // in-process: run() reports the loss instead of exiting
  Manager manager(client, clock, options, std::make_shared<prometheus::Registry>());
  CountingReconciler reconciler;
  manager.addController("things", reconciler, 1);

  std::stop_source stop;
  auto running = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  // Leading: the key is reconciled.
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() >= 1; }, 5s));
  manager.queue("things").add({"ns", "a"});
  ASSERT_TRUE(waitFor([&] { return reconciler.calls == 1; }, 5s));

  client.failWith(Status{503, "ServiceUnavailable", "etcd is down", {}});
  // Renewals fail every 2 s; after 10 s without one, leadership ends.
  for (int second = 2; second <= 10 && running.wait_for(0s) != std::future_status::ready; second += 2) {
    ASSERT_TRUE(waitFor([&] { return clock.waiterCount() >= 1; }, 5s));
    clock.advance(2s);
  }
  ASSERT_EQ(running.wait_for(5s), std::future_status::ready) << "still running 10 s into the outage";
  EXPECT_EQ(running.get(), 1);
  manager.queue("things").add({"ns", "b"});
  EXPECT_EQ(manager.queue("things").len(), 0u) << "no new work after the lease is lost";
  EXPECT_EQ(reconciler.calls, 1);
}

TEST(ManagerFencingTest, WithoutElectionControllersStartAtOnceAndStopGracefully) {
  FakeClock clock;
  FakeKubeClient client;
  ManagerOptions options;
  options.metricsBindAddress = "0";
  options.healthProbeBindAddress = "0";
  Manager manager(client, clock, options, std::make_shared<prometheus::Registry>());
  CountingReconciler reconciler;
  manager.addController("things", reconciler, 2);
  std::stop_source stop;
  auto running = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  manager.queue("things").add({"ns", "a"});
  ASSERT_TRUE(waitFor([&] { return reconciler.calls == 1; }, 5s));
  stop.request_stop();
  EXPECT_EQ(running.get(), 0);
  EXPECT_EQ(client.calls(), 0) << "no lease traffic when not electing";
}

}  // namespace
}  // namespace vto::controller
