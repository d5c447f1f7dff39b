// Workers applying the reconciler contract, on a simulated clock.
#include "controller/controller.h"

#include "controller/api_error.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "tests/fakes/clock_fake.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::FakeClock;
using vto::testing::waitFor;

const ObjectKey kA{"ns", "a"};

// A reconciler whose behaviour each test scripts, and which records what it saw.
class ScriptedReconciler final : public Reconciler {
 public:
  std::function<Result(const ObjectKey&)> body = [](const ObjectKey&) { return Result{}; };
  Result reconcile(const ObjectKey& key) override {
    {
      std::lock_guard guard(mutex);
      ++calls[key];
    }
    return body(key);
  }
  int callsFor(const ObjectKey& key) {
    std::lock_guard guard(mutex);
    return calls[key];
  }
  std::mutex mutex;
  std::map<ObjectKey, int> calls;
};

class CountingMetrics final : public ControllerMetrics {
 public:
  void reconciled(ReconcileOutcome outcome, Clock::duration) override { ++outcomes[outcome]; }
  std::map<ReconcileOutcome, int> outcomes;
};

class ControllerTest : public ::testing::Test {
 protected:
  FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  ScriptedReconciler reconciler;
  CountingMetrics metrics;
  Controller controller{"test", reconciler, queue, clock, 1, &metrics};
};

TEST_F(ControllerTest, RetryableErrorIsCaughtCountedAndRetriedWithBackoff) {
  reconciler.body = [](const ObjectKey&) -> Result { throw std::runtime_error("API busy"); };
  queue.add(kA);
  ASSERT_TRUE(controller.processNext());
  EXPECT_EQ(metrics.outcomes[ReconcileOutcome::Error], 1);
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(5ms);
  EXPECT_EQ(queue.len(), 1u);
  ASSERT_TRUE(controller.processNext());
  clock.advance(9ms);
  EXPECT_EQ(queue.len(), 0u) << "the second retry waits twice as long";
  clock.advance(1ms);
  EXPECT_EQ(queue.len(), 1u);
}

TEST_F(ControllerTest, ThrottledRequestWaitsForRetryAfter) {
  reconciler.body = [](const ObjectKey&) -> Result {
    throw ApiError(Status{429, "TooManyRequests", "slow down", {}}, std::chrono::seconds(7));
  };
  queue.add(kA);
  ASSERT_TRUE(controller.processNext());
  clock.advance(6s);
  EXPECT_EQ(queue.len(), 0u) << "the 5 ms backoff must not undercut Retry-After";
  clock.advance(1s);
  EXPECT_EQ(queue.len(), 1u);
}

// Vertex and GCS errors are RetryableErrors too (one backoff layer): their Retry-After is honoured.
TEST_F(ControllerTest, AnyRetryableErrorWaitsForItsRetryAfter) {
  reconciler.body = [](const ObjectKey&) -> Result {
    throw RetryableError("Vertex quota used up", std::chrono::seconds(30));
  };
  queue.add(kA);
  ASSERT_TRUE(controller.processNext());
  clock.advance(29s);
  EXPECT_EQ(queue.len(), 0u) << "the 5 ms backoff must not undercut the cloud API's Retry-After";
  clock.advance(1s);
  EXPECT_EQ(queue.len(), 1u);
}

TEST_F(ControllerTest, NonStandardExceptionIsCaughtToo) {
  reconciler.body = [](const ObjectKey&) -> Result { throw 42; };
  queue.add(kA);
  ASSERT_TRUE(controller.processNext());
  EXPECT_EQ(metrics.outcomes[ReconcileOutcome::Error], 1);
  EXPECT_EQ(queue.numRequeues(kA), 1);
}

TEST_F(ControllerTest, TerminalErrorIsNotRetried) {
  reconciler.body = [](const ObjectKey&) -> Result { throw TerminalError("spec.x is invalid"); };
  queue.add(kA);
  ASSERT_TRUE(controller.processNext());
  EXPECT_EQ(metrics.outcomes[ReconcileOutcome::Error], 1);
  clock.advance(2000s);
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(queue.numRequeues(kA), 0);
}

TEST_F(ControllerTest, RequeueAfterComesBackOnTimeAndResetsBackoff) {
  reconciler.body = [](const ObjectKey&) { return Result{.requeueAfter = 30s}; };
  queue.addRateLimited(kA);
  clock.advance(5ms);
  ASSERT_TRUE(controller.processNext());
  EXPECT_EQ(queue.numRequeues(kA), 0);
  clock.advance(29s);
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(1s);
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(metrics.outcomes[ReconcileOutcome::RequeueAfter], 1);
}

TEST_F(ControllerTest, SuccessIsNotRequeued) {
  queue.add(kA);
  ASSERT_TRUE(controller.processNext());
  clock.advance(2000s);
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(metrics.outcomes[ReconcileOutcome::Success], 1);
}

TEST(ControllerWorkersTest, AKeyIsNeverReconciledByTwoWorkersAtOnce) {
  FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  ScriptedReconciler reconciler;
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  std::set<ObjectKey> inFlight;
  bool overlapped = false;
  reconciler.body = [&](const ObjectKey& key) {
    std::unique_lock lock(mutex);
    if (!inFlight.insert(key).second) overlapped = true;
    released.wait(lock, [&] { return release; });
    inFlight.erase(key);
    return Result{};
  };
  Controller controller("test", reconciler, queue, clock, 4);
  controller.start();
  queue.add(kA);
  ASSERT_TRUE(waitFor([&] { return reconciler.callsFor(kA) == 1; }, 5s));
  // Three idle workers, and the key is added again while the first still works on it.
  queue.add(kA);
  queue.add(kA);
  EXPECT_EQ(queue.len(), 0u);
  {
    std::lock_guard guard(mutex);
    release = true;
  }
  released.notify_all();
  ASSERT_TRUE(waitFor([&] { return reconciler.callsFor(kA) == 2; }, 5s));
  EXPECT_TRUE(controller.stop());
  EXPECT_FALSE(overlapped);
  EXPECT_EQ(reconciler.callsFor(kA), 2) << "the repeated adds collapsed into one more pass";
}

TEST(ControllerWorkersTest, RejectsZeroWorkers) {
  FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  ScriptedReconciler reconciler;
  EXPECT_THROW(Controller("test", reconciler, queue, clock, 0), std::invalid_argument);
}

}  // namespace
}  // namespace vto::controller
