// The work queue on a simulated clock: deduplication, delays, backoff, rate limit, one worker per key.
#include "controller/workqueue.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "tests/fakes/clock_fake.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::FakeClock;
using vto::testing::waitFor;

const ObjectKey kA{"ns", "a"};
const ObjectKey kB{"ns", "b"};

class WorkQueueTest : public ::testing::Test {
 protected:
  FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
};

TEST_F(WorkQueueTest, KeyAddedManyTimesIsQueuedOnce) {
  queue.add(kA);
  queue.add(kA);
  queue.add(kB);
  queue.add(kA);
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(queue.get(), kA);
  EXPECT_EQ(queue.get(), kB);
  EXPECT_EQ(queue.len(), 0u);
}

TEST_F(WorkQueueTest, KeyAddedWhileProcessingIsHandedOutOnlyAfterDone) {
  queue.add(kA);
  ASSERT_EQ(queue.get(), kA);
  queue.add(kA);
  queue.add(kA);
  EXPECT_EQ(queue.len(), 0u) << "a second worker must not get a key that is being processed";
  queue.done(kA);
  EXPECT_EQ(queue.len(), 1u) << "re-added once because it changed while processing";
  EXPECT_EQ(queue.get(), kA);
  queue.done(kA);
  EXPECT_EQ(queue.len(), 0u);
}

const ObjectKey kC{"ns", "c"};

TEST_F(WorkQueueTest, LowPriorityKeysWaitBehindTheOthers) {
  queue.addLowPriority(kA);
  queue.add(kB);
  queue.addLowPriority(kC);
  queue.addLowPriority(kB);  // queued already, higher: stays so
  EXPECT_EQ(queue.len(), 3u);
  EXPECT_EQ(queue.get(), kB);
  EXPECT_EQ(queue.get(), kA) << "low priority, oldest first";
  EXPECT_EQ(queue.get(), kC);
}

TEST_F(WorkQueueTest, AddRaisesALowPriorityKey) {
  queue.addLowPriority(kA);
  queue.addLowPriority(kB);
  queue.add(kB);
  queue.add(kC);
  EXPECT_EQ(queue.len(), 3u) << "raised, not queued twice";
  EXPECT_EQ(queue.get(), kB);
  EXPECT_EQ(queue.get(), kC);
  EXPECT_EQ(queue.get(), kA);
}

TEST_F(WorkQueueTest, LowPriorityAddedWhileProcessingComesBackLowUnlessRaised) {
  queue.add(kA);
  ASSERT_EQ(queue.get(), kA);
  queue.addLowPriority(kA);
  queue.add(kB);
  queue.done(kA);
  EXPECT_EQ(queue.get(), kB);
  EXPECT_EQ(queue.get(), kA);
  queue.done(kA);
  queue.done(kB);

  ASSERT_EQ((queue.add(kA), queue.get()), kA);
  queue.addLowPriority(kA);
  queue.add(kA);  // raised while processing
  queue.add(kB);
  queue.done(kA);
  EXPECT_EQ(queue.get(), kB) << "both normal now: in the order they were queued";
  EXPECT_EQ(queue.get(), kA);
}

TEST(WorkQueueLowPriority, GoesFirstOnceItWaitedTheLongestItMay) {
  FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock), nullptr, 30s};
  queue.addLowPriority(kA);
  clock.advance(29s);
  queue.add(kB);
  queue.add(kC);
  EXPECT_EQ(queue.get(), kB) << "29 s: still behind";
  clock.advance(1s);
  EXPECT_EQ(queue.get(), kA) << "30 s: a burst of other keys no longer keeps it waiting";
  EXPECT_EQ(queue.get(), kC);
}

TEST(WorkQueueLowPriority, AnIdleWorkerTakesItAtOnce) {
  FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  auto got = std::async(std::launch::async, [&] { return queue.get(); });
  queue.addLowPriority(kA);
  ASSERT_EQ(got.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(got.get(), kA);
}

TEST_F(WorkQueueTest, AddAfterWaitsForTheClock) {
  queue.addAfter(kA, 10s);
  EXPECT_EQ(queue.len(), 0u);
  auto got = std::async(std::launch::async, [&] { return queue.get(); });
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
  clock.advance(9s);
  EXPECT_EQ(got.wait_for(0s), std::future_status::timeout);
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
  clock.advance(1s);
  EXPECT_EQ(got.get(), kA);
}

// Idle workers are woken one per key; one of them keeps the timer for the earliest delayed key.
// None of them may be left asleep while a key is due or ready.
TEST_F(WorkQueueTest, IdleWorkersWakeOnePerKeyAndOneKeepsTheTimer) {
  std::vector<std::future<std::optional<ObjectKey>>> workers;
  for (int i = 0; i < 3; ++i) workers.push_back(std::async(std::launch::async, [&] { return queue.get(); }));
  auto handedOut = [&] {
    std::vector<ObjectKey> keys;
    for (auto& worker : workers) {
      if (worker.valid() && worker.wait_for(0s) == std::future_status::ready) keys.push_back(*worker.get());
    }
    return keys;
  };
  std::vector<ObjectKey> got;
  auto collect = [&](size_t count) {
    return waitFor([&] {
      for (auto& key : handedOut()) got.push_back(key);
      return got.size() >= count;
    }, 5s);
  };

  queue.addAfter(kA, 10s);
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s)) << "one worker keeps the timer";
  queue.addAfter(kB, 2s);  // due sooner than the timer's key: the timer is re-armed
  clock.advance(2s);
  ASSERT_TRUE(collect(1));
  EXPECT_EQ(got, std::vector<ObjectKey>{kB});

  clock.advance(8s);  // whichever worker took the timer over hands out kA
  ASSERT_TRUE(collect(2));
  EXPECT_EQ(got.back(), kA);

  const ObjectKey kC{"ns", "c"};
  queue.add(kC);  // the last idle worker
  ASSERT_TRUE(collect(3));
  EXPECT_EQ(got.back(), kC);
}

TEST_F(WorkQueueTest, AddAfterKeepsTheEarliestTime) {
  queue.addAfter(kA, 10s);
  queue.addAfter(kA, 3s);
  queue.addAfter(kA, 20s);
  clock.advance(3s);
  EXPECT_EQ(queue.get(), kA);
  queue.done(kA);
  clock.advance(30s);
  EXPECT_EQ(queue.len(), 0u) << "the later additions were merged into the first";
}

TEST_F(WorkQueueTest, BackoffDoublesFromFiveMillisecondsAndForgetResetsIt) {
  for (int failures = 0; failures < 4; ++failures) {
    auto expected = std::chrono::milliseconds(5 << failures);
    queue.addRateLimited(kA);
    clock.advance(expected - 1ms);
    EXPECT_EQ(queue.len(), 0u) << "after " << failures << " failures";
    clock.advance(1ms);
    ASSERT_EQ(queue.len(), 1u) << "after " << failures << " failures";
    ASSERT_EQ(queue.get(), kA);
    queue.done(kA);
  }
  EXPECT_EQ(queue.numRequeues(kA), 4);
  queue.forget(kA);
  EXPECT_EQ(queue.numRequeues(kA), 0);
  queue.addRateLimited(kA);
  clock.advance(5ms);
  EXPECT_EQ(queue.len(), 1u) << "after forget() the backoff starts again at 5 ms";
}

TEST(RateLimiterTest, ExponentialBackoffIsCappedAtOneThousandSeconds) {
  ExponentialFailureRateLimiter limiter(5ms, 1000s);
  Clock::duration last{};
  for (int i = 0; i < 100; ++i) last = limiter.when(kA);
  EXPECT_EQ(last, Clock::duration(1000s));
  EXPECT_EQ(limiter.when(kB), Clock::duration(5ms)) << "backoff is per key";
}

TEST(RateLimiterTest, TokenBucketAllowsABurstOfOneHundredThenTenPerSecond) {
  FakeClock clock;
  TokenBucketRateLimiter limiter(clock, 10, 100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.when(ObjectKey{"ns", std::to_string(i)}), Clock::duration::zero()) << i;
  }
  EXPECT_EQ(limiter.when(kA), Clock::duration(100ms));
  EXPECT_EQ(limiter.when(kB), Clock::duration(200ms));
  clock.advance(1s);
  // Ten tokens came back; two were already promised.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(limiter.when(kA), Clock::duration::zero()) << i;
  EXPECT_EQ(limiter.when(kA), Clock::duration(100ms));
}

TEST(RateLimiterTest, DefaultIsTheLongerOfBackoffAndBucket) {
  FakeClock clock;
  auto limiter = defaultControllerRateLimiter(clock);
  for (int i = 0; i < 100; ++i) limiter->when(ObjectKey{"burst", std::to_string(i)});
  // The bucket is empty: a fresh key waits 100 ms although its own backoff is 5 ms.
  EXPECT_EQ(limiter->when(kA), Clock::duration(100ms));
}

TEST_F(WorkQueueTest, ShutDownWakesWaitingWorkersAndDrainWaitsForInFlightWork) {
  auto waiting = std::async(std::launch::async, [&] { return queue.get(); });
  queue.add(kA);
  ASSERT_EQ(waiting.get(), kA);
  auto blocked = std::async(std::launch::async, [&] { return queue.get(); });
  queue.shutDown();
  EXPECT_EQ(blocked.get(), std::nullopt);
  queue.add(kB);
  EXPECT_EQ(queue.len(), 0u) << "adds after shutdown are ignored";

  auto drained = std::async(std::launch::async, [&] { return queue.drain(clock.now() + 30s); });
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
  EXPECT_EQ(drained.wait_for(0s), std::future_status::timeout);
  queue.done(kA);
  EXPECT_TRUE(drained.get());
}

TEST_F(WorkQueueTest, DrainGivesUpAtTheDeadline) {
  queue.add(kA);
  ASSERT_EQ(queue.get(), kA);
  queue.shutDown();
  auto drained = std::async(std::launch::async, [&] { return queue.drain(clock.now() + 30s); });
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
  clock.advance(30s);
  EXPECT_FALSE(drained.get());
}

TEST_F(WorkQueueTest, UnfinishedWorkGrowsWithTheClock) {
  queue.add(kA);
  queue.add(kB);
  queue.get();
  clock.advance(3s);
  queue.get();
  clock.advance(1s);
  auto [total, longest] = queue.unfinishedWork();
  EXPECT_DOUBLE_EQ(total, 5.0);
  EXPECT_DOUBLE_EQ(longest, 4.0);
}

}  // namespace
}  // namespace vto::controller
