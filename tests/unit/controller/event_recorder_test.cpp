// Events are aggregated: a repeat bumps count and lastTimestamp of the existing Event.
#include "controller/event_recorder.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/kube_client_fake.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using vto::testing::FakeClock;
using vto::testing::FakeKubeClient;

const json kObject = {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", "cm"}, {"namespace", "team"}, {"uid", "u-1"}}}};

std::vector<json> events(FakeKubeClient& client) {
  auto items = client.list(eventResource(), "team", {}).items;
  return std::vector<json>(items.begin(), items.end());
}

TEST(EventRecorderTest, RecordsACoreEventAboutTheObject) {
  FakeClock clock;
  FakeKubeClient client;
  KubeEventRecorder recorder(client, clock, "vto", "pod-1");
  recorder.event(kObject, EventType::Warning, "InvalidSpec", "spec.x must be positive");
  auto recorded = events(client);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0]["involvedObject"]["uid"], "u-1");
  EXPECT_EQ(recorded[0]["involvedObject"]["kind"], "ConfigMap");
  EXPECT_EQ(recorded[0]["type"], "Warning");
  EXPECT_EQ(recorded[0]["reason"], "InvalidSpec");
  EXPECT_EQ(recorded[0]["count"], 1);
  EXPECT_EQ(recorded[0]["source"]["component"], "vto");
  EXPECT_EQ(recorded[0]["firstTimestamp"], recorded[0]["lastTimestamp"]);
}

TEST(EventRecorderTest, RepeatsAreAggregated) {
  FakeClock clock;
  FakeKubeClient client;
  KubeEventRecorder recorder(client, clock, "vto", "pod-1");
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  clock.advance(90s);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.event(kObject, EventType::Normal, "Other", "something else");
  auto recorded = events(client);
  ASSERT_EQ(recorded.size(), 2u);
  const auto& synced = recorded[0]["reason"] == "Synced" ? recorded[0] : recorded[1];
  EXPECT_EQ(synced["count"], 3);
  EXPECT_NE(synced["firstTimestamp"], synced["lastTimestamp"]);
}

TEST(EventRecorderTest, ExpiredEventIsRecordedAnew) {
  FakeClock clock;
  FakeKubeClient client;
  KubeEventRecorder recorder(client, clock, "vto", "pod-1");
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  client.remove(eventResource(), "team", events(client)[0]["metadata"]["name"]);
  clock.advance(2h);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  auto recorded = events(client);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0]["count"], 1);
}

TEST(EventRecorderTest, FailuresAreSwallowed) {
  FakeClock clock;
  FakeKubeClient client;
  KubeEventRecorder recorder(client, clock, "vto", "pod-1");
  client.failWith(Status{503, "ServiceUnavailable", "down", {}});
  EXPECT_NO_THROW(recorder.event(kObject, EventType::Normal, "Synced", "all good"));
}

}  // namespace
}  // namespace vto::controller
