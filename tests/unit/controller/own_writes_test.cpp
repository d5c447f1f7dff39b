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
CachedObject written(const std::string& version) { return std::make_shared<const nlohmann::json>(at(version)); }

TEST(OwnWrites, OnlyTheEchoOfTheLastOwnWriteIsSkippedAndOnlyOnce) {
  testing::FakeClock clock;
  WorkQueue queue{clock, defaultControllerRateLimiter(clock)};
  OwnWrites own;
  auto handler = enqueueUnlessOwnWrite(queue, own);
  own.record("6", written("7"));
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
  own.record("6", written("7"));  // a finalizer added
  own.record("7", written("8"));  // then status written, in the same reconcile
  handler(at("7"));
  handler(at("8"));
  EXPECT_EQ(queue.len(), 0u);
  EXPECT_EQ(own.size(), 0u);

  own.record("9", written("10"));
  own.record("10", written("11"));
  handler(at("11"));  // the echo of 10 was coalesced away: 11 passes it
  EXPECT_EQ(queue.len(), 0u);
  handler(at("10"));  // never again after 11
  EXPECT_EQ(queue.len(), 1u);
}

TEST(OwnWrites, AGoneObjectForgetsItsRecord) {
  OwnWrites own;
  own.record("2", written("3"));
  own.forget({"ns", "run"});
  EXPECT_FALSE(own.consume(at("3")));
}

// A pass that starts before the echo of our last write (a poll or a wake-up came in between) reads
// the object as we wrote it, not the version the write replaced: it would write again and conflict.
TEST(OwnWrites, APassBeforeTheEchoReadsTheObjectAsWrittenNotTheVersionItReplaced) {
  OwnWrites own;
  own.record("6", written("7"));  // the finalizer, conditional on 6
  own.record("7", written("8"));  // then status, conditional on 7
  for (const char* behind : {"6", "7"}) {
    auto latest = own.latest(written(behind));
    ASSERT_TRUE(latest);
    EXPECT_EQ(latest->at("metadata").at("resourceVersion"), "8") << "the cache at " << behind;
  }
  EXPECT_TRUE(own.consume(at("7")));
  EXPECT_EQ(own.latest(written("7"))->at("metadata").at("resourceVersion"), "8") << "still one echo behind";
  EXPECT_TRUE(own.consume(at("8")));
  EXPECT_EQ(own.size(), 0u) << "the cache has caught up";
  EXPECT_EQ(own.latest(written("8"))->at("metadata").at("resourceVersion"), "8");
}

// Someone else's newer version, or our last write itself when its echo passed before we recorded
// it: the cache is not behind, and the record goes (nothing waits for an echo that has passed).
TEST(OwnWrites, ACacheAtOrPastTheLastWriteIsReadAsItIsAndEndsTheRecord) {
  OwnWrites own;
  own.record("6", written("7"));
  EXPECT_EQ(own.latest(written("7"))->at("metadata").at("resourceVersion"), "7");
  EXPECT_EQ(own.size(), 0u);
  own.record("7", written("8"));
  EXPECT_EQ(own.latest(written("9"))->at("metadata").at("resourceVersion"), "9");
  EXPECT_EQ(own.size(), 0u);
  EXPECT_FALSE(own.consume(at("8"))) << "a relist of a version we wrote long ago is reconciled";
}

}  // namespace
}  // namespace vto::controller
