// Fencing under a real network partition. Replica "a" reaches the API server through a TCP proxy
// (tests/support/tcp_proxy.cpp) that is then told to forward nothing while holding every
// connection open: a renew neither fails nor answers. Replica "b" talks to the API server
// directly and takes the lease once it expires. "a" must stop acting (fence and exit) before "b"
// acquires: the fence time "a" reports and the acquireTime "b" writes are compared on the one host
// clock (ordering, not timing). Found by review: "a" renewed with 30 s request timeouts and kept
// leading ~74 s into a partition. The replicas are this binary re-run in "replica" mode, each a
// real controller::Manager with leader election.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>

#include "base/clock.h"
#include "controller/kube_client.h"
#include "controller/manager.h"
#include "base/rfc3339.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::sharedCluster;
using vto::testing::Subprocess;
using vto::testing::waitFor;

const char* kNamespace = "leader-partition-test";
const char* kLease = "partitioned";

LeaderElectionConfig electionConfig(const std::string& identity) {
  // Short timings so the test is quick; the ratios are client-go's (15/10/2).
  return {.leaseName = kLease, .leaseNamespace = kNamespace, .identity = identity,
          .leaseDuration = 9s, .renewDeadline = 6s, .retryPeriod = 1s};
}

// A replica: runs when VTO_REPLICA_IDENTITY is set. Prints "leading" when its work starts and
// "fenced TIME" (RFC 3339, microseconds) the moment it gives the lease up; the manager then exits.
TEST(ReplicaProcess, Run) {
  const char* identity = std::getenv("VTO_REPLICA_IDENTITY");
  if (!identity) GTEST_SKIP() << "only run as a child of the tests below";
  auto config = loadKubeconfig(std::getenv("VTO_REPLICA_KUBECONFIG"));
  if (const char* server = std::getenv("VTO_REPLICA_SERVER")) config.server = server;
  RestKubeClient client(config);
  RealClock clock;
  ManagerOptions options;
  options.metricsBindAddress = "0";
  options.healthProbeBindAddress = "0";
  options.leaderElect = true;
  options.leaderElection = electionConfig(identity);
  options.onLeaseLost = [&clock] { std::cout << "fenced " << rfc3339Micro(clock.now()) << std::endl; };
  Manager manager(client, clock, options, std::make_shared<prometheus::Registry>());
  manager.addLoop([](std::stop_token) { std::cout << "leading" << std::endl; });
  std::cout << "candidate" << std::endl;
  std::stop_source never;
  manager.run(never.get_token());
  std::cout << "manager returned" << std::endl;
}

std::unique_ptr<Subprocess> replica(const std::string& identity, const std::string& server) {
  setenv("VTO_REPLICA_IDENTITY", identity.c_str(), 1);
  setenv("VTO_REPLICA_KUBECONFIG", sharedCluster().kubeconfig().c_str(), 1);
  if (!server.empty()) setenv("VTO_REPLICA_SERVER", server.c_str(), 1);
  auto process = std::make_unique<Subprocess>(
      std::vector<std::string>{"/proc/self/exe", "--gtest_filter=ReplicaProcess.Run"});
  unsetenv("VTO_REPLICA_IDENTITY");
  unsetenv("VTO_REPLICA_SERVER");
  return process;
}

bool awaitLine(Subprocess& process, const std::string& prefix, std::chrono::milliseconds timeout,
               std::string* line = nullptr) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto got = process.readLine(left);
    if (!got) return false;
    std::cout << "  | " << *got << std::endl;  // the replica's own log, for diagnosis
    if (got->rfind(prefix, 0) == 0) {
      if (line) *line = *got;
      return true;
    }
  }
  return false;
}

// "https://127.0.0.1:6443" -> {"127.0.0.1", "6443"}
std::pair<std::string, std::string> hostAndPort(const std::string& server) {
  auto rest = server.substr(server.find("://") + 3);
  auto colon = rest.rfind(':');
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

TEST(LeaderPartitionTest, APartitionedLeaderFencesBeforeAnotherReplicaCanTakeTheLease) {
  auto made = sharedCluster().kubectl(std::string("create namespace ") + kNamespace);
  ASSERT_EQ(made.exitCode, 0) << made.output;
  RestKubeClient direct(loadKubeconfig(sharedCluster().kubeconfig()));
  auto lease = [&] { return direct.get(leaseResource(), kNamespace, kLease)["spec"]; };

  auto [host, port] = hostAndPort(sharedCluster().server());
  auto proxyPath = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "vto_test_tcp_proxy";
  Subprocess proxy({proxyPath.string(), host, port});
  std::string listening;
  ASSERT_TRUE(awaitLine(proxy, "listening ", 10s, &listening));
  std::string proxied = "https://" + host + ":" + listening.substr(10);

  auto a = replica("a", proxied);
  ASSERT_TRUE(awaitLine(*a, "leading", 30s)) << "replica a never led through the proxy";
  auto b = replica("b", "");
  ASSERT_TRUE(awaitLine(*b, "candidate", 30s));
  // b is trying while a renews: wait for a renewal after b started.
  auto renewed = lease().value("renewTime", "");
  ASSERT_TRUE(waitFor([&] { return lease().value("renewTime", "") != renewed; }, 10s));
  ASSERT_EQ(lease().value("holderIdentity", ""), "a");

  proxy.signal(SIGUSR1);
  ASSERT_TRUE(awaitLine(proxy, "partitioned", 10s));

  // Until b holds the lease, and whenever it is seen holding it, a must already be gone.
  bool aRunningWhenBHeld = false;
  ASSERT_TRUE(waitFor(
      [&] {
        if (lease().value("holderIdentity", "") != "b") return false;
        aRunningWhenBHeld = a->running();
        return true;
      },
      60s, 20ms))
      << "b never took the lease";
  std::string acquiredByB = lease().value("acquireTime", "");

  std::string fencedLine;
  ASSERT_TRUE(awaitLine(*a, "fenced ", 30s, &fencedLine)) << "replica a never fenced";
  std::string fencedAt = fencedLine.substr(7);
  EXPECT_LT(fencedAt, acquiredByB) << "a fenced at " << fencedAt << ", after b acquired at " << acquiredByB;
  EXPECT_FALSE(aRunningWhenBHeld) << "replica a was still running when b held the lease";
  EXPECT_EQ(a->wait(10s), 1) << "a fenced replica exits with status 1";
  std::cout << "a fenced at " << fencedAt << "; b acquired at " << acquiredByB << std::endl;
  b->stop();
  proxy.stop();
}

// The mechanism under the fence: a request under a RequestDeadlineScope that meets a silent
// partition fails at its deadline as a transport error, instead of waiting out the client's 30 s
// request timeout; without a scope the same client is unaffected once the partition heals.
TEST(RequestDeadlineTest, ASilentPartitionFailsTheRequestAtItsDeadline) {
  auto [host, port] = hostAndPort(sharedCluster().server());
  auto proxyPath = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "vto_test_tcp_proxy";
  Subprocess proxy({proxyPath.string(), host, port});
  std::string listening;
  ASSERT_TRUE(awaitLine(proxy, "listening ", 10s, &listening));
  auto config = loadKubeconfig(sharedCluster().kubeconfig());
  config.server = "https://" + host + ":" + listening.substr(10);
  RestKubeClient client(config);
  ASSERT_NO_THROW(client.get({"", "v1", "namespaces", false}, "", "default"));

  proxy.signal(SIGUSR1);
  ASSERT_TRUE(awaitLine(proxy, "partitioned", 10s));
  auto attempt = std::async(std::launch::async, [&]() -> std::string {
    RequestDeadlineScope deadline(std::chrono::steady_clock::now() + 1s);
    try {
      client.get({"", "v1", "namespaces", false}, "", "default");
      return "answered";
    } catch (const ApiError& error) {
      return error.status().code == 0 ? std::string(error.what()) : "HTTP " + std::to_string(error.status().code);
    }
  });
  // Well before the client's 30 s request timeout.
  ASSERT_EQ(attempt.wait_for(15s), std::future_status::ready) << "the deadline did not cut the request off";
  auto message = attempt.get();
  EXPECT_NE(message.find("no answer before the request deadline"), std::string::npos) << message;

  proxy.signal(SIGUSR2);
  ASSERT_TRUE(awaitLine(proxy, "healed", 10s));
  EXPECT_TRUE(waitFor(
      [&] {
        try {
          RequestDeadlineScope deadline(std::chrono::steady_clock::now() + 5s);
          client.get({"", "v1", "namespaces", false}, "", "default");
          return true;
        } catch (const ApiError&) {
          return false;
        }
      },
      30s))
      << "the client did not recover after the partition healed";
  proxy.stop();
}

}  // namespace
}  // namespace vto::controller
