// The newData trigger's pure logic (rule 7): polls of a listing in, pending counts, firings and the
// watermark out, on a simulated clock.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/timestamp.h"
#include "reconcilers/retraining/new_data_trigger.h"
#include "tests/fakes/clock_fake.h"

namespace vto::reconcilers {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");

DataObject object(const std::string& name, Clock::duration created, int64_t size = 10, std::string generation = "1") {
  return {name, std::move(generation), T0 + created, size};
}

// One policy's trigger state, polled as the reconciler would.
struct Trigger {
  crd::NewDataTrigger spec;
  std::optional<crd::DataWatermark> status;
  DataState state;
  testing::FakeClock clock{T0 + minutes(60)};

  // Polls a listing of `objects`; returns the firing, if any, and folds it as the reconciler does
  // when the run is created.
  std::optional<DataPosition> poll(const std::vector<DataObject>& objects, bool runCreated = true) {
    auto watermark = status && status->timeCreated ? std::optional(DataPosition{*status->timeCreated, status->name})
                                                   : std::nullopt;
    DataPoll poll{clock.now(), NewDataScan(!status || !status->lastPollTime, watermark, state), ""};
    for (const auto& o : objects) poll.scan->add(o);
    auto decision = decideNewData(spec, status, state, poll, clock.now());
    auto fired = decision.fire;
    if (fired && runCreated) afterFiring(decision, poll);
    status = decision.status;
    state = decision.state;
    return fired;
  }
};

TEST(NewDataTrigger, ExistingDataDoesNotFireAndSetsTheWatermark) {
  Trigger t;
  EXPECT_FALSE(t.poll({object("a", minutes(1)), object("c", minutes(3)), object("b", minutes(2))}));
  ASSERT_TRUE(t.status->timeCreated);
  EXPECT_EQ(*t.status->timeCreated, T0 + minutes(3));
  EXPECT_EQ(t.status->name, "c");
  EXPECT_EQ(t.status->pendingObjects, 0);
  EXPECT_EQ(t.status->lastPollTime, t.clock.now());
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll({object("a", minutes(1)), object("c", minutes(3)), object("b", minutes(2))}));
}

TEST(NewDataTrigger, AnEmptyPrefixThenDataFires) {
  Trigger t;
  EXPECT_FALSE(t.poll({}));
  EXPECT_FALSE(t.status->timeCreated);
  t.clock.advance(minutes(10));
  auto fired = t.poll({object("a", minutes(61))});
  ASSERT_TRUE(fired);
  EXPECT_EQ(fired->name, "a");
}

TEST(NewDataTrigger, MinNewObjectsCountsAndTheSecondFiresOnce) {
  Trigger t;
  t.spec.minNewObjects = 2;
  std::vector<DataObject> listing = {object("old", minutes(1))};
  t.poll(listing);
  listing.push_back(object("new-1", minutes(61)));
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll(listing));
  EXPECT_EQ(t.status->pendingObjects, 1);
  EXPECT_EQ(t.status->pendingBytes, 10);
  listing.push_back(object("new-2", minutes(65), 5));
  t.clock.advance(minutes(10));
  auto fired = t.poll(listing);
  ASSERT_TRUE(fired);
  EXPECT_EQ(fired->name, "new-2");
  EXPECT_EQ(fired->timeCreated, T0 + minutes(65));
  EXPECT_EQ(t.status->pendingObjects, 0);
  EXPECT_EQ(t.status->name, "new-2");
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll(listing));
}

TEST(NewDataTrigger, MinNewBytesMustAlsoBeReached) {
  Trigger t;
  t.spec.minNewBytes = 100;
  t.poll({});
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll({object("a", minutes(61), 60)}));
  t.clock.advance(minutes(10));
  EXPECT_TRUE(t.poll({object("a", minutes(61), 60), object("b", minutes(62), 40)}));
}

TEST(NewDataTrigger, ABurstFoldsIntoOneFiringNamedByTheNewest) {
  Trigger t;
  t.poll({object("seed", minutes(0))});
  std::vector<DataObject> listing = {object("seed", minutes(0))};
  for (int i = 0; i < 50; ++i) listing.push_back(object("part-" + std::to_string(i), minutes(61) + seconds(i)));
  t.clock.advance(minutes(10));
  auto fired = t.poll(listing);
  ASSERT_TRUE(fired);
  EXPECT_EQ(fired->timeCreated, T0 + minutes(61) + seconds(49));
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll(listing));
}

TEST(NewDataTrigger, QuietPeriodWaitsUntilUploadsStop) {
  Trigger t;
  t.spec.quietPeriod = minutes(5);
  t.spec.pollInterval = minutes(1);
  t.poll({});
  t.clock.advance(minutes(1));
  std::vector<DataObject> listing = {object("a", minutes(61))};
  EXPECT_FALSE(t.poll(listing));
  // The next poll comes when the quiet period may have passed, never later than pollInterval.
  EXPECT_EQ(nextDataPoll(t.spec, t.status, t.state, t.clock.now()), t.clock.now() + minutes(1));
  t.clock.advance(minutes(3));
  listing.push_back(object("b", minutes(64)));
  EXPECT_FALSE(t.poll(listing));  // still arriving: the quiet period starts again
  t.clock.advance(minutes(4));
  EXPECT_FALSE(t.poll(listing));
  t.clock.advance(minutes(1));
  auto fired = t.poll(listing);
  ASSERT_TRUE(fired);
  EXPECT_EQ(fired->name, "b");
}

TEST(NewDataTrigger, QuietPeriodLongerThanThePollIntervalPollsWhenItEnds) {
  Trigger t;
  t.spec.quietPeriod = seconds(90);
  t.spec.pollInterval = minutes(10);
  t.poll({});
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll({object("a", minutes(61))}));
  EXPECT_EQ(nextDataPoll(t.spec, t.status, t.state, t.clock.now()), t.clock.now() + seconds(90));
}

TEST(NewDataTrigger, UpdatedIsNeverReadAndANewGenerationIsNew) {
  Trigger t;
  t.poll({object("a", minutes(1))});
  t.clock.advance(minutes(10));
  // A metadata edit changes `updated` only: the listing's (timeCreated, name, generation) is the same.
  EXPECT_FALSE(t.poll({object("a", minutes(1))}));
  t.clock.advance(minutes(10));
  // Overwriting creates a new generation with a new creation time.
  EXPECT_TRUE(t.poll({object("a", minutes(70), 10, "2")}));
}

TEST(NewDataTrigger, AnObjectMissedByTheListingThatSetTheWatermarkIsFoundInTheOverlap) {
  Trigger t;
  t.poll({object("z", minutes(5))});
  t.clock.advance(minutes(10));
  // "m" was created a second before "z2" but finished after the listing had passed "m".
  ASSERT_TRUE(t.poll({object("z", minutes(5)), object("z2", minutes(61))}));
  t.clock.advance(minutes(10));
  auto fired = t.poll({object("m", minutes(61) - seconds(1)), object("z", minutes(5)), object("z2", minutes(61))});
  ASSERT_TRUE(fired);
  EXPECT_EQ(fired->name, "m");
  // The watermark never moves back.
  EXPECT_EQ(t.status->name, "z2");
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll({object("m", minutes(61) - seconds(1)), object("z", minutes(5)), object("z2", minutes(61))}));
}

TEST(NewDataTrigger, OldObjectsOutsideTheOverlapAreNeverNew) {
  Trigger t;
  t.poll({object("z", minutes(50))});
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll({object("a", minutes(10)), object("z", minutes(50))}));
}

TEST(NewDataTrigger, WithoutItsStateTheOverlapIsEmptyNeverAReplay) {
  // A restart that lost the annotation (the watermark came from a run): nothing before it is new.
  Trigger t;
  t.status = crd::DataWatermark{T0 + minutes(61), "z2", 0, 0, T0};
  t.clock.advance(minutes(10));
  EXPECT_FALSE(t.poll({object("m", minutes(61) - seconds(1)), object("z2", minutes(61))}));
}

TEST(NewDataTrigger, ABlockedFiringKeepsItsDataPending) {
  Trigger t;
  t.poll({});
  t.clock.advance(minutes(10));
  EXPECT_TRUE(t.poll({object("a", minutes(61))}, /*runCreated=*/false));
  EXPECT_EQ(t.status->pendingObjects, 1);
  t.clock.advance(minutes(10));
  EXPECT_TRUE(t.poll({object("a", minutes(61))}));
  EXPECT_EQ(t.status->pendingObjects, 0);
}

TEST(NewDataTrigger, APollErrorKeepsTheWatermarkAndSaysWhy) {
  Trigger t;
  t.poll({object("a", minutes(1))});
  t.clock.advance(minutes(10));
  DataPoll failed{t.clock.now(), std::nullopt, "403: the service account may not list gs://b/p"};
  auto decision = decideNewData(t.spec, t.status, t.state, failed, t.clock.now());
  EXPECT_EQ(decision.pollError, failed.error);
  EXPECT_FALSE(decision.fire);
  EXPECT_EQ(decision.status.name, "a");
  EXPECT_EQ(decision.status.lastPollTime, t.clock.now());
  EXPECT_EQ(decision.nextPoll, t.clock.now() + minutes(10));
}

TEST(NewDataTrigger, NoPollKeepsEverythingAndSaysWhenTheNextIsDue) {
  Trigger t;
  EXPECT_EQ(nextDataPoll(t.spec, t.status, t.state, t.clock.now()), t.clock.now());
  t.poll({object("a", minutes(1))});
  t.clock.advance(minutes(3));
  auto decision = decideNewData(t.spec, t.status, t.state, std::nullopt, t.clock.now());
  EXPECT_EQ(decision.status.lastPollTime, t.clock.now() - minutes(3));
  EXPECT_EQ(decision.nextPoll, t.clock.now() + minutes(7));
}

TEST(NewDataTrigger, MemoryStaysBoundedForAHugeListing) {
  Trigger t;
  t.poll({});
  t.clock.advance(minutes(10));
  NewDataScan scan(false, std::nullopt, t.state);
  for (int i = 0; i < 20000; ++i) scan.add(object("o" + std::to_string(i), minutes(61) + std::chrono::milliseconds(i), 1));
  EXPECT_EQ(scan.pendingObjects(), 20000);
  EXPECT_EQ(scan.pendingBytes(), 20000);
  auto state = scan.stateAfter(*scan.newestPending(), std::nullopt);
  EXPECT_LE(state.remembered.size(), kDataOverlapMaxObjects);
  // What was dropped from memory moves the window's start: it is never read as new again.
  EXPECT_GE(*state.overlapSince, T0 + minutes(61) + std::chrono::milliseconds(20000 - kDataOverlapMaxObjects - 1));
}

TEST(NewDataTrigger, StateRoundTripsThroughItsAnnotation) {
  DataState state;
  state.watermark = DataPosition{T0 + std::chrono::milliseconds(1234), "x/y.parquet"};
  state.overlapSince = T0;
  state.lastGrowth = T0 + minutes(1);
  state.remembered = {{"x/y.parquet", "17"}, {"x/a", "3"}};
  EXPECT_EQ(parseDataState(formatDataState(state)), state);
  EXPECT_FALSE(parseDataState("not json"));
}

}  // namespace
}  // namespace vto::reconcilers
