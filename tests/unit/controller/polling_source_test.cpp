// PollingSource on a fake clock: targets polled on their own schedules, a failing one backed off on
// its own without delaying the others, targets added and dropped between rounds.
#include "controller/polling_source.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

#include "tests/fakes/clock_fake.h"

namespace vto::controller {
namespace {

using std::chrono::seconds;

struct Fixture {
  testing::FakeClock clock;
  std::vector<std::string> targets{"a", "b"};
  std::set<std::string> failing;
  std::map<std::string, int> polls;
  PollingSource source{clock, [this] { return targets; },
                       [this](const std::string& target) -> Clock::duration {
                         ++polls[target];
                         if (failing.count(target)) throw std::runtime_error(target + ": 503 UNAVAILABLE");
                         return seconds(10);
                       },
                       PollingSourceOptions{seconds(1), seconds(8), seconds(1)}};

  // Moves the clock one second at a time for `total`, polling whatever is due.
  void runFor(Clock::duration total) {
    for (auto end = clock.now() + total; clock.now() < end;) {
      source.pollDue();
      clock.advance(seconds(1));
    }
  }
};

TEST(PollingSourceTest, EachTargetIsPolledOnItsOwnSchedule) {
  Fixture f;
  auto next = f.source.pollDue();
  EXPECT_EQ(f.polls["a"], 1);
  EXPECT_EQ(f.polls["b"], 1);
  EXPECT_EQ(next, f.clock.now() + seconds(1)) << "targets are re-read every targetRefresh";
  f.clock.advance(seconds(9));
  f.source.pollDue();
  EXPECT_EQ(f.polls["a"], 1) << "not due before its interval";
  f.clock.advance(seconds(1));
  f.source.pollDue();
  EXPECT_EQ(f.polls["a"], 2);
  EXPECT_EQ(f.polls["b"], 2);
}

TEST(PollingSourceTest, AFailingTargetBacksOffAloneAndNeverBlocksTheOthers) {
  Fixture f;
  f.failing = {"a"};
  f.runFor(seconds(60));
  // b: every 10 s. a: after 1, 2, 4, 8, 8, ... seconds.
  EXPECT_EQ(f.polls["b"], 6);
  EXPECT_EQ(f.polls["a"], 10);  // t = 0, 1, 3, 7, 15, 23, 31, 39, 47, 55
}

TEST(PollingSourceTest, ARecoveredTargetReturnsToItsInterval) {
  Fixture f;
  f.failing = {"a"};
  f.runFor(seconds(20));
  EXPECT_GT(f.source.failures("a"), 1);
  EXPECT_EQ(f.source.failures("b"), 0);
  f.failing.clear();
  f.runFor(seconds(9));
  EXPECT_EQ(f.source.failures("a"), 0);
}

TEST(PollingSourceTest, NewTargetsArePolledAtOnceAndGoneOnesDropped) {
  Fixture f;
  f.source.pollDue();
  f.targets = {"b", "c"};
  f.clock.advance(seconds(1));
  f.source.pollDue();
  EXPECT_EQ(f.polls["c"], 1);
  f.runFor(seconds(30));
  EXPECT_EQ(f.polls["a"], 1) << "a is no longer a target";
}

}  // namespace
}  // namespace vto::controller
