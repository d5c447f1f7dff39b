// Events are written by one background thread (flush() waits for it) and aggregated: a repeat bumps
// count and lastTimestamp of the existing Event; repeats still queued merge into one write.
#include "controller/event_recorder.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "base/rfc3339.h"
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
  recorder.flush();
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
  recorder.flush();
  clock.advance(90s);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.event(kObject, EventType::Normal, "Other", "something else");
  recorder.flush();
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
  recorder.flush();
  client.remove(eventResource(), "team", events(client)[0]["metadata"]["name"]);
  clock.advance(2h);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.flush();
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
  recorder.flush();
  client.failWith(std::nullopt);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.flush();
  EXPECT_EQ(events(client).size(), 1u) << "the writer carries on after a failure";
}

// A KubeClient whose writes wait until the test opens the gate: an API server that is slow.
class GatedKubeClient final : public KubeClient {
 public:
  explicit GatedKubeClient(FakeKubeClient& inner) : inner_(inner) {}
  void open() {
    std::lock_guard guard(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Waits until `writers` writes have reached the gate (those writer threads are busy with them).
  void waitForBlockedWriter(int writers = 1) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return blocked_ >= writers || open_; });
  }
  json get(const Resource& r, const std::string& ns, const std::string& name) override { return inner_.get(r, ns, name); }
  ListPage list(const Resource& r, const std::string& ns, const ListOptions& o) override { return inner_.list(r, ns, o); }
  json create(const Resource& r, const std::string& ns, const json& object) override {
    gate();
    return inner_.create(r, ns, object);
  }
  json update(const Resource& r, const std::string& ns, const json& object) override { return inner_.update(r, ns, object); }
  json updateStatus(const Resource& r, const std::string& ns, const json& object) override {
    return inner_.updateStatus(r, ns, object);
  }
  json patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type, const json& body,
             const std::string& manager, bool force, const std::string& sub) override {
    gate();
    return inner_.patch(r, ns, name, type, body, manager, force, sub);
  }
  void remove(const Resource& r, const std::string& ns, const std::string& name) override { inner_.remove(r, ns, name); }
  void watch(const Resource&, const std::string&, const WatchOptions&, const std::function<void(WatchEvent&&)>&,
             std::stop_token) override {}

 private:
  void gate() {
    std::unique_lock lock(mutex_);
    ++blocked_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
    --blocked_;
  }
  FakeKubeClient& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int blocked_ = 0;
};

json objectNamed(const std::string& name) {
  return {{"apiVersion", "vto.dev/v1beta1"},
          {"kind", "TrainingRun"},
          {"metadata", {{"name", name}, {"namespace", "team"}, {"uid", "uid-" + name}}}};
}

// A recorder with one writer thread, stuck in its first write until gated.open(): everything
// recorded meanwhile stays queued.
EventRecorderOptions oneWriter(EventRecorderOptions options = {}) {
  options.writers = 1;
  return options;
}

struct BlockedWriter {
  explicit BlockedWriter(EventRecorderOptions options = {})
      : recorder(gated, clock, "vto", "pod-1", oneWriter(std::move(options))) {
    recorder.event(objectNamed("first"), EventType::Normal, "Blocker", "holds the writer");
    gated.waitForBlockedWriter();
  }
  FakeClock clock;
  FakeKubeClient fake;
  GatedKubeClient gated{fake};
  KubeEventRecorder recorder;
};

TEST(EventRecorderTest, RecordingNeverWaitsForTheApiServer) {
  BlockedWriter blocked;
  auto& [clock, fake, gated, recorder] = blocked;
  // The writer is stuck on the first write; these calls return regardless.
  for (int i = 0; i < 10; ++i) recorder.event(objectNamed("b" + std::to_string(i)), EventType::Normal, "JobCreated", "x");
  EXPECT_EQ(events(fake).size(), 0u);
  gated.open();
  recorder.flush();
  EXPECT_EQ(events(fake).size(), 11u);
  EXPECT_EQ(recorder.dropped(), 0u);
}

TEST(EventRecorderTest, QueuedRepeatsBecomeOneWriteWithTheirCount) {
  BlockedWriter blocked;
  auto& [clock, fake, gated, recorder] = blocked;
  auto start = clock.now();
  for (int i = 0; i < 5; ++i) {
    recorder.event(objectNamed("a"), EventType::Warning, "QuotaExceeded", "Vertex said 429");
    clock.advance(1s);
  }
  gated.open();
  recorder.flush();
  EXPECT_EQ(fake.calls(), 2) << "one create for the blocker, one for five repeats";
  auto recorded = events(fake);
  ASSERT_EQ(recorded.size(), 2u);
  const auto& quota = recorded[0]["reason"] == "QuotaExceeded" ? recorded[0] : recorded[1];
  EXPECT_EQ(quota["count"], 5);
  EXPECT_EQ(quota["firstTimestamp"], rfc3339(start));
  EXPECT_EQ(quota["lastTimestamp"], rfc3339(start + 4s));
}

TEST(EventRecorderTest, ARepeatAfterTheWindowIsANewEvent) {
  FakeClock clock;
  FakeKubeClient client;
  EventRecorderOptions options;
  options.aggregationWindow = 10min;
  KubeEventRecorder recorder(client, clock, "vto", "pod-1", options);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.flush();
  clock.advance(9min);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.flush();
  ASSERT_EQ(events(client).size(), 1u);
  EXPECT_EQ(events(client)[0]["count"], 2);
  clock.advance(11min);
  recorder.event(kObject, EventType::Normal, "Synced", "all good");
  recorder.flush();
  auto recorded = events(client);
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0]["count"].get<int>() + recorded[1]["count"].get<int>(), 3);
  EXPECT_NE(recorded[0]["metadata"]["name"], recorded[1]["metadata"]["name"]);
}

TEST(EventRecorderTest, AFullQueueDropsAndCountsNewEvents) {
  EventRecorderOptions options;
  options.queueCapacity = 3;
  uint64_t reported = 0;  // what cmd/ adds to vto_events_dropped_total
  options.onDropped = [&reported](uint64_t n) { reported += n; };
  BlockedWriter blocked(options);
  auto& [clock, fake, gated, recorder] = blocked;
  for (int i = 0; i < 5; ++i) recorder.event(objectNamed("q" + std::to_string(i)), EventType::Normal, "JobCreated", "x");
  // A repeat of a queued event takes no place in the queue, so it is not dropped.
  recorder.event(objectNamed("q0"), EventType::Normal, "JobCreated", "x");
  EXPECT_EQ(recorder.dropped(), 2u);
  EXPECT_EQ(reported, 2u);
  gated.open();
  recorder.flush();
  EXPECT_EQ(events(fake).size(), 4u);
}

TEST(EventRecorderTest, WritersWorkInParallelButNeverOnTheSameEvent) {
  FakeClock clock;
  FakeKubeClient fake;
  GatedKubeClient gated(fake);
  EventRecorderOptions options;
  options.writers = 4;
  options.backlogPerWriter = 0;  // every writer works whatever the backlog
  KubeEventRecorder recorder(gated, clock, "vto", "pod-1", options);
  for (const char* name : {"x", "y", "z"}) recorder.event(objectNamed(name), EventType::Normal, "JobCreated", "x");
  gated.waitForBlockedWriter(3);  // three distinct Events are being written at once
  // x again, while x's first write is in flight, then w: the idle fourth writer must pass over x
  // (two writes of x at once would create two Events) and take w.
  recorder.event(objectNamed("x"), EventType::Normal, "JobCreated", "x");
  recorder.event(objectNamed("w"), EventType::Normal, "JobCreated", "x");
  gated.waitForBlockedWriter(4);
  gated.open();
  recorder.flush();
  auto recorded = events(fake);
  ASSERT_EQ(recorded.size(), 4u);
  for (const auto& event : recorded) {
    EXPECT_EQ(event["count"], event["involvedObject"]["name"] == "x" ? 2 : 1) << event.dump();
  }
}

TEST(EventRecorderTest, ExtraWritersJoinUnderABacklog) {
  FakeClock clock;
  FakeKubeClient fake;
  GatedKubeClient gated(fake);
  EventRecorderOptions options;
  options.writers = 3;
  options.backlogPerWriter = 2;
  KubeEventRecorder recorder(gated, clock, "vto", "pod-1", options);
  recorder.event(objectNamed("a"), EventType::Normal, "JobCreated", "x");
  gated.waitForBlockedWriter(1);  // the first writer holds a; nothing waits
  for (const char* name : {"b", "c", "d"}) recorder.event(objectNamed(name), EventType::Normal, "JobCreated", "x");
  gated.waitForBlockedWriter(2);  // three waiting (more than 2): the second writer joins, takes b
  for (const char* name : {"e", "f", "g"}) recorder.event(objectNamed(name), EventType::Normal, "JobCreated", "x");
  gated.waitForBlockedWriter(3);  // five waiting (more than 2 x 2): the third joins
  gated.open();
  recorder.flush();
  EXPECT_EQ(events(fake).size(), 7u);
}

TEST(EventRecorderTest, DestructionWritesWhatIsQueued) {
  FakeClock clock;
  FakeKubeClient fake;
  {
    GatedKubeClient gated(fake);
    KubeEventRecorder recorder(gated, clock, "vto", "pod-1");
    recorder.event(objectNamed("a"), EventType::Normal, "JobCreated", "x");
    gated.waitForBlockedWriter();
    recorder.event(objectNamed("b"), EventType::Normal, "JobCreated", "x");
    recorder.event(objectNamed("c"), EventType::Normal, "JobCreated", "x");
    gated.open();
  }
  EXPECT_EQ(events(fake).size(), 3u);
}

TEST(EventRecorderTest, EventsWithTheSameTimestampGetDistinctNames) {
  FakeClock clock;
  FakeKubeClient client;
  KubeEventRecorder recorder(client, clock, "vto", "pod-1");
  recorder.event(kObject, EventType::Normal, "One", "first");
  recorder.event(kObject, EventType::Normal, "Two", "second");
  recorder.flush();
  EXPECT_EQ(events(client).size(), 2u);
}

}  // namespace
}  // namespace vto::controller
