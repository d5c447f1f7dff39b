// The TrainingRun reconciler against fakes and a simulated clock: exactly-once creation, adoption
// after a crash, resume with backoff, invalid specs, suspension.
#include "reconcilers/training_run_reconciler.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/gcs_fake_client.h"
#include "tests/fakes/kube_client_fake.h"
#include "tests/fakes/vertex_fake_client.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class RecordingEvents final : public controller::EventRecorder {
 public:
  void event(const json&, controller::EventType, const std::string& reason, const std::string& message) override {
    reasons.push_back(reason);
    messages.push_back(message);
  }
  bool has(const std::string& reason) const { return std::find(reasons.begin(), reasons.end(), reason) != reasons.end(); }
  std::vector<std::string> reasons, messages;
};

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() : reconciler(cache, kube, vertex, gcs, jobs, events, clock, options()) {}

  static TrainingRunReconcilerOptions options() {
    TrainingRunReconcilerOptions o;
    o.defaults = {"test-project", "us-central1"};
    return o;
  }

  // Creates the run in the fake API server and shows it to the "informer" cache.
  void apply(const std::string& extraSpec = "") {
    json run = json::parse(R"({"apiVersion": "vto.dev/v1alpha1", "kind": "TrainingRun",
      "metadata": {"name": "r", "namespace": "ns", "uid": "0b7c2a3e-1111-2222-3333-444455556666", "generation": 1},
      "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
               "resources": {"machineType": "n1-standard-4"},
               "baseOutputDirectory": "gs://bucket/r"}})");
    if (!extraSpec.empty()) run["spec"].merge_patch(json::parse(extraSpec));
    kube.create(trainingRunResource(), "ns", run);
    sync();
  }
  // What an informer would do after our writes.
  void sync() { cache.upsert(kube.get(trainingRunResource(), "ns", "r")); }
  controller::Result reconcile() {
    auto result = reconciler.reconcile({"ns", "r"});
    sync();
    return result;
  }
  json status() { return kube.get(trainingRunResource(), "ns", "r")["status"]; }
  std::string currentJob() { return status()["attempts"].back()["jobName"]; }

  testing::FakeKubeClient kube;
  controller::ObjectCache cache;
  testing::FakeVertexClient vertex;
  testing::FakeGcsClient gcs;
  JobCache jobs;
  RecordingEvents events;
  testing::FakeClock clock;
  TrainingRunReconciler reconciler;
};

TEST_F(ReconcilerTest, CreatesOneJobWritesItsNameAtOnceAndNeverASecond) {
  apply();
  reconcile();
  ASSERT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_EQ(status()["phase"], "Queued");
  EXPECT_EQ(status()["attempts"][0]["jobName"], status()["job"]["name"]);
  EXPECT_EQ(kube.get(trainingRunResource(), "ns", "r")["metadata"]["finalizers"], json::array({kFinalizer}));
  EXPECT_TRUE(events.has("JobCreated"));
  reconcile();
  reconcile();
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
  auto labels = vertex.createdBodies()[0]["labels"];
  EXPECT_EQ(labels["vto-run-uid"], "0b7c2a3e-1111-2222-3333-444455556666");
  EXPECT_EQ(labels["vto-attempt"], "1");
}

TEST_F(ReconcilerTest, AdoptsTheJobOfACrashBetweenCreateAndStatusWrite) {
  apply();
  // The job exists in Vertex (labelled for this run and attempt) but status never heard of it.
  auto orphan = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom,
                                 {{"displayName", "x"},
                                  {"labels", {{"vto-run-uid", "0b7c2a3e-1111-2222-3333-444455556666"}, {"vto-attempt", "1"}}}});
  reconcile();
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "adopted, not created again";
  EXPECT_EQ(currentJob(), orphan.name);
}

TEST_F(ReconcilerTest, APreemptedAttemptResumesFromTheNewestCheckpointAfterTheBackoff) {
  apply(R"({"checkpointing": {"resumeBackoff": "30s"}})");
  reconcile();
  gcs.upload("bucket", "r/checkpoints/ckpt-9", "x", "application/octet-stream");
  gcs.upload("bucket", "r/checkpoints/ckpt-10", "x", "application/octet-stream");
  vertex.setState(currentJob(), vertex::JobState::Failed,
                  vertex::RpcStatus{14, "The replica workerpool0-0 was preempted: the VM was reclaimed by Compute Engine."});
  jobs.erase(currentJob());  // the poller would have brought the new state

  auto waiting = reconcile();
  EXPECT_EQ(status()["phase"], "Resuming");
  EXPECT_EQ(waiting.requeueAfter, seconds(30));
  EXPECT_EQ(status()["attempts"][0]["failureClass"], "Preemption");
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "nothing before the backoff has passed";

  clock.advance(seconds(30));
  reconcile();
  ASSERT_EQ(vertex.createdBodies().size(), 2u);
  EXPECT_EQ(status()["resumes"], 1);
  EXPECT_EQ(status()["attempts"][1]["resumedFrom"], "gs://bucket/r/checkpoints/ckpt-10");
  bool resumeEnv = false;
  const json second = vertex.createdBodies()[1];
  for (const auto& env : second["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]) {
    resumeEnv = resumeEnv || (env["name"] == "VTO_RESUME_FROM" && env["value"] == "gs://bucket/r/checkpoints/ckpt-10");
  }
  EXPECT_TRUE(resumeEnv) << vertex.createdBodies()[1].dump();
  EXPECT_EQ(vertex.createdBodies()[1]["labels"]["vto-attempt"], "2");
  EXPECT_TRUE(events.has("Resumed"));
}

TEST_F(ReconcilerTest, AUserErrorFailsWithoutResuming) {
  apply();
  reconcile();
  vertex.setState(currentJob(), vertex::JobState::Failed,
                  vertex::RpcStatus{3, "The replica workerpool0-0 exited with a non-zero status of 1."});
  jobs.erase(currentJob());
  reconcile();
  clock.advance(seconds(3600));
  reconcile();
  EXPECT_EQ(status()["phase"], "Failed");
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_TRUE(events.has("Failed"));
}

TEST_F(ReconcilerTest, AnInvalidSpecGetsAConditionAndAnEventButNoJob) {
  apply(R"({"trainer": {"container": {"imageUri": "gcr.io/p/i:1"}}})");
  auto result = reconcile();
  EXPECT_EQ(status()["phase"], "Invalid");
  EXPECT_EQ(result.requeueAfter, Clock::duration::zero());
  EXPECT_FALSE(result.requeue);
  EXPECT_TRUE(vertex.createdBodies().empty());
  EXPECT_TRUE(events.has("InvalidSpec"));
  EXPECT_NE(status()["message"].get<std::string>().find("Artifact Registry"), std::string::npos) << status()["message"];
}

TEST_F(ReconcilerTest, SuspendCancelsAndUnsuspendStartsAttemptTwo) {
  apply();
  reconcile();
  std::string first = currentJob();
  kube.patch(trainingRunResource(), "ns", "r", controller::PatchType::Merge, {{"spec", {{"suspend", true}}}}, "", false, "");
  sync();
  reconcile();
  EXPECT_EQ(vertex.cancelledNames(), std::vector<std::string>{first});
  vertex.setState(first, vertex::JobState::Cancelled, vertex::RpcStatus{1, "cancelled"});
  jobs.erase(first);
  reconcile();
  EXPECT_EQ(status()["phase"], "Suspended");
  kube.patch(trainingRunResource(), "ns", "r", controller::PatchType::Merge, {{"spec", {{"suspend", false}}}}, "", false, "");
  sync();
  reconcile();
  ASSERT_EQ(vertex.createdBodies().size(), 2u);
  EXPECT_EQ(status()["attempts"].size(), 2u);
  EXPECT_EQ(status()["resumes"], 0) << "unsuspending spends no resume budget";
}

}  // namespace
}  // namespace vto::reconcilers
