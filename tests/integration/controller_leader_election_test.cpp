// Leader election between separate processes on a real API server: a standby never leads while
// the leader lives, a killed leader is replaced within 20 s, and a leader that is told to stop
// releases the lease. The candidate processes are this same binary re-run in "elector" mode.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "controller/kube_client.h"
#include "controller/leader_elector.h"
#include "controller/shutdown_signals.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::sharedCluster;
using vto::testing::Subprocess;
using vto::testing::waitFor;

const char* kNamespace = "leader-election-test";

// The candidate process: runs when VTO_ELECTOR_IDENTITY is set, and reports on stdout.
TEST(ElectorProcess, Run) {
  const char* identity = std::getenv("VTO_ELECTOR_IDENTITY");
  if (!identity) GTEST_SKIP() << "only run as a child of the tests below";
  ShutdownSignals signals;  // SIGTERM -> a graceful stop, as in the operator
  std::stop_token stop = signals.token();

  RestKubeClient client(loadKubeconfig(std::getenv("VTO_ELECTOR_KUBECONFIG")));
  RealClock clock;
  LeaderElector elector(
      client, clock,
      {.leaseName = std::getenv("VTO_ELECTOR_LEASE"), .leaseNamespace = kNamespace, .identity = identity},
      {.startedLeading = [] { std::cout << "elector: leading" << std::endl; },
       .stoppedLeading = [] { std::cout << "elector: stopped" << std::endl; }});
  // Step by step (rather than run()) so that each standby attempt is visible to the parent.
  std::mutex mutex;
  std::condition_variable wake;
  std::stop_callback wakeOnStop(stop, [&] {
    std::lock_guard guard(mutex);
    wake.notify_all();
  });
  while (!stop.stop_requested()) {
    auto next = elector.step();
    if (!elector.isLeader()) std::cout << "elector: standby" << std::endl;
    std::unique_lock lock(mutex);
    while (!stop.stop_requested() && clock.now() < next) clock.waitUntil(lock, wake, next);
  }
  elector.release();
  std::cout << "elector: released" << std::endl;
}

// Starts a candidate process.
std::unique_ptr<Subprocess> candidate(const std::string& identity, const std::string& lease) {
  setenv("VTO_ELECTOR_IDENTITY", identity.c_str(), 1);
  setenv("VTO_ELECTOR_LEASE", lease.c_str(), 1);
  setenv("VTO_ELECTOR_KUBECONFIG", sharedCluster().kubeconfig().c_str(), 1);
  auto process = std::make_unique<Subprocess>(
      std::vector<std::string>{"/proc/self/exe", "--gtest_filter=ElectorProcess.Run"});
  unsetenv("VTO_ELECTOR_IDENTITY");
  return process;
}

// Reads the candidate's output until `line` appears or `timeout` passes.
bool awaitLine(Subprocess& process, const std::string& line, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto got = process.readLine(left);
    if (!got) return false;
    if (*got == line) return true;
    if (*got == "elector: leading" && line == "elector: standby") {
      ADD_FAILURE() << "the standby led while the leader was alive";
      return false;
    }
  }
  return false;
}

std::string holderOf(const std::string& lease) {
  auto got = sharedCluster().kubectl(std::string("get lease ") + lease + " -n " + kNamespace +
                                     " -o jsonpath='{.spec.holderIdentity}'");
  return got.exitCode == 0 ? got.output : "<" + got.output + ">";
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto made = sharedCluster().kubectl(std::string("create namespace ") + kNamespace);
    ASSERT_EQ(made.exitCode, 0) << made.output;
  }
};

TEST_F(LeaderElectionTest, StandbyNeverLeadsAndTakesOverWithin20sOfAKill) {
  auto first = candidate("first", "killed-leader");
  ASSERT_TRUE(awaitLine(*first, "elector: leading", 30s));
  auto second = candidate("second", "killed-leader");
  // Five failed attempts, two seconds apart: the standby keeps out while the leader renews.
  for (int attempt = 0; attempt < 5; ++attempt) {
    ASSERT_TRUE(awaitLine(*second, "elector: standby", 30s)) << "attempt " << attempt;
  }
  EXPECT_EQ(holderOf("killed-leader"), "first");

  first->signal(SIGKILL);  // no chance to release: the lease must expire
  first->wait(10s);
  EXPECT_TRUE(awaitLine(*second, "elector: leading", 20s)) << "no handover within 20 s";
  EXPECT_EQ(holderOf("killed-leader"), "second");
  second->stop();
}

TEST_F(LeaderElectionTest, StoppedLeaderReleasesTheLease) {
  auto first = candidate("first", "released");
  ASSERT_TRUE(awaitLine(*first, "elector: leading", 30s));
  first->signal(SIGTERM);
  ASSERT_TRUE(awaitLine(*first, "elector: released", 30s));
  EXPECT_EQ(first->wait(30s), 0);
  EXPECT_EQ(holderOf("released"), "") << "an empty holder lets a standby take over at once";
  auto second = candidate("second", "released");
  EXPECT_TRUE(awaitLine(*second, "elector: leading", 20s));
  second->stop();
}

TEST_F(LeaderElectionTest, TwoElectorsInOneProcessNeverLeadTogether) {
  RestKubeClient client(loadKubeconfig(sharedCluster().kubeconfig()));
  RealClock clock;
  std::atomic<int> leaders{0};
  std::atomic<bool> overlapped{false};
  auto config = [](const char* identity) {
    return LeaderElectionConfig{.leaseName = "in-process", .leaseNamespace = kNamespace, .identity = identity};
  };
  auto callbacks = [&]() {
    return LeaderElector::Callbacks{.startedLeading = [&] { if (++leaders > 1) overlapped = true; },
                                    .stoppedLeading = [&] { --leaders; }};
  };
  LeaderElector a(client, clock, config("a"), callbacks());
  LeaderElector b(client, clock, config("b"), callbacks());
  // Twenty rounds of both trying, as two processes would every retry period.
  for (int round = 0; round < 20; ++round) {
    a.step();
    b.step();
    ASSERT_FALSE(a.isLeader() && b.isLeader()) << "round " << round;
  }
  EXPECT_TRUE(a.isLeader() != b.isLeader());
  EXPECT_FALSE(overlapped);
}

}  // namespace
}  // namespace vto::controller
