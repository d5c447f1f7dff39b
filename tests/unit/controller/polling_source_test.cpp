// PollingSource on a fake clock: targets polled on their own schedules, a failing one backed off on
// its own without delaying the others, targets added and dropped between rounds.
#include "controller/polling_source.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "tests/fakes/clock_fake.h"
#include "tests/support/wait.h"

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

// A job that starts between two slow polls asks for its target within the fast interval: sooner,
// never later, and an ask while the target is polled is kept for the poll after.
TEST(PollingSourceTest, PollWithinBringsAPollForwardAndOutlastsAPollInFlight) {
  Fixture f;
  f.source.pollDue();  // t=0: both polled, next at t=10
  f.clock.advance(seconds(2));
  f.source.pollWithin("a", seconds(3));
  f.source.pollWithin("a", seconds(30));  // a later ask moves nothing
  f.clock.advance(seconds(2));
  f.source.pollDue();
  EXPECT_EQ(f.polls["a"], 1) << "t=4: not due before t=5";
  f.clock.advance(seconds(1));
  f.source.pollDue();
  EXPECT_EQ(f.polls["a"], 2) << "t=5: within 3 s of the ask";
  EXPECT_EQ(f.polls["b"], 1) << "b keeps its schedule";

  // t=5 again, an ask while a's poll is in flight (from the poll itself): the next poll by t=5+4,
  // not at its interval's t=15.
  PollingSource* source = nullptr;
  int polls = 0;
  PollingSource asking{f.clock, [] { return std::vector<std::string>{"a"}; },
                       [&](const std::string& target) -> Clock::duration {
                         if (++polls == 1) source->pollWithin(target, seconds(4));
                         return seconds(10);
                       }};
  source = &asking;
  EXPECT_EQ(asking.pollDue(), f.clock.now() + seconds(1)) << "the next target refresh comes first";
  f.clock.advance(seconds(4));
  asking.pollDue();
  EXPECT_EQ(polls, 2);
  f.clock.advance(seconds(9));
  asking.pollDue();
  EXPECT_EQ(polls, 2) << "then its interval again";
  f.clock.advance(seconds(1));
  asking.pollDue();
  EXPECT_EQ(polls, 3);
}

// At a start, every run's first job waits for the first poll of its place: a target added while run()
// waits is polled when the caller says so, on a clock that does not move (not at the next refresh).
TEST(PollingSourceTest, ATargetAddedWhileWaitingIsPolledOnRefreshNow) {
  for (int workers : {1, 2}) {
    testing::FakeClock clock;
    std::mutex mutex;
    std::vector<std::string> targets;
    std::map<std::string, int> polls;
    PollingSourceOptions options{seconds(1), seconds(8), seconds(1)};
    options.workers = workers;
    PollingSource source(
        clock,
        [&] {
          std::lock_guard lock(mutex);
          return targets;
        },
        [&](const std::string& target) -> Clock::duration {
          std::lock_guard lock(mutex);
          ++polls[target];
          return seconds(10);
        },
        options);
    std::jthread loop([&](std::stop_token stop) { source.run(stop); });
    {
      std::lock_guard lock(mutex);
      targets = {"new"};
    }
    source.refreshNow();
    EXPECT_TRUE(testing::waitFor(
        [&] {
          std::lock_guard lock(mutex);
          return polls["new"] == 1;
        },
        std::chrono::seconds(10)))
        << workers << " worker(s): polled without the clock reaching the next refresh";
    loop.request_stop();
  }
}

// With workers, a group whose polls hang (a tenant's dead endpoint) holds at most maxPerGroup of
// them: the other groups' targets are polled meanwhile, and no second target of the hung group starts.
TEST(PollingSourceTest, AGroupThatHangsHoldsOnlyItsShareOfTheWorkers) {
  testing::FakeClock clock;
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  std::map<std::string, int> polls;
  int hungAtOnce = 0, mostHungAtOnce = 0;
  PollingSourceOptions options{seconds(1), seconds(8), seconds(1)};
  options.workers = 3;
  options.groupOf = [](const std::string& target) { return target.substr(0, target.find('/')); };
  options.maxPerGroup = 1;
  PollingSource source(
      clock, [] { return std::vector<std::string>{"slow/1", "slow/2", "slow/3", "slow/4", "fast/1", "fast/2"}; },
      [&](const std::string& target) -> Clock::duration {
        std::unique_lock lock(mutex);
        ++polls[target];
        if (target.rfind("slow/", 0) == 0) {
          mostHungAtOnce = std::max(mostHungAtOnce, ++hungAtOnce);
          released.wait(lock, [&] { return release; });
          --hungAtOnce;
        }
        return seconds(10);
      },
      options);
  std::jthread loop([&](std::stop_token stop) { source.run(stop); });
  auto polled = [&](const std::string& target) {
    std::lock_guard lock(mutex);
    return polls[target];
  };
  EXPECT_TRUE(testing::waitFor([&] { return polled("fast/1") == 1 && polled("fast/2") == 1; }, std::chrono::seconds(10)))
      << "the other group is polled while one of its workers hangs";
  clock.advance(seconds(10));
  EXPECT_TRUE(testing::waitFor([&] { return polled("fast/1") == 2; }, std::chrono::seconds(10)))
      << "and polled again on schedule";
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(mostHungAtOnce, 1) << "one hung target per group at a time";
    release = true;
  }
  released.notify_all();
  EXPECT_TRUE(testing::waitFor([&] { return polled("slow/4") >= 1; }, std::chrono::seconds(10)))
      << "the group's other targets follow once it is free";
  loop.request_stop();
}

// Four hostile groups (a namespace each, within its maxPerGroup of 1) whose polls hang: with today's
// per-group limit alone they would hold all four workers. Groups that have not shown a fast poll share
// half the workers; a group that answers keeps being polled on schedule.
TEST(PollingSourceTest, HangingGroupsTogetherHoldOnlyTheUntrustedShare) {
  testing::FakeClock clock;
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  bool hostile = false;
  std::map<std::string, int> polls;
  int hungAtOnce = 0, mostHungAtOnce = 0;
  PollingSourceOptions options{seconds(1), seconds(8), seconds(1)};
  options.workers = 4;
  options.groupOf = [](const std::string& target) { return target.substr(0, target.find('/')); };
  options.maxPerGroup = 1;
  options.slowAfter = seconds(2);
  options.maxUntrustedWorkers = 2;
  PollingSource source(
      clock,
      [&] {
        std::lock_guard lock(mutex);
        if (!hostile) return std::vector<std::string>{"good/1"};
        // Listed first: without the limit they take every worker before good/1 is looked at.
        return std::vector<std::string>{"a1/1", "a2/1", "a3/1", "a4/1", "good/1"};
      },
      [&](const std::string& target) -> Clock::duration {
        std::unique_lock lock(mutex);
        ++polls[target];
        if (target.rfind("a", 0) == 0) {
          mostHungAtOnce = std::max(mostHungAtOnce, ++hungAtOnce);
          released.wait(lock, [&] { return release; });
          --hungAtOnce;
        }
        return seconds(10);
      },
      options);
  std::jthread loop([&](std::stop_token stop) { source.run(stop); });
  auto polled = [&](const std::string& target) {
    std::lock_guard lock(mutex);
    return polls[target];
  };
  ASSERT_TRUE(testing::waitFor([&] { return polled("good/1") == 1; }, std::chrono::seconds(10)));
  {
    std::lock_guard lock(mutex);
    hostile = true;
  }
  clock.advance(seconds(1));  // the targets are asked for again
  ASSERT_TRUE(testing::waitFor([&] { return polled("a1/1") == 1 && polled("a2/1") == 1; }, std::chrono::seconds(10)));
  clock.advance(seconds(9));
  EXPECT_TRUE(testing::waitFor([&] { return polled("good/1") == 2; }, std::chrono::seconds(10)))
      << "the group that answers is polled on schedule while four groups hang";
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(mostHungAtOnce, 2) << "hanging groups together hold the untrusted share only";
    EXPECT_EQ(polls["a3/1"], 0);
    release = true;
  }
  released.notify_all();
  EXPECT_TRUE(testing::waitFor([&] { return polled("a3/1") >= 1 && polled("a4/1") >= 1; }, std::chrono::seconds(10)))
      << "the others follow once the share is free";
  loop.request_stop();
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  released.notify_all();
}

}  // namespace
}  // namespace vto::controller
