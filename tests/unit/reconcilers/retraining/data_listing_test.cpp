// The newData poll over a paginated listing (FakeGcsClient): pages streamed into the scan, caps and
// a broken server's repeated page token reported as a poll error.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/timestamp.h"
#include "reconcilers/retraining/data_listing.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/gcs_fake_client.h"

namespace vto::reconcilers {
namespace {

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");

std::string at(int seconds) { return rfc3339Exact(T0 + std::chrono::seconds(seconds)); }

struct Fixture : ::testing::Test {
  testing::FakeGcsClient gcs;
  testing::FakeClock clock{T0 + std::chrono::hours(1)};
  crd::NewDataTrigger trigger{"gs://data/in/", "", std::chrono::seconds(600), 1, 0, std::chrono::seconds(0)};
};

TEST_F(Fixture, ListsEveryPageAndCountsWhatIsNew) {
  for (int i = 0; i < 2500; ++i) gcs.put("data", "in/o" + std::to_string(100000 + i), 2, at(i));
  gcs.put("data", "other/x", 1, at(5000));  // outside the prefix
  crd::DataWatermark status{T0 + std::chrono::seconds(1999), "in/o101999", 0, 0, T0};
  auto poll = pollNewData(gcs, trigger, status, DataState{}, clock);
  ASSERT_TRUE(poll.scan) << poll.error;
  EXPECT_EQ(gcs.listCalls(), 3);
  EXPECT_EQ(poll.scan->listed(), 2500);
  EXPECT_EQ(poll.scan->pendingObjects(), 500);
  EXPECT_EQ(poll.scan->pendingBytes(), 1000);
  EXPECT_EQ(poll.scan->newestPending()->name, "in/o102499");
  EXPECT_EQ(poll.at, clock.now());
}

TEST_F(Fixture, ARepeatedPageTokenIsAPollError) {
  for (int i = 0; i < 2500; ++i) gcs.put("data", "in/o" + std::to_string(100000 + i), 2, at(i));
  gcs.repeatToken = "same";
  auto poll = pollNewData(gcs, trigger, std::nullopt, DataState{}, clock);
  EXPECT_FALSE(poll.scan);
  EXPECT_NE(poll.error.find("repeated a page token"), std::string::npos) << poll.error;
}

TEST_F(Fixture, ABadPrefixIsAPollErrorThatSaysTheForm) {
  trigger.gcsPrefix = "s3://data/in/";
  auto poll = pollNewData(gcs, trigger, std::nullopt, DataState{}, clock);
  EXPECT_FALSE(poll.scan);
  EXPECT_NE(poll.error.find("gs://BUCKET/PATH"), std::string::npos) << poll.error;
}

}  // namespace
}  // namespace vto::reconcilers
