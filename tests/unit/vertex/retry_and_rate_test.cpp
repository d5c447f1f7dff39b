#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fakes/clock_fake.h"
#include "vertex/rate_limiter.h"

namespace vto::vertex {
namespace {

using namespace std::chrono_literals;

TEST(QuotaPacer, HandsBackTheWaitInsteadOfBlocking) {
  testing::FakeClock clock;
  QuotaPacer pacer(clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pacer.tryAcquire("p/l#create", 3), std::nullopt);
  clock.advance(15s);
  EXPECT_EQ(pacer.tryAcquire("p/l#create", 3), 45000ms);  // the 1st leaves the minute in 45 s
  EXPECT_EQ(pacer.tryAcquire("p/l#other", 3), std::nullopt);  // other keys are not held up
  try {
    pacer.acquireOrThrow("p/l#create", 3);
    FAIL() << "expected QuotaPacingError";
  } catch (const QuotaPacingError& error) {
    EXPECT_EQ(error.retryAfter(), 45000ms);
  }
  clock.advance(45s);
  EXPECT_EQ(pacer.tryAcquire("p/l#create", 3), std::nullopt);
  EXPECT_EQ(pacer.tryAcquire("k", 0), std::nullopt);  // unlimited
}

TEST(QuotaPacer, NeverExceedsTheLimitInAnyWindow) {
  testing::FakeClock clock;
  QuotaPacer pacer(clock);
  std::vector<Clock::time_point> sent;
  while (sent.size() < 25) {
    if (auto wait = pacer.tryAcquire("k", 10)) {
      clock.advance(*wait);  // the caller comes back when told, not sooner
      continue;
    }
    sent.push_back(clock.now());
    if (sent.size() % 3 == 0) clock.advance(7s);
  }
  for (std::size_t i = 10; i < sent.size(); ++i) EXPECT_GE(sent[i] - sent[i - 10], 60s) << i;
}

// Namespaces sharing one project's create quota: a namespace in a failover loop (a create every
// second, for ever) and one that creates now and then. Each tries once a second for ten minutes; each
// success is counted by the minute it fell in.
TEST(QuotaPacer, CreatesAreSharedFairlyBetweenNamespaces) {
  struct Case {
    std::string name;
    int loopFrom, quietFrom;  // second each starts trying (quiet: -1 never)
    int quietEvery;           // the quiet one tries every N seconds
    int loopAtLeast, quietAtLeast;  // successes in the last five minutes, at least
  };
  std::vector<Case> cases{
      {"alone, the loop may use the whole quota", 0, -1, 1, 5 * 60 - 2, 0},
      {"two looping namespaces: half each", 0, 0, 1, 5 * 30 - 2, 5 * 30 - 2},
      {"the loop first, the other arriving late: the other still gets its half", 0, 120, 1, 5 * 30 - 2, 5 * 30 - 2},
      {"a namespace that creates rarely gets every create it asks for", 0, 30, 20, 5 * 30 - 2, 5 * 3},
  };
  for (const auto& c : cases) {
    testing::FakeClock clock;
    QuotaPacer pacer(clock);
    int loopLate = 0, quietLate = 0;
    std::vector<Clock::time_point> all;
    for (int second = 0; second < 600; ++second) {
      bool late = second >= 300;
      if (second >= c.loopFrom && !pacer.tryAcquireShared("p/l (job creations)", "loop", 60)) {
        all.push_back(clock.now());
        loopLate += late;
      }
      if (c.quietFrom >= 0 && second >= c.quietFrom && (second - c.quietFrom) % c.quietEvery == 0 &&
          !pacer.tryAcquireShared("p/l (job creations)", "quiet", 60)) {
        all.push_back(clock.now());
        quietLate += late;
      }
      clock.advance(1s);
    }
    EXPECT_GE(loopLate, c.loopAtLeast) << c.name;
    EXPECT_GE(quietLate, c.quietAtLeast) << c.name;
    for (std::size_t i = 60; i < all.size(); ++i) EXPECT_GE(all[i] - all[i - 60], 60s) << c.name << ": never over the quota";
  }
}

TEST(QuotaPacer, AGroupOverItsShareIsToldWhenItsShareFreesUp) {
  testing::FakeClock clock;
  QuotaPacer pacer(clock);
  EXPECT_EQ(pacer.tryAcquireShared("k", "a", 4), std::nullopt);
  clock.advance(10s);
  EXPECT_EQ(pacer.tryAcquireShared("k", "b", 4), std::nullopt);
  EXPECT_EQ(pacer.tryAcquireShared("k", "a", 4), std::nullopt);  // a holds 2 of 4: its half
  EXPECT_EQ(pacer.tryAcquireShared("k", "a", 4), 50000ms) << "a's first create leaves the minute in 50 s";
  EXPECT_EQ(pacer.tryAcquireShared("k", "b", 4), std::nullopt) << "b still has room in its half";
  EXPECT_EQ(pacer.tryAcquireShared("other-key", "a", 4), std::nullopt) << "another key has its own quota";
  EXPECT_EQ(pacer.tryAcquireShared("k", "c", 4), 50000ms) << "a third namespace waits for the quota like the rest";
}

}  // namespace
}  // namespace vto::vertex
