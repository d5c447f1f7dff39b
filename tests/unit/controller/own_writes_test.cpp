// The echo of a controller's own write enqueues nothing; any other version of the object does.
#include "controller/own_writes.h"

#include <gtest/gtest.h>

#include "controller/rate_limiter.h"
#include "controller/workqueue.h"
#include "tests/fakes/clock_fake.h"

namespace vto::controller {
namespace {

nlohmann::json at(const std::string& version) {
  return {{"metadata", {{"namespace", "ns"}, {"name", "run"}, {"resourceVersion", version}}}};
}

TEST(OwnWrites, OnlyTheEchoOfTheLastOwnWriteIsSkippedAndOnlyOnce) {
  testing::FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  OwnWrites own;
  auto handler = enqueueUnlessOwnWrite(queue, own);
  own.record({"ns", "run"}, "7");
  handler(at("6"));  // someone else's (older) version
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(own.size(), 1u) << "the record waits for its own echo";
  auto key = queue.get();
  ASSERT_TRUE(key);
  queue.done(*key);
  handler(at("7"));  // our write's echo
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(own.size(), 0u);
  handler(at("7"));  // the same version again (a relist): reconciled, the record is gone
  EXPECT_EQ(queue.len(), 1u);
}

TEST(OwnWrites, TheEchoOfEachOfTwoWritesIsSkipped) {
  testing::FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  OwnWrites own;
  auto handler = enqueueUnlessOwnWrite(queue, own);
  own.record({"ns", "run"}, "7");  // a finalizer added
  own.record({"ns", "run"}, "8");  // then status written, in the same reconcile
  handler(at("7"));
  handler(at("8"));
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(own.size(), 0u);

  own.record({"ns", "run"}, "10");
  own.record({"ns", "run"}, "11");
  handler(at("11"));  // the echo of 10 was coalesced away: 11 passes it
  EXPECT_EQ(queue.len(), 0u);
  handler(at("10"));  // never again after 11
  EXPECT_EQ(queue.len(), 1u);
}

TEST(OwnWrites, AGoneObjectForgetsItsRecord) {
  OwnWrites own;
  own.record({"ns", "run"}, "3");
  own.forget({"ns", "run"});
  EXPECT_FALSE(own.consume(at("3")));
}

}  // namespace
}  // namespace vto::controller
