// Leader election timing on a simulated clock, against an in-memory API server.
#include "controller/leader_elector.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/kube_client_fake.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::FakeClock;
using vto::testing::FakeKubeClient;

struct Candidate {
  Candidate(FakeKubeClient& client, FakeClock& clock, std::string identity)
      : elector(client, clock,
                LeaderElectionConfig{.leaseNamespace = "vto-system", .identity = std::move(identity)},
                {.startedLeading = [this] { ++started; }, .stoppedLeading = [this] { ++stopped; }}) {}
  LeaderElector elector;
  int started = 0;
  int stopped = 0;
};

class LeaderElectorTest : public ::testing::Test {
 protected:
  // Both candidates try every retry period (2 s) until `until` has passed.
  void runBoth(Clock::duration until, bool aTakesPart = true) {
    auto end = clock.now() + until;
    while (clock.now() < end) {
      if (aTakesPart) a.elector.step();
      b.elector.step();
      ASSERT_FALSE(a.elector.isLeader() && b.elector.isLeader()) << "two leaders at once";
      clock.advance(2s);
    }
  }
  FakeClock clock;
  FakeKubeClient client;
  Candidate a{client, clock, "a"};
  Candidate b{client, clock, "b"};
};

TEST_F(LeaderElectorTest, FirstCandidateCreatesTheLeaseAndLeads) {
  a.elector.step();
  EXPECT_TRUE(a.elector.isLeader());
  EXPECT_EQ(a.started, 1);
  auto lease = client.get(leaseResource(), "vto-system", "vto-controller-leader");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
}

TEST_F(LeaderElectorTest, StandbyNeverLeadsWhileTheLeaderRenews) {
  runBoth(10min);
  EXPECT_TRUE(a.elector.isLeader());
  EXPECT_EQ(b.started, 0);
}

TEST_F(LeaderElectorTest, StandbyTakesOverOnlyAfterTheLeaseExpires) {
  a.elector.step();
  b.elector.step();  // b sees a's lease now
  // a dies without releasing: b must wait the full 15 s lease from when it saw the last renewal.
  runBoth(14s, /*aTakesPart=*/false);
  b.elector.step();
  EXPECT_FALSE(b.elector.isLeader()) << "14 s after the last renewal";
  clock.advance(2s);
  b.elector.step();
  EXPECT_TRUE(b.elector.isLeader()) << "16 s after the last renewal";
  auto lease = client.get(leaseResource(), "vto-system", "vto-controller-leader");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
}

TEST_F(LeaderElectorTest, LeaderStopsWhenItCannotRenewForTheRenewDeadline) {
  a.elector.step();
  client.failWith(Status{503, "ServiceUnavailable", "etcd is down", {}});
  for (int i = 0; i < 4; ++i) {  // 8 s of failed renewals: still within the deadline
    clock.advance(2s);
    a.elector.step();
    EXPECT_TRUE(a.elector.isLeader()) << "after " << (i + 1) * 2 << " s";
  }
  clock.advance(2s);
  a.elector.step();
  EXPECT_FALSE(a.elector.isLeader()) << "10 s without renewal: fenced";
  EXPECT_EQ(a.stopped, 1);
}

TEST_F(LeaderElectorTest, LeaderStopsBeforeAStandbyCanTakeOver) {
  a.elector.step();
  b.elector.step();
  auto lastRenewal = clock.now();
  // The API server becomes unreachable: a keeps failing to renew and fences itself.
  client.failWith(Status{0, "", "connection refused", {}});
  while (a.elector.isLeader()) {
    clock.advance(2s);
    a.elector.step();
    b.elector.step();
  }
  auto aStopped = clock.now();
  // The server is back, but a has exited; b takes over once the lease it last saw has expired.
  client.failWith(std::nullopt);
  while (!b.elector.isLeader()) {
    clock.advance(2s);
    b.elector.step();
  }
  auto bStarted = clock.now();
  EXPECT_EQ(aStopped - lastRenewal, Clock::duration(10s));
  EXPECT_EQ(bStarted - lastRenewal, Clock::duration(16s)) << "15 s lease, seen at 2 s steps";
  EXPECT_LT(aStopped, bStarted);
}

TEST_F(LeaderElectorTest, ReleaseLetsTheStandbyLeadAtItsNextTry) {
  a.elector.step();
  b.elector.step();
  a.elector.release();
  EXPECT_FALSE(a.elector.isLeader());
  EXPECT_EQ(a.stopped, 1);
  clock.advance(2s);
  b.elector.step();
  EXPECT_TRUE(b.elector.isLeader()) << "no need to wait for the 15 s lease to expire";
}

TEST(LeaderElectorConfigTest, RejectsInconsistentTimings) {
  FakeClock clock;
  FakeKubeClient client;
  LeaderElectionConfig config{.leaseNamespace = "ns", .identity = "x"};
  config.renewDeadline = 20s;
  EXPECT_THROW(LeaderElector(client, clock, config, {}), std::invalid_argument);
  config = {.leaseNamespace = "", .identity = "x"};
  EXPECT_THROW(LeaderElector(client, clock, config, {}), std::invalid_argument);
}

}  // namespace
}  // namespace vto::controller
