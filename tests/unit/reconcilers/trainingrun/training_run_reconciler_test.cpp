// The TrainingRun reconciler against fakes and a simulated clock: exactly-once creation, adoption
// after a crash, resume with backoff, invalid specs, suspension.
#include "reconcilers/trainingrun/reconciler.h"

#include <gtest/gtest.h>

#include <set>

#include "reconcilers/trainingrun/wiring.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/gcs_fake_client.h"
#include "tests/fakes/kube_client_fake.h"
#include "tests/fakes/model_registry_fake.h"
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

// Counts checkpoint searches: each starts with a first page of the directory, listed with "/".
class CountingGcs final : public vertex::GcsClient {
 public:
  explicit CountingGcs(vertex::GcsClient& inner) : inner_(inner) {}
  vertex::ObjectPage listObjectsPage(const std::string& bucket, const std::string& prefix, const std::string& pageToken,
                                     const vertex::ListObjectsOptions& options) override {
    if (options.delimiter == "/" && pageToken.empty()) ++lists;
    return inner_.listObjectsPage(bucket, prefix, pageToken, options);
  }
  std::optional<vertex::GcsObject> getObject(const std::string& bucket, const std::string& name) override {
    return inner_.getObject(bucket, name);
  }
  std::optional<std::string> readObject(const std::string& bucket, const std::string& name, std::size_t maxBytes) override {
    return inner_.readObject(bucket, name, maxBytes);
  }
  vertex::GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                           const std::string& type) override {
    return inner_.upload(bucket, name, content, type);
  }
  void ensureBucket(const std::string& bucket, const std::string& location) override { inner_.ensureBucket(bucket, location); }
  int lists = 0;

 private:
  vertex::GcsClient& inner_;
};

const std::string kUid = "0b7c2a3e-1111-2222-3333-444455556666";

// The reconciler as `vto run` wires it (TrainingRunController: the informer's handler, Vertex polling,
// the accelerator ledger), on fakes and the simulated clock. Runs it enqueues are collected in `woken`.
class ReconcilerTest : public ::testing::Test {
 protected:
  explicit ReconcilerTest(TrainingRunReconcilerOptions o = options())
      : controller(cache, {kube, vertex, countingGcs, events, clock}, std::move(o), pollerOptions()),
        reconciler(controller.reconciler()),
        jobs(controller.jobs()) {
    controller.setEnqueue([this](const controller::ObjectKey& key) { woken.insert(key.name); });
  }

  static TrainingRunReconcilerOptions options() {
    TrainingRunReconcilerOptions o;
    o.defaults = {"test-project", "us-central1"};
    return o;
  }
  static JobPollerOptions pollerOptions() {
    JobPollerOptions o;
    o.interval = seconds(30);
    o.fastInterval = seconds(5);
    o.fullListInterval = seconds(120);
    return o;
  }

  // Creates the run in the fake API server and shows it to the "informer" cache.
  void apply(const std::string& extraSpec = "", const std::string& name = "r") {
    json run = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
      "metadata": {"namespace": "ns", "generation": 1},
      "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
               "resources": {"machineType": "n1-standard-4"},
               "baseOutputDirectory": "gs://bucket/r"}})");
    run["metadata"]["name"] = name;
    run["metadata"]["uid"] = name == "r" ? kUid : "uid-" + name;
    if (!extraSpec.empty()) run["spec"].merge_patch(json::parse(extraSpec));
    kube.create(trainingRunResource(), "ns", run);
    sync(name);
  }
  // What the informer does after our writes: the cache, then the handler `vto run` registers.
  void sync(const std::string& name = "r") {
    try {
      auto object = kube.get(trainingRunResource(), "ns", name);
      cache.upsert(object);
      controller.onRunEvent(object);
    } catch (const controller::ApiError&) {
      auto gone = cache.get({"ns", name});
      cache.erase({"ns", name});
      if (gone) controller.onRunEvent(*gone);
    }
  }
  // One pass, then what the informer shows of its writes.
  controller::Result reconcileOnce(const std::string& name = "r") {
    auto result = reconciler.reconcile({"ns", name});
    sync(name);
    return result;
  }
  // A pass and the catch-up it asks for (a new job's held status write), as an idle work queue
  // serves it: at once.
  controller::Result reconcile(const std::string& name = "r") {
    auto result = reconcileOnce(name);
    for (int i = 0; result.catchUp && i < 3; ++i) result = reconcileOnce(name);
    EXPECT_FALSE(result.catchUp) << "a catch-up that asks for another";
    return result;
  }
  // Applies run "r" and brings its job to RUNNING, as the poller would report it.
  void startRunning() {
    apply();
    reconcile();
    vertex.setState(currentJob(), vertex::JobState::Running);
    jobs.erase(currentJob());
    reconcile();
    ASSERT_EQ(status()["phase"], "Running");
  }
  // Moves the clock a second at a time, polling what is due and reconciling the runs it wakes.
  void runFor(Clock::duration total) {
    for (auto end = clock.now() + total; clock.now() < end; clock.advance(seconds(1))) {
      controller.polling().pollDue();
      auto wake = std::move(woken);
      woken.clear();
      for (const auto& name : wake) reconcile(name);
    }
  }
  // The one job Vertex holds (read without the reconciler's cache).
  std::string onlyJob() {
    auto jobs = vertex.listJobs({"test-project", "us-central1"}, vertex::JobKind::Custom, {}).jobs;
    EXPECT_EQ(jobs.size(), 1u);
    return jobs.empty() ? "" : jobs[0].name;
  }
  json status(const std::string& name = "r") { return kube.get(trainingRunResource(), "ns", name)["status"]; }
  std::string currentJob(const std::string& name = "r") { return status(name)["attempts"].back()["jobName"]; }
  std::string condition(const std::string& type, const std::string& name = "r") {
    auto current = status(name);  // held: a range-for over a temporary's member would dangle
    for (const auto& c : current["conditions"]) {
      if (c["type"] == type) return c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
    }
    return "";
  }

  testing::FakeKubeClient kube;
  controller::ObjectCache cache;
  testing::FakeVertexClient vertex;
  testing::FakeGcsClient gcs;
  CountingGcs countingGcs{gcs};
  RecordingEvents events;
  testing::FakeClock clock;
  std::set<std::string> woken;
  TrainingRunController controller;
  TrainingRunReconciler& reconciler;
  JobCache& jobs;
};

// Vertex polling as it runs in `vto run`: the PollingSource over the jobs' targets, the JobPoller
// waking runs by uid through the informer cache's index, all on the fake clock.
using PolledReconcilerTest = ReconcilerTest;

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

TEST_F(ReconcilerTest, ANewRunInABucketListedLatelyNeedsNoGcsRequestBeforeItsJob) {
  apply();
  reconcile();
  EXPECT_EQ(gcs.listCalls(), 1) << "the first run lists its checkpoint directory (the bucket of its outputs too)";
  apply("", "second");
  reconcile("second");
  EXPECT_EQ(gcs.listCalls(), 1) << "the same bucket, listed a moment ago";
  EXPECT_EQ(vertex.createdBodies().size(), 2u);
  clock.advance(ListedBuckets::kFreshFor);
  apply("", "third");
  reconcile("third");
  EXPECT_EQ(gcs.listCalls(), 2) << "listed again once that is no longer recent";
  apply(R"({"baseOutputDirectory": "gs://gone/r"})", "fourth");
  reconcile("fourth");
  EXPECT_EQ(gcs.listCalls(), 3) << "another bucket is listed";
}

TEST_F(ReconcilerTest, ANewJobsStatusWaitsForTheCatchUpAndEveryPassMeanwhileSeesTheJob) {
  apply();
  auto created = reconcileOnce();
  EXPECT_TRUE(created.catchUp) << "the status write that records the job comes back at low priority";
  ASSERT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_FALSE(status().contains("attempts")) << "not written yet";
  EXPECT_TRUE(events.has("JobCreated")) << "the Event is not held";
  EXPECT_EQ(reconciler.heldStatuses().size(), 1u);

  // Any pass before the catch-up (here the job's first poll) decides on the held status and writes.
  vertex.setState(onlyJob(), vertex::JobState::Running);
  jobs.erase(onlyJob());
  auto next = reconcileOnce();
  EXPECT_FALSE(next.catchUp);
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "never a second job";
  EXPECT_EQ(status()["phase"], "Running");
  EXPECT_EQ(currentJob(), onlyJob());
  EXPECT_EQ(reconciler.heldStatuses().size(), 0u);
  EXPECT_EQ(std::count(events.reasons.begin(), events.reasons.end(), "JobCreated"), 1);
  EXPECT_FALSE(reconcileOnce().catchUp);
}

TEST_F(ReconcilerTest, ARunDeletedBeforeItsHeldStatusIsWrittenCancelsItsJob) {
  apply(R"({"deletionPolicy": "Cancel"})");
  ASSERT_TRUE(reconcileOnce().catchUp);
  kube.remove(trainingRunResource(), "ns", "r");
  sync();
  reconcileOnce();
  EXPECT_EQ(vertex.cancelledNames(), std::vector<std::string>{onlyJob()})
      << "the held status names the job: deletion cancels it with no lookup";
}

TEST_F(ReconcilerTest, ARestartBeforeTheHeldStatusIsWrittenAdoptsTheJob) {
  apply();
  ASSERT_TRUE(reconcileOnce().catchUp);
  TrainingRunController restarted(cache, {kube, vertex, countingGcs, events, clock}, options(), pollerOptions());
  std::set<std::string> restartedWoken;
  restarted.setEnqueue([&](const controller::ObjectKey& key) { restartedWoken.insert(key.name); });
  restarted.onRunEvent(*cache.get({"ns", "r"}));
  restarted.polling().pollDue();
  ASSERT_EQ(restartedWoken, std::set<std::string>{"r"});
  EXPECT_FALSE(restarted.reconciler().reconcile({"ns", "r"}).catchUp);
  sync();
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "the job's labels find it: never a second";
  EXPECT_EQ(currentJob(), onlyJob());
}

TEST_F(ReconcilerTest, AdoptsTheJobOfACrashBetweenCreateAndStatusWrite) {
  apply();
  // The crashed pass had put the finalizer on (it always does before a job exists) and created the
  // job (labelled for this run and attempt), but status never heard of it.
  kube.patch(trainingRunResource(), "ns", "r", controller::PatchType::Merge,
             {{"metadata", {{"finalizers", json::array({kFinalizer})}}}}, "", false, "");
  sync();
  auto orphan = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom,
                                 {{"displayName", "x"},
                                  {"labels", {{"vto-run-uid", "0b7c2a3e-1111-2222-3333-444455556666"}, {"vto-attempt", "1"}}}});
  reconcile();
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "adopted, not created again";
  EXPECT_EQ(currentJob(), orphan.name);
}

TEST_F(ReconcilerTest, OnlyARunWhoseFinalizerThisPassAddedIsCreatedWithoutLookingForAnEarlierJob) {
  apply();
  reconcile();
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_EQ(vertex.listCalls(), 0) << "the finalizer went on just now, so no pass can have created a job before";

  // A run that already carries the finalizer may have a job from a pass that crashed: it looks first.
  apply(R"({"suspend": true})", "second");
  reconcile("second");
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "suspended: no job yet";
  kube.patch(trainingRunResource(), "ns", "second", controller::PatchType::Merge, {{"spec", {{"suspend", false}}}}, "", false, "");
  sync("second");
  int listsBefore = vertex.listCalls();
  reconcile("second");
  EXPECT_EQ(vertex.createdBodies().size(), 2u);
  EXPECT_EQ(vertex.listCalls(), listsBefore + 1) << "the finalizer was there already: look for an earlier job first";
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

// Vertex's error quotes the job's own output: C0, C1 and bidi controls in it reach status and the
// Event escaped, never as they are.
TEST_F(ReconcilerTest, AJobsErrorMessageReachesStatusAndEventsEscaped) {
  apply();
  reconcile();
  vertex.setState(currentJob(), vertex::JobState::Failed,
                  vertex::RpcStatus{3, "The replica workerpool0-0 exited: \x1b[2J\xC2\x9B" "31m \xE2\x80\xAEtxt.exe"});
  jobs.erase(currentJob());
  reconcile();
  clock.advance(seconds(3600));
  reconcile();
  auto message = status()["attempts"][0]["message"].get<std::string>();
  EXPECT_EQ(message, "The replica workerpool0-0 exited: \\x1b[2J\\u009b31m \\u202etxt.exe");
  EXPECT_EQ(status()["message"].get<std::string>().find('\x1b'), std::string::npos);
  ASSERT_TRUE(events.has("Failed"));
  for (const auto& text : events.messages) {
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find("\xC2\x9B"), std::string::npos) << text;
    EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos) << text;
  }
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

TEST_F(PolledReconcilerTest, AnUpdateStampedBehindTheWatermarkIsStillSeenAndTheRunFinishes) {
  apply();
  reconcile();
  ASSERT_EQ(status()["phase"], "Queued");
  runFor(seconds(3));  // the first poll: a full list, which sets the watermark
  auto job = currentJob();
  // Vertex stamps the start a minute behind what the poller has seen (a list is only eventually
  // consistent; the emulator under load stamps a change with its scheduled time).
  vertex.setState(job, vertex::JobState::Running, std::nullopt, vertex.lastStamp() - seconds(60));
  runFor(seconds(60));
  EXPECT_EQ(status()["phase"], "Queued") << "the changes list alone cannot see it";
  runFor(seconds(70));  // past the full-list interval
  EXPECT_EQ(status()["phase"], "Running");
  // The end, stamped behind too: the full list of unfinished jobs no longer has it, so the job is
  // read directly.
  vertex.setState(job, vertex::JobState::Succeeded, std::nullopt, vertex.lastStamp() - seconds(120));
  runFor(seconds(125));
  EXPECT_EQ(status()["phase"], "Succeeded");
  EXPECT_TRUE(events.has("Succeeded"));
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
}

TEST_F(PolledReconcilerTest, AJobMadeBetweenTwoSlowPollsIsPolledAtTheFastInterval) {
  apply("", "first");
  reconcile("first");
  runFor(seconds(3));  // the target's first poll: a full list, the job queued
  vertex.setState(currentJob("first"), vertex::JobState::Running);
  runFor(seconds(6));  // a fast poll sees it running: nothing starts there now, the next poll is slow
  ASSERT_EQ(status("first")["phase"], "Running");
  apply();
  reconcile();
  vertex.setState(currentJob(), vertex::JobState::Running);
  runFor(seconds(6));
  EXPECT_EQ(status()["phase"], "Running") << "seen within the fast interval, not at the slow poll 30 s away";
  EXPECT_EQ(vertex.getCalls(), 0) << "by the list, not a GET per run";
}

TEST_F(PolledReconcilerTest, AVertexClockBehindVtosDelaysNothing) {
  apply();
  reconcile();  // the job exists: its target (read from its name) is polled from now on
  // Vertex's clock is ten minutes behind vto's, so every update time it stamps is: no list "changed
  // since vto's now" could find the job; the changes list runs from the newest stamp Vertex gave.
  auto behind = clock.now() - std::chrono::minutes(10);
  vertex.setState(currentJob(), vertex::JobState::Queued, std::nullopt, behind);
  runFor(seconds(3));  // the target's first poll: a full list, which sees the job
  vertex.setState(currentJob(), vertex::JobState::Running, std::nullopt, behind + seconds(5));
  runFor(seconds(35));  // one poll interval, far short of the full-list interval
  EXPECT_EQ(status()["phase"], "Running");
}

TEST_F(PolledReconcilerTest, AFailingTargetShowsOnItsOwnRunsAndNeverBlocksOthers) {
  apply();
  apply(R"({"location": "europe-west4"})", "other");
  reconcile();
  reconcile("other");
  vertex.failLocation("projects/test-project/locations/europe-west4",
                      vertex::ApiError(403, "PERMISSION_DENIED", "Permission 'aiplatform.customJobs.list' denied"));
  runFor(seconds(3));
  vertex.setState(currentJob(), vertex::JobState::Running);
  runFor(seconds(10));
  EXPECT_EQ(status()["phase"], "Running") << "the healthy target goes on";
  EXPECT_EQ(condition("Ready"), "False/Running");
  EXPECT_EQ(condition("Ready", "other"), "False/VertexError");
  EXPECT_NE(status("other")["conditions"].dump().find("aiplatform.customJobs.list"), std::string::npos);
  // Vertex answers again: the condition goes, the job's change is seen.
  vertex.failLocation("projects/test-project/locations/europe-west4", std::nullopt);
  vertex.setState(currentJob("other"), vertex::JobState::Running);
  runFor(seconds(300));
  EXPECT_EQ(condition("Ready", "other"), "False/Running");
  EXPECT_EQ(status("other")["phase"], "Running");
}

TEST_F(PolledReconcilerTest, AfterARestartJobsComeFromTheFirstListNotAGetPerRun) {
  apply();
  apply("", "second");
  reconcile();
  reconcile("second");
  vertex.setState(currentJob(), vertex::JobState::Running);
  vertex.setState(currentJob("second"), vertex::JobState::Running);
  // A new process: an empty JobCache, a reconciler that leaves missing jobs to the first poll; its
  // informer's first sync hands it every run.
  auto restartedOptions = options();
  restartedOptions.awaitFirstPoll = std::chrono::minutes(1);
  TrainingRunController restarted(cache, {kube, vertex, countingGcs, events, clock}, restartedOptions, pollerOptions());
  std::set<std::string> restartedWoken;
  restarted.setEnqueue([&](const controller::ObjectKey& key) { restartedWoken.insert(key.name); });
  for (const auto& name : {"r", "second"}) restarted.onRunEvent(*cache.get({"ns", name}));
  restartedWoken.clear();
  int gets = vertex.getCalls();
  EXPECT_EQ(restarted.reconciler().reconcile({"ns", "r"}).requeueAfter, seconds(5));
  EXPECT_EQ(vertex.getCalls(), gets) << "no GET before the first list";
  restarted.polling().pollDue();
  EXPECT_EQ(restartedWoken, (std::set<std::string>{"r", "second"}));
  for (const auto& name : restartedWoken) {
    while (restarted.reconciler().reconcile({"ns", name}).catchUp) sync(name);
    sync(name);
  }
  EXPECT_EQ(status()["phase"], "Running");
  EXPECT_EQ(status("second")["phase"], "Running");
  EXPECT_EQ(vertex.getCalls(), gets);
}

TEST_F(ReconcilerTest, ARunningRunListsCheckpointsAndWritesStatusAtMostOncePerInterval) {
  startRunning();
  int listsBefore = countingGcs.lists, writesBefore = kube.statusWrites();
  // Ten intervals of passes twelve times an interval (the poller, the run's own status writes,
  // resyncs), with a new checkpoint at each.
  auto interval = TrainingRunReconcilerOptions{}.checkpointPollPeriod;
  for (int step = 1; step <= 120; ++step) {
    gcs.upload("bucket", "r/checkpoints/ckpt-" + std::to_string(step), "x", "application/octet-stream");
    clock.advance(interval / 12);
    reconcile();
    reconcile();  // the pass our own status write triggers
  }
  int lists = countingGcs.lists - listsBefore, writes = kube.statusWrites() - writesBefore;
  EXPECT_LE(lists, 11) << "at most one look per --checkpoint-poll-interval";
  EXPECT_GE(lists, 9) << "and it does look";
  EXPECT_LE(writes, lists) << "a status write only for a new checkpoint";
  EXPECT_NE(status()["lastCheckpoint"]["uri"].get<std::string>().find("ckpt-"), std::string::npos);
}

// A tenant capped at 4 accelerators: the runs' claims come from the ledger the informer keeps.
class CappedReconcilerTest : public ReconcilerTest {
 protected:
  // Started: the first list of the cap's place (the defaults' project and location) is done.
  CappedReconcilerTest() : ReconcilerTest(cappedOptions()) { controller.polling().pollDue(); }
  static TrainingRunReconcilerOptions cappedOptions() {
    auto o = options();
    o.tenancy = governance::parseTenancyRules(json::parse(R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "maxAccelerators": 4}])"));
    return o;
  }
  static constexpr const char* kFourGpus =
      R"({"resources": {"machineType": "n1-standard-16", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 4}})";
};

// A team's budget, read from a Vertex of its own (empty: nothing spent this month).
class BudgetedReconcilerTest : public ReconcilerTest {
 protected:
  BudgetedReconcilerTest() : ReconcilerTest(budgetedOptions()) { budgets().ledger.refresh(); }
  struct Budgets {
    testing::FakeVertexClient vertex;
    testing::FakeClock clock;
    governance::TenancyRules rules = governance::parseTenancyRules(json::parse(
        R"([{"namespaces": ["ns"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a",
             "imagePrefixes": ["us-docker.pkg.dev/p/"], "budget": {"monthlyUsd": 100}}])"));
    BudgetLedger ledger{vertex, clock, rules, governance::PriceCatalog::builtIn(), {"us-central1"}};
  };
  static Budgets& budgets() {
    static Budgets shared;
    return shared;
  }
  static TrainingRunReconcilerOptions budgetedOptions() {
    auto o = options();
    o.tenancy = budgets().rules;
    o.budgets = &budgets().ledger;
    return o;
  }
};

// A create whose answer is lost may have made the job: what the run took of its budget stays taken
// (others see it, the run itself does not) until a read shows the job; the next pass's create takes
// it again in its place, and the job's hold is counted once.
TEST_F(BudgetedReconcilerTest, ALostCreateAnswerKeepsTheBudgetHoldUntilTheJobIsSeen) {
  apply(R"({"scheduling": {"timeout": "2h"}})");
  vertex.failNextCreate(vertex::ApiError(503, "UNAVAILABLE", "The service is currently unavailable."));
  EXPECT_THROW(reconciler.reconcile({"ns", "r"}), vertex::ApiError);
  sync();
  auto& ledger = budgets().ledger;
  const auto twoHours = Usd::micros(2 * 218'500);  // n1-standard-4 in us-central1, to the run's timeout
  EXPECT_EQ(ledger.spendOf(0)->committed, twoHours) << "held, though no answer came";
  EXPECT_EQ(ledger.spendOf(0, kUid)->committed, Usd()) << "but not against the run itself";
  reconcile();
  ASSERT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_EQ(vertex.createdBodies()[0]["jobSpec"]["scheduling"].value("timeout", ""), "7200s");
  EXPECT_EQ(ledger.spendOf(0)->committed, twoHours) << "the job's now, counted once";
  // The run ends: nothing it held outlives it, and its job is counted by the next read.
  vertex.setState(currentJob(), vertex::JobState::Succeeded);
  jobs.erase(currentJob());
  reconcile();
  ledger.forgetRun(kUid);
  EXPECT_EQ(ledger.spendOf(0, kUid)->committed, twoHours) << "the job's note stays until a refresh lists it";
}

// Under a Hold budget a job carries the timeout its reservation counted: Vertex's 7 days rendered
// when the spec sets none, so that nothing outlives what the budget set aside for it.
TEST_F(BudgetedReconcilerTest, AJobUnderAHoldBudgetCarriesTheTimeoutItWasReservedFor) {
  apply(R"({"maxCostUsd": "5"})");  // 0.2185/h: 22.9 h to spend $5, well under 7 days
  reconcile();
  ASSERT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_EQ(vertex.createdBodies()[0]["jobSpec"]["scheduling"].value("timeout", ""), "82440s")
      << "22 h 53 min, rounded up to 22 h 54 min, plus one minute";
  vertex.setState(currentJob(), vertex::JobState::Succeeded);
  jobs.erase(currentJob());
  reconcile();
  budgets().ledger.forgetRun(kUid);
}

TEST_F(CappedReconcilerTest, ARunWaitsForTheCapAndStartsAsSoonAsTheHolderFinishes) {
  apply(kFourGpus, "first");
  reconcile("first");
  ASSERT_EQ(vertex.createdBodies().size(), 1u);
  apply(kFourGpus, "second");
  reconcile("second");
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "the first run holds all 4";
  EXPECT_EQ(condition("Ready", "second"), "False/TenantQuotaExceeded");
  EXPECT_EQ(status("second")["phase"], "Queued");

  // Only a pass that may create a job reads the others' claims.
  EXPECT_TRUE(reconciler.observe(*cache.get({"ns", "first"})).tenancy.otherClaims.empty()) << "its job runs";
  EXPECT_EQ(reconciler.observe(*cache.get({"ns", "second"})).tenancy.otherClaims.size(), 1u);

  woken.clear();
  vertex.setState(currentJob("first"), vertex::JobState::Succeeded);
  jobs.erase(currentJob("first"));
  reconcile("first");
  ASSERT_EQ(status("first")["phase"], "Succeeded");
  EXPECT_EQ(woken, std::set<std::string>{"second"}) << "the release wakes the waiting run at once";
  reconcile("second");
  EXPECT_EQ(vertex.createdBodies().size(), 2u);
  EXPECT_EQ(condition("Ready", "second"), "False/Queued");  // the gate has gone: its job waits in Vertex
}

TEST_F(CappedReconcilerTest, ACpuOnlyRunWithAGpuFallbackReadsTheOthersClaims) {
  apply(kFourGpus, "first");
  reconcile("first");
  apply(R"({"resources": {"machineType": "n1-standard-16"},
            "capacity": {"fallbacks": [{"resources": {"machineType": "n1-standard-16", "acceleratorType": "NVIDIA_TESLA_T4",
                                                      "acceleratorCount": 4}}]}})",
        "cpu");
  // Its own placement wants no accelerators, but the fallback it may move to does: the cap needs them.
  EXPECT_EQ(reconciler.observe(*cache.get({"ns", "cpu"})).tenancy.otherClaims.size(), 1u);
}

TEST_F(CappedReconcilerTest, AfterARestartAnOrphanedJobCountsBeforeAnyRunIsAdmitted) {
  apply(kFourGpus, "orphan");
  reconcile("orphan");
  ASSERT_EQ(vertex.createdBodies().size(), 1u);
  auto orphanJob = currentJob("orphan");
  vertex.setState(orphanJob, vertex::JobState::Running);
  // The run is deleted with deletionPolicy Orphan while the operator is down: the new process's
  // informer never shows it, and no live run follows a job in that project and location.
  cache.erase({"ns", "orphan"});
  TrainingRunController restarted(cache, {kube, vertex, countingGcs, events, clock}, cappedOptions(), pollerOptions());
  std::set<std::string> restartedWoken;
  restarted.setEnqueue([&](const controller::ObjectKey& key) { restartedWoken.insert(key.name); });
  json second = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"namespace": "ns", "name": "second", "uid": "uid-second", "generation": 1},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "baseOutputDirectory": "gs://bucket/r"}})");
  second["spec"].merge_patch(json::parse(kFourGpus));
  kube.create(trainingRunResource(), "ns", second);
  auto restartedPass = [&](const std::string& name) {
    for (bool again = true; again;) {
      again = restarted.reconciler().reconcile({"ns", name}).catchUp;
      auto object = kube.get(trainingRunResource(), "ns", name);
      cache.upsert(object);
      restarted.onRunEvent(object);
    }
  };
  cache.upsert(kube.get(trainingRunResource(), "ns", "second"));
  restarted.onRunEvent(*cache.get({"ns", "second"}));

  // Before the first list: the count may be short, so the run waits and says for what.
  restartedPass("second");
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_EQ(condition("Ready", "second"), "False/TenantQuotaExceeded");
  EXPECT_NE(status("second")["message"].get<std::string>().find("first list"), std::string::npos)
      << status("second")["message"];

  // The first list finds the orphan: it counts, and the waiting run looks again and still waits.
  restartedWoken.clear();
  restarted.polling().pollDue();
  EXPECT_TRUE(restartedWoken.count("second")) << "the list's end wakes the runs in line";
  EXPECT_EQ(restarted.jobs().ended(orphanJob), std::optional<bool>(false));
  restartedPass("second");
  EXPECT_EQ(vertex.createdBodies().size(), 1u) << "the orphan holds all 4";
  EXPECT_EQ(condition("Ready", "second"), "False/TenantQuotaExceeded");
  EXPECT_EQ(status("second")["message"].get<std::string>().find("first list"), std::string::npos);

  // Vertex says the orphan ended: the next poll frees its accelerators and the run starts.
  vertex.setState(orphanJob, vertex::JobState::Succeeded);
  restartedWoken.clear();
  for (int i = 0; i < 130 && restartedWoken.empty(); ++i) {
    clock.advance(seconds(1));
    restarted.polling().pollDue();
  }
  EXPECT_TRUE(restartedWoken.count("second"));
  restartedPass("second");
  EXPECT_EQ(vertex.createdBodies().size(), 2u);
}

// Registration against a fake Model Registry: what status names is checked against the run first.
class RegistryReconcilerTest : public ReconcilerTest {
 protected:
  RegistryReconcilerTest() : ReconcilerTest(registryOptions()) {}
  static testing::FakeModelRegistry& registry() {
    static testing::FakeModelRegistry fake;
    return fake;
  }
  static TrainingRunReconcilerOptions registryOptions() {
    auto o = options();
    o.registry = &registry();
    return o;
  }
};

TEST_F(RegistryReconcilerTest, AnUploadOperationInStatusIsReadOnlyUnderTheRunsOwnModel) {
  // Whoever may write status names an operation of another team's model, in another project and region.
  json run = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"namespace": "ns", "name": "r", "uid": "uid-r", "generation": 1},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-4"}, "baseOutputDirectory": "gs://bucket/r",
             "model": {"model": "fraud", "servingContainer": {"imageUri": "us-docker.pkg.dev/p/r/serve:1"}}},
    "status": {"phase": "Succeeded", "observedGeneration": 1,
               "model": {"operation": "projects/team-b-project/locations/europe-west4/models/theirs/operations/7"}}})");
  kube.create(trainingRunResource(), "ns", run);
  sync();
  auto observed = reconciler.observe(*cache.get({"ns", "r"}));
  ASSERT_TRUE(observed.registry.read);
  ASSERT_TRUE(observed.registry.failure.has_value()) << "the fake knows no such operation: its 404 names what was read";
  const auto& message = observed.registry.failure->message;
  EXPECT_NE(message.find("projects/test-project/locations/us-central1/models/fraud/operations/7"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("team-b-project"), std::string::npos) << message;
  EXPECT_EQ(message.find("theirs"), std::string::npos) << message;
}

// Team "ns" may write under gs://bucket/ only. checkpointing.directory may change after submission.
class TenantReconcilerTest : public ReconcilerTest {
 protected:
  TenantReconcilerTest() : ReconcilerTest(tenantOptions()) {}
  static TrainingRunReconcilerOptions tenantOptions() {
    auto o = options();
    o.tenancy = governance::parseTenancyRules(json::parse(R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "bucketPrefixes": ["gs://bucket/"]}])"));
    return o;
  }
};

TEST_F(TenantReconcilerTest, ACheckpointDirectoryEditedToAnotherTeamsBucketIsNeverListedNorResumedFrom) {
  startRunning();
  gcs.upload("other-team", "secret/ckpt-9", "x", "application/octet-stream");
  kube.patch(trainingRunResource(), "ns", "r", controller::PatchType::Merge,
             {{"spec", {{"checkpointing", {{"directory", "gs://other-team/secret"}}}}}}, "", false, "");
  sync();
  int listsBefore = gcs.listCalls();
  auto interval = TrainingRunReconcilerOptions{}.checkpointPollPeriod;
  for (int step = 0; step < 3; ++step) {
    clock.advance(interval);
    reconcile();
  }
  EXPECT_EQ(condition("Valid"), "False/TenantPolicyViolation");
  EXPECT_EQ(status()["phase"], "Running") << "the job that runs goes on";
  EXPECT_TRUE(events.has("TenantPolicyViolation"));

  // Preempted now: no resume under the edited spec, and still no listing of the other bucket.
  vertex.setState(currentJob(), vertex::JobState::Failed, vertex::RpcStatus{14, "The replica workerpool0-0 was preempted"});
  jobs.erase(currentJob());
  reconcile();  // Resuming: the backoff first
  clock.advance(std::chrono::hours(1));
  reconcile();
  EXPECT_EQ(status()["phase"], "Invalid");
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
  EXPECT_EQ(gcs.listCalls(), listsBefore) << "gs://other-team was never listed with the operator's identity";
  EXPECT_FALSE(status().contains("lastCheckpoint") && status()["lastCheckpoint"].value("uri", "").find("other-team") !=
                                                         std::string::npos);

  // Back inside the rule: the resume goes ahead.
  kube.patch(trainingRunResource(), "ns", "r", controller::PatchType::Merge,
             {{"spec", {{"checkpointing", {{"directory", "gs://bucket/r/checkpoints"}}}}}}, "", false, "");
  sync();
  reconcile();
  EXPECT_EQ(vertex.createdBodies().size(), 2u);
  EXPECT_EQ(condition("Valid"), "True/SpecValid");
}

TEST_F(ReconcilerTest, AnUnchangedRunIsNotWrittenAgain) {
  apply();
  reconcile();
  int writes = kube.statusWrites();
  for (int i = 0; i < 5; ++i) reconcile();
  EXPECT_EQ(kube.statusWrites(), writes);
}

TEST_F(ReconcilerTest, DeletionCancelsTheJobThenReleasesTheObject) {
  apply();
  reconcile();
  auto job = currentJob();
  kube.remove(trainingRunResource(), "ns", "r");  // the finalizer holds it: deletionTimestamp only
  sync();
  reconcile();
  EXPECT_EQ(vertex.cancelledNames(), std::vector<std::string>{job});
  EXPECT_EQ(status()["phase"], "Cancelling");
  vertex.setState(job, vertex::JobState::Cancelled);
  reconcile();
  EXPECT_FALSE(cache.get({"ns", "r"}) != nullptr) << "the finalizer went and the object with it";
}

TEST_F(ReconcilerTest, A403OnCreateFailsTheRunAndStopsRetrying) {
  apply();
  vertex.failNextCreate(vertex::ApiError(403, "PERMISSION_DENIED", "Permission denied on resource project test-project."));
  EXPECT_THROW(reconcile(), controller::TerminalError);
  EXPECT_EQ(status()["phase"], "Failed");
  EXPECT_EQ(condition("Submitted"), "False/JobRejected");
  EXPECT_NE(status()["message"].get<std::string>().find("roles/aiplatform.user"), std::string::npos);
  EXPECT_TRUE(vertex.createdBodies().empty());
}

TEST_F(ReconcilerTest, AJobNameWrittenIntoStatusByHandIsNeitherFollowedNorCancelled) {
  apply("", "victim");
  reconcile("victim");
  std::string theirs = currentJob("victim");
  apply();
  reconcile();
  // Someone with write access to trainingruns/status points run r at the other run's job.
  auto run = kube.get(trainingRunResource(), "ns", "r");
  run["status"]["attempts"][0]["jobName"] = theirs;
  kube.updateStatus(trainingRunResource(), "ns", run);
  sync();
  reconcile();
  EXPECT_EQ(status()["phase"], "Failed");
  EXPECT_EQ(condition("Failed"), "True/JobNotOwned");
  // Deleting r cancels nothing of the other run's.
  kube.remove(trainingRunResource(), "ns", "r");
  sync();
  reconcile();
  auto cancelled = vertex.cancelledNames();
  EXPECT_EQ(std::count(cancelled.begin(), cancelled.end(), theirs), 0);
}

// Nothing read from status steers a call: a job name in another project (or location) is neither
// read, nor polled, nor cancelled; the run fails saying so.
TEST_F(ReconcilerTest, AJobNameInAnotherProjectWrittenIntoStatusIsNeverReadNorPolled) {
  std::string theirs = vertex.createJob({"other-project", "us-central1"}, vertex::JobKind::Custom, json::object()).name;
  apply();
  reconcile();
  auto run = kube.get(trainingRunResource(), "ns", "r");
  run["status"]["attempts"][0]["jobName"] = theirs;
  kube.updateStatus(trainingRunResource(), "ns", run);
  sync();
  // A listing of the other project would fail, and its poll failure would show in the job cache.
  vertex.failLocation("projects/other-project/locations/us-central1", vertex::ApiError(403, "PERMISSION_DENIED", "no"));
  int gets = vertex.getCalls();
  reconcile();
  runFor(seconds(300));
  EXPECT_EQ(vertex.getCalls(), gets) << "the job was read";
  EXPECT_FALSE(jobs.pollFailure("projects/other-project/locations/us-central1/customJobs/")) << "the project was listed";
  EXPECT_FALSE(jobs.listed("projects/other-project/locations/us-central1/customJobs/")) << "the project was listed";
  EXPECT_EQ(status()["phase"], "Failed");
  EXPECT_EQ(condition("Failed"), "True/JobNotOwned");
  kube.remove(trainingRunResource(), "ns", "r");
  sync();
  reconcile();
  EXPECT_TRUE(vertex.cancelledNames().empty());
}

TEST_F(ReconcilerTest, AJobDeletedOutsideVtoFailsTheRunWithoutANewJob) {
  apply();
  reconcile();
  vertex.removeJob(currentJob());
  jobs.erase(currentJob());
  reconcile();
  EXPECT_EQ(status()["phase"], "Failed");
  EXPECT_EQ(condition("Failed"), "True/JobNotFound") << status().dump();
  EXPECT_EQ(vertex.createdBodies().size(), 1u);
}

}  // namespace
}  // namespace vto::reconcilers
