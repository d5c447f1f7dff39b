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
  own.record({"ns", "run"}, "6", "7");
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
  own.record({"ns", "run"}, "6", "7");  // a finalizer added
  own.record({"ns", "run"}, "7", "8");  // then status written, in the same reconcile
  handler(at("7"));
  handler(at("8"));
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(own.size(), 0u);

  own.record({"ns", "run"}, "9", "10");
  own.record({"ns", "run"}, "10", "11");
  handler(at("11"));  // the echo of 10 was coalesced away: 11 passes it
  EXPECT_EQ(queue.len(), 0u);
  handler(at("10"));  // never again after 11
  EXPECT_EQ(queue.len(), 1u);
}

TEST(OwnWrites, AGoneObjectForgetsItsRecord) {
  OwnWrites own;
  own.record({"ns", "run"}, "2", "3");
  own.forget({"ns", "run"});
  EXPECT_FALSE(own.consume(at("3")));
}

// A pass that starts before the echo of our last write (a poll or a wake-up came in between) would
// decide on the version the write replaced, write again and conflict: it defers, and the echo of the
// last write, instead of being skipped, brings the key back.
TEST(OwnWrites, APassBeforeTheEchoDefersAndTheLastEchoBringsTheKeyBack) {
  testing::FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  OwnWrites own;
  auto handler = enqueueUnlessOwnWrite(queue, own);
  own.record({"ns", "run"}, "6", "7");  // the finalizer, conditional on 6
  own.record({"ns", "run"}, "7", "8");  // then status, conditional on 7
  EXPECT_TRUE(own.behind(at("6")));
  handler(at("7"));
  EXPECT_EQ(queue.len(), 0u) << "the cache at 7 is still behind our last write";
  EXPECT_TRUE(own.behind(at("7")));
  handler(at("8"));
  EXPECT_EQ(queue.len(), 1u) << "the deferred pass runs on the cache at 8";
  EXPECT_EQ(own.size(), 0u);
  EXPECT_FALSE(own.behind(at("8")));
}

// Someone else's newer version, or our last write itself when its echo passed before we recorded
// it: the cache is not behind, and the record goes (nothing waits for an echo that has passed).
TEST(OwnWrites, ACacheAtOrPastTheLastWriteIsNotBehindAndEndsTheRecord) {
  OwnWrites own;
  own.record({"ns", "run"}, "6", "7");
  EXPECT_FALSE(own.behind(at("7")));
  EXPECT_EQ(own.size(), 0u);
  own.record({"ns", "run"}, "7", "8");
  EXPECT_FALSE(own.behind(at("9")));
  EXPECT_EQ(own.size(), 0u);
  EXPECT_FALSE(own.consume(at("8"))) << "a relist of a version we wrote long ago is reconciled";
}

}  // namespace
}  // namespace vto::controller
