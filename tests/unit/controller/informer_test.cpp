// The informer's list/watch state machine against a scripted API: resume from the last
// resourceVersion, relist on 410, back off on the simulated clock while the server is down.
#include "controller/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <set>

#include "tests/fakes/clock_fake.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using vto::testing::FakeClock;
using vto::testing::waitFor;

json configMap(const std::string& name, const std::string& rv) {
  return {{"metadata", {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}}};
}

// Lists return `items`; each watch runs the next script (or blocks until stopped when none is left).
// A watch that asks for the initial events is refused with 422, as by a server without the WatchList
// feature, unless setStreams(true); one that is served is recorded as watched from "stream".
class ScriptedWatchClient final : public KubeClient {
 public:
  using Script = std::function<void(const std::function<void(WatchEvent&&)>&)>;

  void setItems(json newItems, std::string rv) {
    std::lock_guard guard(mutex_);
    items_ = std::move(newItems);
    listVersion_ = std::move(rv);
  }
  void addScript(Script script) {
    std::lock_guard guard(mutex_);
    scripts_.push_back(std::move(script));
  }
  std::vector<std::string> watchedFrom() {
    std::lock_guard guard(mutex_);
    return watchedFrom_;
  }
  int lists() {
    std::lock_guard guard(mutex_);
    return lists_;
  }
  void setStreams(bool streams) {
    std::lock_guard guard(mutex_);
    streams_ = streams;
  }
  int refusals() {
    std::lock_guard guard(mutex_);
    return refusals_;
  }
  // Whether a watch is accepted (WatchOptions::onOpen) before its script runs: false is a server
  // that never answers.
  void setOpens(bool opens) { opens_ = opens; }
  std::vector<WatchOptions> watchOptions() {
    std::lock_guard guard(mutex_);
    return watchOptions_;
  }

  ListPage list(const Resource&, const std::string&, const ListOptions&) override {
    std::lock_guard guard(mutex_);
    ++lists_;
    return {items_, listVersion_, ""};
  }
  void watch(const Resource&, const std::string&, const WatchOptions& options,
             const std::function<void(WatchEvent&&)>& onEvent, std::stop_token stop) override {
    Script script;
    {
      std::unique_lock lock(mutex_);
      if (options.sendInitialEvents && !streams_) {
        ++refusals_;
        throw ApiError(Status{422, "Invalid", "sendInitialEvents: Forbidden: unless the WatchList feature gate is enabled", {}});
      }
      watchedFrom_.push_back(options.sendInitialEvents ? "stream" : options.resourceVersion);
      watchOptions_.push_back(options);
      if (opens_ && options.onOpen) options.onOpen();
      if (scripts_.empty()) {
        std::condition_variable_any idle;
        idle.wait(lock, stop, [] { return false; });
        return;
      }
      script = std::move(scripts_.front());
      scripts_.pop_front();
    }
    script(onEvent);
  }
  json get(const Resource&, const std::string&, const std::string&) override { return {}; }
  json create(const Resource&, const std::string&, const json& o) override { return o; }
  json update(const Resource&, const std::string&, const json& o) override { return o; }
  json updateStatus(const Resource&, const std::string&, const json& o) override { return o; }
  json patch(const Resource&, const std::string&, const std::string&, PatchType, const json& b,
             const std::string&, bool, const std::string&) override { return b; }
  void remove(const Resource&, const std::string&, const std::string&) override {}

 private:
  std::mutex mutex_;
  json items_ = json::array();
  std::string listVersion_ = "1";
  std::deque<Script> scripts_;
  std::vector<std::string> watchedFrom_;
  int lists_ = 0;
  bool streams_ = false;
  int refusals_ = 0;
  std::atomic<bool> opens_{true};
  std::vector<WatchOptions> watchOptions_;
};

// What the handlers were told, in order: each object's name, with "@resourceVersion" when asked.
class Notified {
 public:
  explicit Notified(bool withVersion = false) : withVersion_(withVersion) {}
  Informer::Handler handler() {
    return [this](const json& o) {
      std::lock_guard guard(mutex_);
      std::string name = o["metadata"]["name"];
      names_.push_back(withVersion_ ? name + "@" + o["metadata"]["resourceVersion"].get<std::string>() : name);
    };
  }
  std::vector<std::string> names() {
    std::lock_guard guard(mutex_);
    return names_;
  }

 private:
  bool withVersion_;
  std::mutex mutex_;
  std::vector<std::string> names_;
};

class InformerUnitTest : public ::testing::Test {
 protected:
  InformerOptions options() {
    return {.resource = {"", "v1", "configmaps", true}, .namespaces = {"ns"}};
  }
  FakeClock clock;
  ScriptedWatchClient client;
};

TEST_F(InformerUnitTest, ResumesFromTheLastResourceVersionAfterADroppedWatch) {
  client.setItems(json::array({configMap("a", "5")}), "10");
  client.addScript([](auto& onEvent) {
    onEvent({"ADDED", configMap("b", "11")});
    onEvent({"BOOKMARK", {{"metadata", {{"resourceVersion", "15"}}}}});
  });  // then the connection ends
  Informer informer(client, clock, options());
  Notified notified;
  informer.addHandler(notified.handler());
  informer.start();
  ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == 2; }, 5s));
  EXPECT_EQ(client.watchedFrom(), (std::vector<std::string>{"10", "15"}));
  EXPECT_EQ(client.lists(), 1) << "a dropped watch resumes without listing again";
  EXPECT_TRUE(informer.hasSynced());
  EXPECT_TRUE(informer.cache().get({"ns", "b"}));
  informer.stop();
  EXPECT_EQ(notified.names(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(InformerUnitTest, GoneMeansAFullRelistThatDropsWhatWasDeletedMeanwhile) {
  client.setItems(json::array({configMap("a", "5"), configMap("b", "6")}), "10");
  client.addScript([&](auto& onEvent) {
    // While we were away "b" was deleted and the history compacted.
    client.setItems(json::array({configMap("a", "5")}), "30");
    onEvent({"ERROR", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}, {"message", "too old"}}});
  });
  Informer informer(client, clock, options());
  informer.start();
  ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == 2; }, 5s));
  EXPECT_EQ(client.watchedFrom(), (std::vector<std::string>{"10", "30"}));
  EXPECT_EQ(informer.listCount(), 2);
  EXPECT_FALSE(informer.cache().get({"ns", "b"}));
  EXPECT_EQ(clock.waiterCount(), 0u) << "a relist after 410 needs no backoff";
  EXPECT_EQ(client.refusals(), 1) << "a server that refused to stream once is listed from then on";
  informer.stop();
}

json endOfInitialEvents(const std::string& rv) {
  return {{"metadata", {{"resourceVersion", rv}, {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
}

TEST_F(InformerUnitTest, SyncsFromAStreamedWatchWithoutAListRequest) {
  client.setStreams(true);
  client.addScript([](auto& onEvent) {
    onEvent({"ADDED", configMap("a", "5")});
    onEvent({"ADDED", configMap("b", "6")});
    onEvent({"BOOKMARK", endOfInitialEvents("10")});
    onEvent({"MODIFIED", configMap("a", "11")});
  });  // then the connection ends
  Informer informer(client, clock, options());
  Notified notified(/*withVersion=*/true);
  informer.addHandler(notified.handler());
  informer.start();
  ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == 2; }, 5s));
  EXPECT_EQ(client.watchedFrom(), (std::vector<std::string>{"stream", "11"})) << "synced, then resumed";
  EXPECT_EQ(client.lists(), 0);
  EXPECT_EQ(informer.listCount(), 1);
  EXPECT_TRUE(informer.hasSynced());
  informer.stop();
  EXPECT_EQ(notified.names(), (std::vector<std::string>{"a@5", "b@6", "a@11"}));
}

// A fresh CRD's (or a restarted server's) watch cache refuses watches for a second while it fills, but
// serves a list: the sync lists at once (as client-go's reflector does) instead of waiting; a throttled
// client's 429 would still wait its Retry-After.
TEST_F(InformerUnitTest, AWatchCacheStillFillingIsListedAtOnceInsteadOfWaitedFor) {
  client.setStreams(true);
  client.setItems(json::array({configMap("a", "3")}), "4");
  client.addScript([](auto&) {
    throw ApiError(Status{429, "TooManyRequests", "storage is (re)initializing", {}}, std::chrono::seconds(1));
  });
  Informer informer(client, clock, options());
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.hasSynced(); }, 5s)) << "synced without the clock moving";
  EXPECT_EQ(client.lists(), 1);
  ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == 2; }, 5s));
  EXPECT_EQ(client.watchedFrom(), (std::vector<std::string>{"stream", "4"}));
  EXPECT_TRUE(informer.cache().get({"ns", "a"}));
  informer.stop();
}

// A stream cut before its end bookmark is no sync: the next watch streams again (never resumes from
// the middle of the initial events), and what the completed sync did not bring is gone.
TEST_F(InformerUnitTest, AStreamCutBeforeItsEndSyncsAgainAndDropsWhatItDidNotBring) {
  client.setStreams(true);
  client.addScript([](auto& onEvent) {
    onEvent({"ADDED", configMap("a", "5")});
    onEvent({"ADDED", configMap("b", "6")});
    onEvent({"BOOKMARK", {{"metadata", {{"resourceVersion", "7"}}}}});  // not the end
  });
  client.addScript([](auto& onEvent) {
    onEvent({"ADDED", configMap("a", "5")});  // "b" was deleted meanwhile
    onEvent({"BOOKMARK", endOfInitialEvents("30")});
  });
  Informer informer(client, clock, options());
  Notified notified;
  informer.addHandler(notified.handler());
  informer.start();
  ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == 3; }, 5s));
  EXPECT_EQ(client.watchedFrom(), (std::vector<std::string>{"stream", "stream", "30"}));
  EXPECT_EQ(informer.listCount(), 1);
  EXPECT_TRUE(informer.cache().get({"ns", "a"}));
  EXPECT_FALSE(informer.cache().get({"ns", "b"}));
  informer.stop();
  EXPECT_EQ(notified.names(), (std::vector<std::string>{"a", "b", "b"})) << "a unchanged by the second sync; b added, then gone";
}

TEST_F(InformerUnitTest, BacksOffOnTheClockWhileTheServerIsDown) {
  for (int i = 0; i < 3; ++i) {
    client.addScript([](auto&) { throw ApiError(Status{0, "", "connection refused", {}}); });
  }
  Informer informer(client, clock, options());
  informer.start();
  // 200 ms, then 400 ms, then 800 ms: each retry waits for the clock, not for real time.
  for (auto delay : {200ms, 400ms, 800ms}) {
    ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
    auto watches = client.watchedFrom().size();
    clock.advance(delay - 1ms);
    ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
    EXPECT_EQ(client.watchedFrom().size(), watches) << "retried before " << delay.count() << " ms";
    clock.advance(1ms);
    ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == watches + 1; }, 5s));
  }
  informer.stop();
}

TEST_F(InformerUnitTest, AQuietWatchCutByItsIdleLimitRestartsAfterTheLeastBackoffEveryTime) {
  // A resource nobody changes, on a server that sends no bookmark within the idle limit: each watch is
  // accepted, stays open for the limit and is cut. That is a working link, not a failing server: the
  // backoff must not double (to 30 s, which is stale with a short limit).
  // A watch is measured on the watch clock alone: each stays open for the limit on it.
  auto opts = options();
  opts.streamInitialEvents = false;
  opts.watchIdleTimeout = 2s;
  std::atomic<std::int64_t> watchNanos{0};
  opts.watchClock = [&] { return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(watchNanos.load())); };
  for (int i = 0; i < 4; ++i) {
    client.addScript([&watchNanos, limit = opts.watchIdleTimeout](auto&) {
      watchNanos += std::chrono::nanoseconds(limit).count();
      throw ApiError(Status{0, "", "watch: nothing received in time", {}});
    });
  }
  Informer informer(client, clock, opts);
  informer.start();
  for (int cut = 0; cut < 4; ++cut) {
    ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));
    auto watches = client.watchedFrom().size();
    clock.advance(200ms);
    ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == watches + 1; }, 5s))
        << "cut " << cut << ": not restarted after 200 ms";
  }
  informer.stop();
}

json withUnreadFields(json object) {
  object["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}, {"fieldsV1", {{"f:spec", json::object()}}}}});
  object["metadata"]["annotations"] = {{"kubectl.kubernetes.io/last-applied-configuration", "{\"spec\": {}}"},
                                       {"team.example/owner", "ml"}};
  return object;
}

TEST_F(InformerUnitTest, CachedObjectsAreStrippedOfWhatVtoNeverReads) {
  client.setItems(json::array({withUnreadFields(configMap("listed", "5"))}), "10");
  client.addScript([](auto& onEvent) { onEvent({"ADDED", withUnreadFields(configMap("watched", "11"))}); });
  Informer informer(client, clock, options());
  std::atomic<int> notifiedWithManagedFields{0};
  informer.addHandler([&](const json& o) {
    if (o["metadata"].contains("managedFields")) ++notifiedWithManagedFields;
  });
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.cache().get({"ns", "watched"}) != nullptr; }, 5s));
  for (const char* name : {"listed", "watched"}) {
    auto cached = *informer.cache().get({"ns", name});
    EXPECT_FALSE(cached["metadata"].contains("managedFields")) << name;
    EXPECT_FALSE(cached["metadata"]["annotations"].contains("kubectl.kubernetes.io/last-applied-configuration")) << name;
    EXPECT_EQ(cached["metadata"]["annotations"]["team.example/owner"], "ml") << "other annotations stay";
    EXPECT_EQ(cached["metadata"]["resourceVersion"], name == std::string("listed") ? "5" : "11");
  }
  EXPECT_EQ(notifiedWithManagedFields, 0) << "handlers see the cached form";
  informer.stop();
}

TEST_F(InformerUnitTest, ANullTransformKeepsObjectsWhole) {
  client.setItems(json::array({withUnreadFields(configMap("listed", "5"))}), "10");
  auto keepAll = options();
  keepAll.transform = nullptr;
  Informer informer(client, clock, keepAll);
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.hasSynced(); }, 5s));
  EXPECT_TRUE((*informer.cache().get({"ns", "listed"}))["metadata"].contains("managedFields"));
  informer.stop();
}

TEST(StripUnreadFields, DropsAnEmptiedAnnotationMapAndToleratesOddShapes) {
  json object = {{"metadata", {{"name", "a"},
                               {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}}};
  stripUnreadFields(object);
  EXPECT_EQ(object, (json{{"metadata", {{"name", "a"}}}}));
  json odd = {{"metadata", "not an object"}};
  stripUnreadFields(odd);
  EXPECT_EQ(odd["metadata"], "not an object");
  json scalar = 3;
  stripUnreadFields(scalar);
  EXPECT_EQ(scalar, 3);
}

}  // namespace
}  // namespace vto::controller

namespace vto::controller {
namespace {

TEST_F(InformerUnitTest, EachWatchAsksForBookmarksAJitteredServerTimeoutAndTheIdleLimit) {
  for (int i = 0; i < 8; ++i) client.addScript([](auto&) {});  // the server ends each watch at once
  auto opts = options();
  opts.watchTimeoutSeconds = 300;
  opts.watchIdleTimeout = 7s;
  Informer informer(client, clock, opts);
  informer.start();
  ASSERT_TRUE(waitFor([&] { return client.watchOptions().size() >= 9; }, 5s));
  informer.stop();
  std::set<int> timeouts;
  for (const auto& watch : client.watchOptions()) {
    EXPECT_TRUE(watch.allowWatchBookmarks);
    EXPECT_EQ(watch.idleTimeout, 7s);
    EXPECT_GE(watch.timeoutSeconds, 300);
    EXPECT_LE(watch.timeoutSeconds, 600);
    timeouts.insert(watch.timeoutSeconds);
  }
  EXPECT_GT(timeouts.size(), 1u) << "client-go's jitter: watches started together do not end together";
  EXPECT_GE(informer.watchRestarts(), 8);
}

TEST_F(InformerUnitTest, AWatchSilentForTwiceItsIdleLimitIsStaleUntilTheServerAnswersAgain) {
  // The watch was cut by its idle limit (the transport's timeout), and the API server stays silent.
  client.setOpens(false);
  client.addScript([](auto&) { throw ApiError(Status{0, "", "watch: nothing received in time", {}}); });
  auto opts = options();
  opts.streamInitialEvents = false;
  // Long enough that the accepted watch below (which the fake never cuts) is seen fresh before it
  // goes quiet for twice the limit again.
  opts.watchIdleTimeout = 1s;
  Informer informer(client, clock, opts);
  informer.start();
  ASSERT_TRUE(waitFor([&] { return clock.waiterCount() == 1; }, 5s));  // backing off, on the clock
  EXPECT_TRUE(waitFor([&] { return informer.stale(); }, 5s));
  EXPECT_GT(informer.quietFor(), 2s);
  // The API server answers again: the next watch is accepted, which is a sign of life before any event.
  client.setOpens(true);
  clock.advance(200ms);
  ASSERT_TRUE(waitFor([&] { return client.watchedFrom().size() == 2; }, 5s));
  EXPECT_TRUE(waitFor([&] { return !informer.stale(); }, 5s));
  EXPECT_EQ(client.watchedFrom(), (std::vector<std::string>{"1", "1"})) << "restarted from the last resourceVersion";
  EXPECT_EQ(informer.watchRestarts(), 1);
  EXPECT_EQ(client.lists(), 1) << "no relist: only 410 Gone means one";
  informer.stop();
}

}  // namespace
}  // namespace vto::controller
