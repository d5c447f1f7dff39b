// Admission by Kueue through act (reconcilers/trainingrun/reconciler.cpp), on fakes: the Workload is
// created before any job, a refusal of its create is decided again and said (Kueue not installed, a
// name taken by someone else's Workload), the job follows the admission, the Finished write is
// recorded as the run's own until the informer's cache shows it.
#include <gtest/gtest.h>

#include <set>

#include "reconcilers/trainingrun/kueue.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "reconcilers/trainingrun/wiring.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/event_recorder_fake.h"
#include "tests/fakes/gcs_fake_client.h"
#include "tests/fakes/kube_client_fake.h"
#include "tests/fakes/vertex_fake_client.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;

const std::string kUid = "5d0c2a3e-1111-2222-3333-444455556666";

// An API server without Kueue's CRDs: every request on a kueue.x-k8s.io resource answers 404.
class WithoutKueue final : public controller::KubeClient {
 public:
  explicit WithoutKueue(controller::KubeClient& inner) : inner_(inner) {}
  json get(const controller::Resource& r, const std::string& ns, const std::string& name) override {
    check(r);
    return inner_.get(r, ns, name);
  }
  controller::ListPage list(const controller::Resource& r, const std::string& ns, const controller::ListOptions& o) override {
    check(r);
    return inner_.list(r, ns, o);
  }
  json create(const controller::Resource& r, const std::string& ns, const json& object) override {
    check(r);
    return inner_.create(r, ns, object);
  }
  json update(const controller::Resource& r, const std::string& ns, const json& object) override {
    check(r);
    return inner_.update(r, ns, object);
  }
  json updateStatus(const controller::Resource& r, const std::string& ns, const json& object) override {
    check(r);
    return inner_.updateStatus(r, ns, object);
  }
  json patch(const controller::Resource& r, const std::string& ns, const std::string& name, controller::PatchType type,
             const json& body, const std::string& manager, bool force, const std::string& subresource) override {
    check(r);
    return inner_.patch(r, ns, name, type, body, manager, force, subresource);
  }
  void remove(const controller::Resource& r, const std::string& ns, const std::string& name) override {
    check(r);
    inner_.remove(r, ns, name);
  }
  void watch(const controller::Resource& r, const std::string& ns, const controller::WatchOptions& o,
             const std::function<void(controller::WatchEvent&&)>& onEvent, std::stop_token stop) override {
    check(r);
    inner_.watch(r, ns, o, onEvent, stop);
  }

 private:
  static void check(const controller::Resource& r) {
    if (r.group == "kueue.x-k8s.io") throw controller::ApiError({404, "NotFound", "the server could not find the requested resource", {}});
  }
  controller::KubeClient& inner_;
};

class KueueReconcilerTest : public ::testing::Test {
 protected:
  explicit KueueReconcilerTest(bool kueueInstalled = true)
      : withoutKueue(kube),
        controller(cache, {kueueInstalled ? static_cast<controller::KubeClient&>(kube) : withoutKueue, vertex, gcs, events, clock},
                   options(workloads, &workloadsSynced)) {
    controller.setEnqueue([this](const controller::ObjectKey& key) { woken.insert(key.name); });
  }
  static TrainingRunReconcilerOptions options(const controller::ObjectCache& workloads, const bool* synced) {
    TrainingRunReconcilerOptions o;
    o.defaults = {"test-project", "us-central1"};
    o.kueue = true;
    o.workloads = &workloads;
    o.workloadsSynced = [synced] { return *synced; };
    return o;
  }

  void apply() {
    json run = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
      "metadata": {"namespace": "ns", "name": "r", "generation": 1, "labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
      "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
               "resources": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
               "baseOutputDirectory": "gs://bucket/r"}})");
    run["metadata"]["uid"] = kUid;
    kube.create(trainingRunResource(), "ns", run);
    sync();
  }
  void sync() {
    auto object = kube.get(trainingRunResource(), "ns", "r");
    cache.upsert(object);
    controller.onRunEvent(object);
  }
  // A pass, then what the informer shows of its writes (also when it failed after them).
  // The catch-up a new job's held status write asks for follows at once, as an idle work queue serves it.
  void reconcile() {
    for (bool again = true; again;) {
      try {
        again = controller.reconciler().reconcile({"ns", "r"}).catchUp;
      } catch (...) {
        sync();
        throw;
      }
      sync();
    }
  }
  static std::string workloadName() {
    crd::ObjectMeta meta;
    meta.name = "r";
    meta.uid = kUid;
    return workloadNameOf(meta);
  }
  // Kueue's status write on the run's Workload, seen by the informer.
  json kueueWrites(const json& status) {
    auto written = kube.patch(workloadResource(), "ns", workloadName(), controller::PatchType::Merge, {{"status", status}},
                              "kueue-admission", true, "status");
    seeWorkload();
    return written;
  }
  void seeWorkload() {
    auto object = kube.get(workloadResource(), "ns", workloadName());
    workloads.upsert(object);
    controller.onWorkloadEvent(object, workloads);
  }
  json runStatus() { return kube.get(trainingRunResource(), "ns", "r")["status"]; }
  std::string ready() {
    auto status = runStatus();  // held: a range-for over a temporary's member would dangle
    for (const auto& c : status["conditions"])
      if (c["type"] == "Ready") return c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
    return "";
  }

  testing::FakeKubeClient kube;
  WithoutKueue withoutKueue;
  controller::ObjectCache cache;
  controller::ObjectCache workloads;
  bool workloadsSynced = true;  // whether the Workload informer has synced since the start
  testing::FakeVertexClient vertex;
  testing::FakeGcsClient gcs;
  testing::RecordingEvents events;
  testing::FakeClock clock;
  std::set<std::string> woken;
  TrainingRunController controller;
};

TEST_F(KueueReconcilerTest, TheWorkloadComesFirstTheJobAfterAdmissionAndFinishedAtTheEnd) {
  apply();
  reconcile();
  EXPECT_TRUE(vertex.createdBodies().empty()) << "no job before Kueue admits the run";
  auto workload = kube.get(workloadResource(), "ns", workloadName());
  EXPECT_EQ(workload["spec"]["queueName"], "gpus");
  EXPECT_EQ(workload["metadata"]["ownerReferences"][0]["uid"], kUid);
  EXPECT_EQ(runStatus()["phase"], "Queued");
  EXPECT_EQ(ready(), "False/WaitingForKueue");
  seeWorkload();
  EXPECT_TRUE(woken.count("r")) << "the Workload's event wakes its run";
  woken.clear();
  reconcile();
  EXPECT_TRUE(vertex.createdBodies().empty());

  kueueWrites({{"admission", {{"clusterQueue", "gpus"}}},
               {"conditions", json::array({{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"}},
                                           {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}}})}});
  EXPECT_TRUE(woken.count("r"));
  woken.clear();
  reconcile();
  ASSERT_EQ(vertex.createdBodies().size(), 1u) << "admitted: its job";
  auto job = runStatus()["attempts"][0]["jobName"].get<std::string>();

  vertex.setState(job, vertex::JobState::Succeeded);
  controller.jobs().erase(job);
  reconcile();
  EXPECT_EQ(runStatus()["phase"], "Succeeded");
  auto finished = kube.get(workloadResource(), "ns", workloadName());
  json finishedCondition;
  for (const auto& c : finished["status"]["conditions"])
    if (c["type"] == "Finished") finishedCondition = c;
  EXPECT_EQ(finishedCondition.value("status", ""), "True") << finished.dump(2);
  EXPECT_EQ(finishedCondition.value("reason", ""), "Succeeded");
  EXPECT_EQ(finished["status"]["admission"]["clusterQueue"], "gpus");

  // Before the cache shows that write, a pass writes nothing (no Finished again into a 409) and
  // waits for its echo, which wakes the run; that pass has nothing to do.
  woken.clear();
  int calls = kube.calls();
  reconcile();
  EXPECT_EQ(kube.calls(), calls + 1) << "the read of this test's sync, nothing else";
  seeWorkload();
  EXPECT_TRUE(woken.count("r"));
  calls = kube.calls();
  reconcile();
  EXPECT_EQ(kube.calls(), calls + 1);
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
}

// At a start the Workload informer may not have synced yet: a run whose Workload it does not hold is
// not decided on as if it had none (an eviction's cancel would read as a user's), it comes back.
TEST_F(KueueReconcilerTest, BeforeTheWorkloadsSyncARunWhoseWorkloadIsNotCachedWaits) {
  workloadsSynced = false;
  apply();
  EXPECT_EQ(controller.reconciler().reconcile({"ns", "r"}).requeueAfter, std::chrono::seconds(1));
  EXPECT_TRUE(runStatus().is_null()) << "nothing decided, nothing written: " << runStatus().dump();
  EXPECT_THROW(kube.get(workloadResource(), "ns", workloadName()), controller::ApiError) << "no Workload made either";
  workloadsSynced = true;
  reconcile();
  EXPECT_EQ(ready(), "False/WaitingForKueue");
  EXPECT_TRUE(vertex.createdBodies().empty());
}

// Without Kueue's CRDs the Workload informer never syncs: the wait ends a minute after the start.
TEST_F(KueueReconcilerTest, AnInformerThatNeverSyncsHoldsARunOnlyAMinute) {
  workloadsSynced = false;
  apply();
  EXPECT_EQ(controller.reconciler().reconcile({"ns", "r"}).requeueAfter, std::chrono::seconds(1));
  clock.advance(std::chrono::minutes(1));
  reconcile();
  EXPECT_EQ(ready(), "False/WaitingForKueue") << "decided on, its Workload made";
}

TEST_F(KueueReconcilerTest, AWorkloadOfTheRunsNameThatIsAnothersIsNeverUsed) {
  apply();
  json other = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"},
                {"metadata", {{"name", workloadName()}, {"namespace", "ns"},
                              {"ownerReferences", json::array({{{"uid", "someone-else"}, {"controller", true}}})}}}};
  kube.create(workloadResource(), "ns", other);
  EXPECT_THROW(reconcile(), std::runtime_error);
  EXPECT_TRUE(vertex.createdBodies().empty());
  EXPECT_EQ(ready(), "False/KueueUnavailable");
  EXPECT_NE(runStatus()["message"].get<std::string>().find("this run does not control it"), std::string::npos);
}

// An admitted run whose create Vertex refuses for an accelerator quota moves to its fallback placement
// in the same pass (reconciler.cpp, createPlannedJob): asking for other accelerators, its Workload is
// replaced there and then, not left for a pass that nothing would wake before the resync.
TEST_F(KueueReconcilerTest, AFailoverToOtherAcceleratorsReplacesTheWorkloadInTheSamePass) {
  json run = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"namespace": "ns", "name": "r", "generation": 1, "labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
             "capacity": {"fallbacks": [{"resources": {"machineType": "n1-standard-8",
                                                       "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1}}]},
             "baseOutputDirectory": "gs://bucket/r"}})");
  run["metadata"]["uid"] = kUid;
  kube.create(trainingRunResource(), "ns", run);
  sync();
  reconcile();
  seeWorkload();
  kueueWrites({{"admission", {{"clusterQueue", "gpus"}}},
               {"conditions", json::array({{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"}},
                                           {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}}})}});
  vertex.failNextCreate(vertex::ApiError(429, "RESOURCE_EXHAUSTED",
                                         "The following quota metrics exceed quota limits: "
                                         "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"));
  reconcile();
  EXPECT_TRUE(vertex.createdBodies().empty()) << "the fallback's T4s are not admitted yet";
  EXPECT_THROW(kube.get(workloadResource(), "ns", workloadName()), controller::ApiError)
      << "the L4 Workload is deleted in the pass that moved the run";
  EXPECT_EQ(ready(), "False/WaitingForKueue");
  // Its deletion seen, the next pass makes the fallback's Workload.
  workloads.erase({"ns", workloadName()});
  reconcile();
  auto replaced = kube.get(workloadResource(), "ns", workloadName());
  EXPECT_EQ(replaced["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["vto.dev/nvidia-tesla-t4"], "1");
  EXPECT_TRUE(vertex.createdBodies().empty());
}

class WithoutKueueTest : public KueueReconcilerTest {
 protected:
  WithoutKueueTest() : KueueReconcilerTest(false) {}
};

TEST_F(WithoutKueueTest, KueueNotInstalledIsSaidAtOnceAndNoJobIsCreatedUnqueued) {
  apply();
  EXPECT_THROW(reconcile(), std::runtime_error) << "retried with backoff";
  EXPECT_TRUE(vertex.createdBodies().empty());
  EXPECT_EQ(runStatus()["phase"], "Pending");
  EXPECT_EQ(ready(), "False/KueueUnavailable");
  EXPECT_NE(runStatus()["message"].get<std::string>().find("Kueue is not installed"), std::string::npos);
  EXPECT_EQ(kube.get(trainingRunResource(), "ns", "r")["metadata"]["finalizers"], json::array({kFinalizer}));
  EXPECT_THROW(reconcile(), std::runtime_error);
  EXPECT_TRUE(vertex.createdBodies().empty());
}

}  // namespace
}  // namespace vto::reconcilers
