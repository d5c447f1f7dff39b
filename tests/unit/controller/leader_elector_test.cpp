// Leader election timing on a simulated clock, against an in-memory API server.
#include "controller/leader_elector.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/kube_client_fake.h"
#include "tests/support/wait.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>

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

namespace vto::controller {
namespace {

using namespace std::chrono_literals;

// Forwards to the in-memory API server, except that once hang() is called every request blocks
// until release(): a renew that neither fails nor answers, as under a silent partition.
class HangingClient final : public KubeClient {
 public:
  explicit HangingClient(KubeClient& inner) : inner_(inner) {}
  void hang() { hang_ = true; }
  void release() {
    std::lock_guard guard(mutex_);
    hang_ = false;
    released_.notify_all();
  }
  int hanging() const { return hanging_; }

  nlohmann::json get(const Resource& r, const std::string& ns, const std::string& name) override {
    block();
    return inner_.get(r, ns, name);
  }
  ListPage list(const Resource& r, const std::string& ns, const ListOptions& o) override {
    block();
    return inner_.list(r, ns, o);
  }
  nlohmann::json create(const Resource& r, const std::string& ns, const nlohmann::json& o) override {
    block();
    return inner_.create(r, ns, o);
  }
  nlohmann::json update(const Resource& r, const std::string& ns, const nlohmann::json& o) override {
    block();
    return inner_.update(r, ns, o);
  }
  nlohmann::json updateStatus(const Resource& r, const std::string& ns, const nlohmann::json& o) override {
    block();
    return inner_.updateStatus(r, ns, o);
  }
  nlohmann::json patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
                       const nlohmann::json& body, const std::string& manager, bool force,
                       const std::string& subresource) override {
    block();
    return inner_.patch(r, ns, name, type, body, manager, force, subresource);
  }
  void remove(const Resource& r, const std::string& ns, const std::string& name) override {
    block();
    inner_.remove(r, ns, name);
  }
  void watch(const Resource& r, const std::string& ns, const WatchOptions& o,
             const std::function<void(WatchEvent&&)>& onEvent, std::stop_token stop) override {
    inner_.watch(r, ns, o, onEvent, stop);
  }

 private:
  void block() {
    std::unique_lock lock(mutex_);
    if (!hang_) return;
    ++hanging_;
    released_.wait(lock, [this] { return !hang_; });
    --hanging_;
  }
  KubeClient& inner_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool hang_ = false;
  std::atomic<int> hanging_{0};
};

// The renew deadline holds even when a renew never returns: run()'s fencing timer ends leadership
// while the request is still in flight (before the fix, only a returning request could fence).
TEST(LeaderElectorFencingTest, FencesAtTheRenewDeadlineWhileARenewHangs) {
  vto::testing::FakeClock clock;
  vto::testing::FakeKubeClient fake;
  HangingClient client(fake);
  std::atomic<int> started{0}, stopped{0};
  LeaderElector elector(client, clock, LeaderElectionConfig{.leaseNamespace = "vto-system", .identity = "a"},
                        {.startedLeading = [&] { ++started; }, .stoppedLeading = [&] { ++stopped; }});
  std::stop_source stop;
  auto running = std::async(std::launch::async, [&] { return elector.run(stop.get_token()); });
  ASSERT_TRUE(vto::testing::waitFor([&] { return started == 1; }, 5s));
  client.hang();
  ASSERT_TRUE(vto::testing::waitFor([&] { return clock.waiterCount() >= 2; }, 5s));  // the loop and the timer
  clock.advance(2s);
  ASSERT_TRUE(vto::testing::waitFor([&] { return client.hanging() == 1; }, 5s)) << "the renew at +2 s did not start";
  clock.advance(7s);
  ASSERT_TRUE(vto::testing::waitFor([&] { return clock.waiterCount() >= 1; }, 5s));
  EXPECT_EQ(stopped, 0) << "fenced 9 s after the last renewal, before the 10 s deadline";
  clock.advance(1s);
  EXPECT_TRUE(vto::testing::waitFor([&] { return stopped == 1; }, 5s)) << "no fence at the renew deadline";
  EXPECT_EQ(client.hanging(), 1) << "the fence must not wait for the hung request";
  EXPECT_FALSE(elector.isLeader());
  client.release();
  EXPECT_FALSE(running.get()) << "run() reports the lost lease";
}

}  // namespace
}  // namespace vto::controller
