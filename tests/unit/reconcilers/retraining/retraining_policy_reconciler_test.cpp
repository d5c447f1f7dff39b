// The RetrainingPolicy reconciler's act against the fake API server and a simulated clock: a run that
// exists already is a success when this policy owns it and a reported conflict when it does not, and a
// pass that sees stale caches counts nothing twice.
#include "base/rfc3339.h"
#include "reconcilers/retraining/wiring.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "crd/timestamp.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/event_recorder_fake.h"
#include "tests/fakes/gcs_fake_client.h"
#include "tests/fakes/kube_client_fake.h"
#include "tests/support/wait.h"
#include "vertex/prometheus_client.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");
constexpr const char* kUid = "7d1e0c5a-0000-1111-2222-333344445555";

class PolicyReconcilerTest : public ::testing::Test {
 protected:
  PolicyReconcilerTest()
      : runs(crd::kRetrainingPolicyLabel),
        clock(T0),
        policyController(policies, runs, {kube, events, clock, {}, {}, nullptr, &runWrites}),
        reconciler(policyController.reconciler()) {
    json policy = {{"apiVersion", "vto.dev/v1beta1"},
                   {"kind", "RetrainingPolicy"},
                   {"metadata", {{"name", "fraud"}, {"namespace", "risk"}, {"uid", kUid}, {"generation", 1},
                                 {"creationTimestamp", rfc3339Exact(T0)}}},
                   {"spec", json::parse(R"({
                     "template": {"spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                           "resources": {"machineType": "n1-standard-4"},
                                           "baseOutputDirectory": "gs://bucket/fraud"}},
                     "triggers": {"schedule": {"cron": "* * * * *"}}})")}};
    kube.create(retrainingPolicyResource(), "risk", policy);
    sync();
  }
  // What the informers would show after our writes.
  void sync() {
    policies.upsert(kube.get(retrainingPolicyResource(), "risk", "fraud"));
    for (const auto& run : kube.list(trainingRunResource(), "risk", {}).items) runs.upsert(run);
  }
  // The run's job succeeded at 00:01:30, as the TrainingRun reconciler would report it.
  void succeed(const std::string& name) {
    auto run = kube.get(trainingRunResource(), "risk", name);
    run["status"] = {{"phase", "Succeeded"}, {"completionTime", "2026-12-01T00:01:30Z"}};
    kube.updateStatus(trainingRunResource(), "risk", run);
    sync();
  }
  json status() { return kube.get(retrainingPolicyResource(), "risk", "fraud")["status"]; }
  std::string readyReason() {
    json current = status();
    for (const auto& c : current["conditions"])
      if (c["type"] == "Ready") return c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
    return "";
  }

  testing::FakeKubeClient kube;
  controller::ObjectCache policies;
  controller::ObjectCache runs;
  testing::FakeClock clock;
  testing::RecordingEvents events;
  controller::OwnWrites runWrites;  // the TrainingRun reconciler's, in `vto run`
  RetrainingController policyController;
  RetrainingPolicyReconciler& reconciler;
};

TEST_F(PolicyReconcilerTest, CreatesTheSlotsRunAndRequeuesAtTheNextSlot) {
  clock.advance(seconds(61));
  auto result = reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(result.requeueAfter, seconds(59));
  auto run = kube.get(trainingRunResource(), "risk", "fraud-1796083260");
  EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-reason"], "Schedule");
  EXPECT_TRUE(events.has("SuccessfulCreate"));
  EXPECT_EQ(status()["lastScheduleTime"], "2026-12-01T00:01:00Z");
  EXPECT_EQ(readyReason(), "True/Reconciled");
}

TEST_F(PolicyReconcilerTest, ARunItOwnsAlreadyIsASuccess) {
  clock.advance(seconds(61));
  reconciler.reconcile({"risk", "fraud"});
  // A crash before the status write: the next process sees neither status nor run in its caches.
  kube.updateStatus(retrainingPolicyResource(), "risk",
                    [&] { auto p = kube.get(retrainingPolicyResource(), "risk", "fraud"); p.erase("status"); return p; }());
  policies.upsert(kube.get(retrainingPolicyResource(), "risk", "fraud"));
  testing::RecordingEvents restartedEvents;
  RetrainingController restarted(policies, runs, {kube, restartedEvents, clock, {}, {}, nullptr, &runWrites});
  EXPECT_NO_THROW(restarted.reconciler().reconcile({"risk", "fraud"}));
  EXPECT_FALSE(restartedEvents.has("SuccessfulCreate"));
  EXPECT_EQ(kube.list(trainingRunResource(), "risk", {}).items.size(), 1u);
  EXPECT_EQ(status()["lastScheduleTime"], "2026-12-01T00:01:00Z");
}

TEST_F(PolicyReconcilerTest, AForeignRunOfTheSameNameIsAWarningAndACondition) {
  kube.create(trainingRunResource(), "risk",
              {{"apiVersion", "vto.dev/v1beta1"}, {"kind", "TrainingRun"},
               {"metadata", {{"name", "fraud-1796083260"}, {"namespace", "risk"}, {"uid", "someone-elses"}}}});
  clock.advance(seconds(61));
  EXPECT_NO_THROW(reconciler.reconcile({"risk", "fraud"}));
  EXPECT_TRUE(events.hasWarning("RunNameConflict"));
  EXPECT_EQ(readyReason(), "False/RunNameConflict");
  EXPECT_TRUE(status()["active"].empty());
  // The condition stays until a run is created again.
  sync();
  clock.advance(seconds(10));
  reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(readyReason(), "False/RunNameConflict");
  sync();
  clock.advance(seconds(50));
  reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(readyReason(), "True/Reconciled");
}

TEST_F(PolicyReconcilerTest, AStaleRunCacheDoesNotCountARunTwice) {
  clock.advance(seconds(61));
  reconciler.reconcile({"risk", "fraud"});
  succeed("fraud-1796083260");
  clock.advance(seconds(30));
  reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(status()["counts"]["succeeded"], 1);
  EXPECT_EQ(kube.get(trainingRunResource(), "risk", "fraud-1796083260")["metadata"]["annotations"][kCountedAnnotation],
            "true");
  // The policy's cache has the new status; the run's cache has not seen the mark yet.
  policies.upsert(kube.get(retrainingPolicyResource(), "risk", "fraud"));
  reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(status()["counts"]["succeeded"], 1);
  sync();
  reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(status()["counts"]["succeeded"], 1);
}

TEST_F(PolicyReconcilerTest, HistoryBeyondTheLimitIsDeleted) {
  auto policy = kube.get(retrainingPolicyResource(), "risk", "fraud");
  policy["spec"]["successfulRunsHistoryLimit"] = 0;
  kube.update(retrainingPolicyResource(), "risk", policy);
  sync();
  clock.advance(seconds(61));
  reconciler.reconcile({"risk", "fraud"});
  succeed("fraud-1796083260");
  reconciler.reconcile({"risk", "fraud"});
  EXPECT_TRUE(kube.list(trainingRunResource(), "risk", {}).items.empty());
  EXPECT_TRUE(events.has("SuccessfulDelete"));
  EXPECT_EQ(status()["lastSuccessfulRun"]["modelUri"], "gs://bucket/fraud/fraud-1796083260/model/");
}

// Tenancy: team "risk" may use gs://bucket/ only; namespaces labelled tier=gpu (not risk, labelled
// tier=ml) may use anything. A label rule: the namespace is read, once per NamespaceLabels::kFreshFor.
TEST_F(PolicyReconcilerTest, ADataPrefixOutsideTheTenantsRuleIsRefusedAndNeverListed) {
  kube.create({"", "v1", "namespaces", false}, "", {{"metadata", {{"name", "risk"}, {"labels", {{"tier", "ml"}}}}}});
  auto rules = governance::parseTenancyRules(json::parse(R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["risk"], "bucketPrefixes": ["gs://bucket/"]},
                                                       {"namespaceSelector": {"matchLabels": {"tier": "gpu"}}}])"));
  testing::FakeGcsClient gcs;
  RetrainingController guarded(policies, runs,
                               {kube, events, clock, {&gcs, nullptr}, {rules, {"test-project", "us-central1"}}, nullptr,
                                &runWrites});
  auto useData = [&](const std::string& prefix) {
    kube.patch(retrainingPolicyResource(), "risk", "fraud", controller::PatchType::Merge,
               {{"spec", {{"triggers", {{"schedule", nullptr}, {"newData", {{"gcsPrefix", prefix}}}}}}}}, "", false, "");
    sync();
    guarded.onPolicyEvent(*policies.get({"risk", "fraud"}));
  };
  useData("gs://other-team/data/");
  int kubeCalls = kube.calls();
  guarded.polling().pollDue();  // the trigger poller checks the rule on the object it would list for
  guarded.reconciler().reconcile({"risk", "fraud"});
  EXPECT_EQ(gcs.listCalls(), 0) << "refused before any listing with the operator's identity";
  auto valid = [&] {
    json current = status();
    for (const auto& c : current["conditions"])
      if (c["type"] == "Valid") return c;
    return json::object();
  };
  EXPECT_EQ(valid().value("reason", ""), "TenantPolicyViolation");
  EXPECT_EQ(valid().value("message", "").rfind("spec.triggers.newData.gcsPrefix: location \"gs://other-team/data/\" is not allowed", 0), 0u)
      << valid();
  EXPECT_TRUE(events.has("TenantPolicyViolation"));
  EXPECT_TRUE(kube.list(trainingRunResource(), "risk", {}).items.empty());
  sync();
  int afterFirst = kube.calls();
  guarded.reconciler().reconcile({"risk", "fraud"});
  EXPECT_EQ(kube.calls(), afterFirst) << "the namespace read a moment ago is not read again; status is unchanged";
  EXPECT_GT(afterFirst, kubeCalls);

  useData("gs://bucket/data/");
  guarded.polling().pollDue();
  guarded.reconciler().reconcile({"risk", "fraud"});
  EXPECT_EQ(gcs.listCalls(), 1) << "inside the rule: listed";
  EXPECT_EQ(valid().value("status", ""), "True");
}

// A tenant's Prometheus that never answers (until the test ends) and a neighbour's that answers at
// once with the value it is given: what a poll holds a trigger-poll worker for.
class HangingPrometheus final : public vertex::HttpTransport {
 public:
  vertex::HttpResponse send(const vertex::HttpRequest& request) override {
    std::unique_lock lock(mutex_);
    if (request.url.find("//hole") != std::string::npos) {
      ++holesAsked_;
      mostHungAtOnce_ = std::max(mostHungAtOnce_, ++hungAtOnce_);
      released_.wait(lock, [&] { return release_; });
      --hungAtOnce_;
      throw vertex::TransportError("no answer before the request's deadline");
    }
    ++goodAsked_;
    return {200, {}, R"({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {},
                         "value": [1764547200, ")" + value_ + R"("]}]}})"};
  }
  void setValue(std::string value) {
    std::lock_guard lock(mutex_);
    value_ = std::move(value);
  }
  void releaseAll() {
    {
      std::lock_guard lock(mutex_);
      release_ = true;
    }
    released_.notify_all();
  }
  int goodAsked() {
    std::lock_guard lock(mutex_);
    return goodAsked_;
  }
  int hungAtOnce() {
    std::lock_guard lock(mutex_);
    return hungAtOnce_;
  }
  int mostHungAtOnce() {
    std::lock_guard lock(mutex_);
    return mostHungAtOnce_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  bool release_ = false;
  std::string value_ = "0.95";
  int goodAsked_ = 0, holesAsked_ = 0, hungAtOnce_ = 0, mostHungAtOnce_ = 0;
};

// Four hostile namespaces, each within its one-poll-per-namespace share, whose metric triggers name a
// Prometheus that never answers: as wired in `vto run` (four workers, namespaces not yet known to
// answer sharing two), they cannot hold every trigger-poll worker, and a neighbour's metric breach
// still starts its run at its next poll.
TEST_F(PolicyReconcilerTest, FourHangingNamespacesCannotDelayANeighboursMetricTrigger) {
  HangingPrometheus transport;
  vertex::PrometheusClient prometheus(transport, false);
  RetrainingController triggers(policies, runs, {kube, events, clock, {nullptr, &prometheus}, {}, nullptr, &runWrites});
  auto metricPolicy = [&](const std::string& ns, const std::string& url) {
    json policy = {{"apiVersion", "vto.dev/v1beta1"},
                   {"kind", "RetrainingPolicy"},
                   {"metadata", {{"name", "watch"}, {"namespace", ns}, {"uid", "uid-" + ns}, {"generation", 1},
                                 {"creationTimestamp", rfc3339Exact(T0)}}},
                   {"spec", json::parse(R"({
                     "template": {"spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                           "resources": {"machineType": "n1-standard-4"},
                                           "baseOutputDirectory": "gs://bucket/watch"}},
                     "triggers": {"metric": {"prometheusUrl": "", "query": "auc", "below": 0.85, "for": "0s",
                                             "pollInterval": "10s"}}})")}};
    policy["spec"]["triggers"]["metric"]["prometheusUrl"] = url;
    kube.create(retrainingPolicyResource(), ns, policy);
  };
  // What the informers show, and the handler `vto run` registers.
  auto show = [&](const std::string& ns) {
    auto object = kube.get(retrainingPolicyResource(), ns, "watch");
    policies.upsert(object);
    for (const auto& run : kube.list(trainingRunResource(), ns, {}).items) runs.upsert(run);
    triggers.onPolicyEvent(object);
  };
  auto pass = [&](const std::string& ns) {
    triggers.reconciler().reconcile({ns, "watch"});
    show(ns);
  };
  metricPolicy("good", "http://good-prom:9090");
  show("good");
  std::jthread loop([&](std::stop_token stop) { triggers.polling().run(stop); });
  // The neighbour answers fast and healthy: a namespace known to answer.
  ASSERT_TRUE(testing::waitFor([&] { return transport.goodAsked() == 1; }, std::chrono::seconds(10)));
  pass("good");
  ASSERT_TRUE(kube.list(trainingRunResource(), "good", {}).items.empty()) << "0.95 is no breach";

  for (const auto* ns : {"h1", "h2", "h3", "h4"}) {
    metricPolicy(ns, "http://hole:9090");
    show(ns);
  }
  clock.advance(seconds(1));
  ASSERT_TRUE(testing::waitFor([&] { return transport.hungAtOnce() == 2; }, std::chrono::seconds(10)));

  // The neighbour's metric breaks while two hostile polls hang: its next poll comes on schedule.
  transport.setValue("0.5");
  clock.advance(seconds(8));  // short of its next poll, which the loop below reaches a second at a time
  for (int second = 0; second < 10 && transport.goodAsked() < 2; ++second) {
    clock.advance(seconds(1));
    testing::waitFor([&] { return transport.goodAsked() >= 2; }, std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(testing::waitFor([&] { return transport.goodAsked() == 2; }, std::chrono::seconds(10)))
      << "the neighbour waited behind the hostile namespaces' polls";
  pass("good");
  EXPECT_EQ(kube.list(trainingRunResource(), "good", {}).items.size(), 1u) << "the breach starts a run";
  EXPECT_EQ(transport.mostHungAtOnce(), 2) << "hanging namespaces together hold half the workers";

  loop.request_stop();
  transport.releaseAll();
}

TEST_F(PolicyReconcilerTest, ADeletedPolicyIsForgotten) {
  kube.remove(retrainingPolicyResource(), "risk", "fraud");
  policies.erase({"risk", "fraud"});
  auto result = reconciler.reconcile({"risk", "fraud"});
  EXPECT_EQ(result.requeueAfter, Clock::duration::zero());
}

}  // namespace
}  // namespace vto::reconcilers
