// Admission by Kueue as decide sees it (reconcilers/trainingrun/kueue_gate.cpp, kueue.h): a table
// over the states of a run's Workload on the fake clock (none yet, pending with Kueue's message, a
// missing LocalQueue, admitted, evicted, finished, deleted, Kueue absent or the integration off),
// and the Workload vto writes.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "base/rfc3339.h"
#include "reconcilers/retraining/decide.h"
#include "reconcilers/trainingrun/decide.h"
#include "reconcilers/trainingrun/kueue.h"
#include "tests/unit/reconcilers/trainingrun/decide_table.h"

namespace vto::reconcilers {
namespace {

using decide_table::reasons;
using decide_table::Row;
using decide_table::runTable;

using nlohmann::json;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-20T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";
const std::string kUid = "0b0c6f5e-9a51-4d3e-8f0a-6f1c2b3d4e5f";

// A run on one g2-standard-8 (one NVIDIA_L4 of its own), labelled for LocalQueue team-a unless
// `labels` says otherwise.
crd::TrainingRun l4Run(const json& labels = {{"kueue.x-k8s.io/queue-name", "team-a"}}, const std::string& extraSpec = "{}") {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "bert", "namespace": "ml", "generation": 1, "resourceVersion": "5",
                 "creationTimestamp": "2026-12-20T11:00:00Z"},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
             "baseOutputDirectory": "gs://bucket/bert"}})");
  object["metadata"]["uid"] = kUid;
  object["metadata"]["labels"] = labels;
  object["spec"].merge_patch(json::parse(extraSpec));
  return crd::decodeTrainingRun(object);
}

// A run applied a moment ago, before any pass; the operator runs with --kueue.
Observed fresh(const json& labels = {{"kueue.x-k8s.io/queue-name", "team-a"}}, const std::string& extraSpec = "{}") {
  Observed o;
  o.now = T0;
  o.run = l4Run(labels, extraSpec);
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.kueue.enabled = queueNameOf(o.metadata).has_value();
  return o;
}

// The Workload vto made for `o`'s run, as Kueue then left it: `status` (conditions, admission).
json workloadOf(const Observed& o, const json& status = json::object()) {
  auto at = *o.run;
  json workload = renderWorkload(*o.run, at, queueNameOf(o.metadata).value_or(""), priorityClassOf(o.metadata), std::nullopt);
  workload["metadata"]["uid"] = "w-uid";
  workload["metadata"]["resourceVersion"] = "77";
  workload["metadata"]["generation"] = 1;
  workload["status"] = status;
  return workload;
}

void withWorkload(Observed& o, const json& workload) {
  o.kueue.workload = readWorkload(workload);
  o.kueue.workloadObject = std::make_shared<const json>(workload);
}

json condition(const std::string& type, const std::string& status, const std::string& reason, const std::string& message) {
  return {{"type", type}, {"status", status}, {"reason", reason}, {"message", message},
          {"lastTransitionTime", "2026-12-20T11:59:00Z"}};
}

const json kAdmission = {{"clusterQueue", "vertex-gpus"},
                         {"podSetAssignments",
                          json::array({{{"name", "workerpool0"},
                                        {"flavors", {{"vto.dev/nvidia-l4", "vertex"}, {"vto.dev/runs", "vertex"}}},
                                        {"resourceUsage", {{"vto.dev/nvidia-l4", "1"}, {"vto.dev/runs", "1"}}},
                                        {"count", 1}}})}};

json admittedStatus() {
  return {{"admission", kAdmission},
          {"conditions",
           json::array({condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue vertex-gpus"),
                        condition("Admitted", "True", "Admitted", "The workload is admitted")})}};
}

const std::string kInsufficient =
    "couldn't assign flavors to pod set workerpool0: insufficient unused quota for vto.dev/nvidia-l4 in flavor vertex, "
    "1 more needed";

json pendingStatus(const std::string& reason = "Pending", const std::string& message = kInsufficient) {
  return {{"conditions", json::array({condition("QuotaReserved", "False", reason, message)})}};
}

// The stored status after `o`'s pass, fed back as the next pass sees it.
Observed next(Observed o, const Plan& plan) {
  if (plan.status) {
    o.status = *plan.status;
    o.statusStored = true;
  }
  o.hasFinalizer = true;
  o.now += seconds(1);
  return o;
}

std::string conditionOf(const crd::TrainingRunStatus& status, const std::string& type) {
  for (const auto& c : status.conditions)
    if (c.type == type) return c.status + "/" + c.reason + ": " + c.message;
  return "";
}

void noKueueWrites(const Plan& p) {
  EXPECT_FALSE(p.createWorkload.has_value());
  EXPECT_FALSE(p.deleteWorkload.has_value());
  EXPECT_FALSE(p.finishWorkload.has_value());
  EXPECT_FALSE(p.releaseAdmission.has_value());
}

TEST(KueueDecide, TheWorkloadStatesAsATable) {
  runTable({
      {"a run without the label is not Kueue's: its job at once, nothing of Kueue's",
       [] { return fresh(json::object()); }, crd::Phase::Submitted, {},
       [](const Plan& p) {
         EXPECT_TRUE(p.createJob.has_value());
         noKueueWrites(p);
       }},
      {"no Workload yet: the finalizer, the Workload, no job; Queued, waiting for Kueue",
       [] { return fresh(); }, crd::Phase::Queued, {},
       [](const Plan& p) {
         EXPECT_TRUE(p.addFinalizer);
         EXPECT_FALSE(p.createJob.has_value());
         ASSERT_TRUE(p.createWorkload.has_value());
         EXPECT_EQ((*p.createWorkload)["spec"]["queueName"], "team-a");
         EXPECT_EQ(conditionOf(*p.status, "Ready"),
                   "False/WaitingForKueue: waiting for Kueue to admit Workload " + (*p.createWorkload)["metadata"]["name"].get<std::string>());
         EXPECT_GT(p.requeueAfter, Clock::duration::zero());
       }},
      {"Kueue has said nothing yet: it waits, nothing written again",
       [] {
         auto o = fresh();
         auto first = decide(o);
         o = next(o, first);
         withWorkload(o, workloadOf(o));
         return o;
       },
       std::nullopt, {}, noKueueWrites},
      {"pending: Kueue's own message in Ready, told once by an Event",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         withWorkload(o, workloadOf(o, pendingStatus()));
         return o;
       },
       crd::Phase::Queued, {"WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         noKueueWrites(p);
         EXPECT_EQ(conditionOf(*p.status, "Ready"), "False/WaitingForKueue: " + kInsufficient);
         EXPECT_NE(p.status->message.find(kInsufficient), std::string::npos) << p.status->message;
         EXPECT_EQ(p.events[0].type, controller::EventType::Normal);
         EXPECT_EQ(conditionOf(*p.status, "Stalled").substr(0, 6), "False/");
       }},
      {"still pending, the same message: no write, no Event",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         withWorkload(o, workloadOf(o, pendingStatus()));
         return next(o, decide(o));
       },
       std::nullopt, {}, noKueueWrites},
      {"a missing LocalQueue: Kueue's words, in a Warning",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         withWorkload(o, workloadOf(o, pendingStatus("Inadmissible", "LocalQueue team-a doesn't exist")));
         return o;
       },
       crd::Phase::Queued, {"WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionOf(*p.status, "Ready"), "False/WaitingForKueue: LocalQueue team-a doesn't exist");
         EXPECT_EQ(p.events[0].type, controller::EventType::Warning);
       }},
      {"quota reserved, admission checks pending: still no job",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         json status = admittedStatus();
         status["conditions"] = json::array({condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue vertex-gpus"),
                                             condition("Admitted", "False", "UnsatisfiedChecks", "")});
         status["admissionChecks"] = json::array({{{"name", "provisioning"}, {"state", "Pending"}}});
         withWorkload(o, workloadOf(o, status));
         return o;
       },
       crd::Phase::Queued, {"WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_NE(p.status->message.find("ClusterQueue vertex-gpus, waiting for its admission checks"), std::string::npos);
       }},
      {"quota reserved without admission checks (Admitted follows at once): nothing new, nothing written",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         json status = admittedStatus();
         status["conditions"] = json::array({condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue vertex-gpus")});
         withWorkload(o, workloadOf(o, status));
         return o;
       },
       std::nullopt, {}, noKueueWrites},
      {"admitted: the job, and nothing written to the Workload",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         withWorkload(o, workloadOf(o, admittedStatus()));
         return o;
       },
       crd::Phase::Submitted, {},
       [](const Plan& p) {
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(p.createJob->attempt, 1);
         noKueueWrites(p);
       }},
      {"admitted, then evicted before its job: no job; the admission goes back as Kueue's integrations give it",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         json status = admittedStatus();
         status["conditions"].push_back(condition("Evicted", "True", "Preempted", "Preempted to accommodate a workload"));
         withWorkload(o, workloadOf(o, status));
         return o;
       },
       crd::Phase::Queued, {"WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         ASSERT_TRUE(p.releaseAdmission.has_value());
         const auto& status = (*p.releaseAdmission)["status"];
         EXPECT_FALSE(status.contains("admission"));
         std::map<std::string, std::string> conditions;
         for (const auto& c : status["conditions"])
           conditions[c["type"]] = c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
         EXPECT_EQ(conditions["QuotaReserved"], "False/Pending");
         EXPECT_EQ(conditions["Admitted"], "False/NoReservation");
         EXPECT_EQ(conditions["Requeued"], "True/Preempted");
         EXPECT_EQ(conditions["Evicted"], "True/Preempted");
         EXPECT_EQ(p.events[0].type, controller::EventType::Warning);
       }},
      {"Kueue's CRDs are not installed (the create answered 404): said at once, retried with backoff, no job",
       [] {
         auto o = fresh();
         o.kueue.notInstalled = true;
         return o;
       },
       crd::Phase::Pending, {"KueueUnavailable"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.createWorkload.has_value());
         ASSERT_TRUE(p.failure.has_value());
         EXPECT_FALSE(p.failure->terminal);
         EXPECT_NE(p.status->message.find("Kueue is not installed"), std::string::npos) << p.status->message;
         EXPECT_EQ(conditionOf(*p.status, "Stalled").substr(0, 5), "True/");
       }},
      {"the integration is off (no --kueue): said at once, no job, no Workload, nothing retried",
       [] {
         auto o = fresh();
         o.kueue.enabled = false;
         return o;
       },
       crd::Phase::Pending, {"KueueUnavailable"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         noKueueWrites(p);
         EXPECT_FALSE(p.failure.has_value());
         EXPECT_NE(p.status->message.find("without the Kueue integration"), std::string::npos) << p.status->message;
       }},
      {"the API server refused the Workload: said, retried only after an edit",
       [] {
         auto o = fresh();
         o.kueue.refused = "admission webhook denied it";
         return o;
       },
       crd::Phase::Pending, {"KueueUnavailable"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         ASSERT_TRUE(p.failure.has_value());
         EXPECT_TRUE(p.failure->terminal);
       }},
      {"a Workload of that name the run does not control: never used, no job",
       [] {
         auto o = fresh();
         o.kueue.foreign = "a Workload named x already exists";
         return o;
       },
       crd::Phase::Pending, {"KueueUnavailable"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         noKueueWrites(p);
       }},
      {"a queue name Kueue's CRD would refuse: the run is Invalid before any write",
       [] { return fresh({{"kueue.x-k8s.io/queue-name", "Team_A"}}); }, crd::Phase::Invalid, {"InvalidSpec"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         noKueueWrites(p);
       }},
      {"a named WorkloadPriorityClass that does not exist: said, retried, no Workload",
       [] {
         auto o = fresh({{"kueue.x-k8s.io/queue-name", "team-a"}, {"kueue.x-k8s.io/priority-class", "urgent"}});
         o.kueue.priorityProblem = "the WorkloadPriorityClass urgent does not exist";
         return o;
       },
       crd::Phase::Pending, {"KueueUnavailable"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createWorkload.has_value());
         ASSERT_TRUE(p.failure.has_value());
         EXPECT_FALSE(p.failure->terminal);
       }},
      {"the spec asks for more than the Workload says: it is replaced, no job",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         withWorkload(o, workloadOf(o, admittedStatus()));
         o.run = l4Run({{"kueue.x-k8s.io/queue-name", "team-a"}}, R"({"resources": {"machineType": "g2-standard-24",
                       "acceleratorType": "NVIDIA_L4", "acceleratorCount": 2}})");
         return o;
       },
       crd::Phase::Queued, {"WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.createWorkload.has_value());
         ASSERT_TRUE(p.deleteWorkload.has_value());
       }},
      {"a Finished Workload (the run resumes after it ended) is replaced, never used",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         json status = admittedStatus();
         status["conditions"].push_back(condition("Finished", "True", "Failed", "cost limit"));
         withWorkload(o, workloadOf(o, status));
         return o;
       },
       crd::Phase::Queued, {"WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_TRUE(p.deleteWorkload.has_value());
       }},
  });
}

// A run of `o` whose attempt 1 ran kJob, now in `state`, with its Workload admitted.
Observed running(vertex::JobState state) {
  auto o = fresh();
  o = next(o, decide(o));
  withWorkload(o, workloadOf(o, admittedStatus()));
  auto created = decide(o);
  EXPECT_TRUE(created.createJob.has_value());
  CachedJob job;
  job.name = kJob;
  job.state = vertex::JobState::Queued;
  job.createTime = T0;
  job.readAt = T0;
  o = next(o, recordCreatedJob(o, created, job, false));
  job.state = state;
  job.startTime = T0 + seconds(5);
  if (vertex::isTerminal(state)) job.endTime = T0 + seconds(60);
  job.readAt = o.now;
  o.vertex.job = job;
  return o;
}

TEST(KueueDecide, ARunningJobIsFollowedWithoutAWorkloadWrite) {
  auto plan = decide(running(vertex::JobState::Running));
  EXPECT_EQ(plan.status->phase, crd::Phase::Running);
  noKueueWrites(plan);
}

TEST(KueueDecide, TheRunEndsAndItsWorkloadIsFinishedOnceWithItsAdmissionKept) {
  for (auto [state, reason] : {std::pair{vertex::JobState::Succeeded, "Succeeded"}, std::pair{vertex::JobState::Failed, "Failed"}}) {
    SCOPED_TRACE(reason);
    auto o = running(state);
    o.run->spec.checkpointing.resumeOnFailure = false;
    auto plan = decide(o);
    ASSERT_TRUE(plan.finishWorkload.has_value());
    const auto& body = *plan.finishWorkload;
    EXPECT_EQ(body["metadata"]["uid"], "w-uid");
    EXPECT_EQ(body["metadata"]["resourceVersion"], "77") << "a write from a stale read is refused";
    EXPECT_EQ(body["status"]["admission"], kAdmission) << "the admission stays, as Kueue keeps it";
    EXPECT_EQ(body["status"]["resourceRequests"], json::array());
    std::vector<std::string> types;
    for (const auto& c : body["status"]["conditions"]) types.push_back(c["type"]);
    EXPECT_EQ(types, (std::vector<std::string>{"QuotaReserved", "Admitted", "Finished"}));
    const auto& finished = body["status"]["conditions"][2];
    EXPECT_EQ(finished["status"], "True");
    EXPECT_EQ(finished["reason"], reason);
    EXPECT_EQ(finished["lastTransitionTime"], rfc3339(o.now));
    EXPECT_EQ(finished["observedGeneration"], 1);
    // Kueue's answer (Finished=True) reaches the next pass: nothing more.
    auto after = next(o, plan);
    json workload = *o.kueue.workloadObject;
    workload["status"]["conditions"] = body["status"]["conditions"];
    withWorkload(after, workload);
    auto again = decide(after);
    EXPECT_FALSE(again.finishWorkload.has_value());
    EXPECT_FALSE(again.status.has_value());
  }
}

TEST(KueueDecide, ADeletedRunTakesItsWorkloadWithItAsItsFinalizerGoes) {
  auto o = running(vertex::JobState::Cancelled);
  o.metadata.deletionTimestamp = "2026-12-20T12:05:00Z";
  auto plan = decide(o);
  EXPECT_TRUE(plan.removeFinalizer);
  ASSERT_TRUE(plan.deleteWorkload.has_value());
  EXPECT_EQ(*plan.deleteWorkload, o.kueue.workload->name);
  // While the job is still being cancelled, the Workload (and its quota) stays.
  auto cancelling = running(vertex::JobState::Running);
  cancelling.metadata.deletionTimestamp = "2026-12-20T12:05:00Z";
  auto first = decide(cancelling);
  EXPECT_TRUE(first.cancelJob.has_value());
  EXPECT_FALSE(first.deleteWorkload.has_value());
}

TEST(KueueDecide, ASuspendedRunGivesItsAdmissionBackOnceItsJobHasStopped) {
  auto o = running(vertex::JobState::Running);
  o.run->spec.suspend = true;
  auto cancelling = decide(o);
  EXPECT_TRUE(cancelling.cancelJob.has_value());
  EXPECT_FALSE(cancelling.deleteWorkload.has_value()) << "the job still runs on the quota";
  o = next(o, cancelling);
  o.vertex.job->state = vertex::JobState::Cancelled;
  o.vertex.job->endTime = o.now;
  auto suspended = decide(o);
  EXPECT_EQ(suspended.status->phase, crd::Phase::Suspended);
  ASSERT_TRUE(suspended.deleteWorkload.has_value());
  // Unsuspended, with its Workload gone: it queues again before its next attempt's job.
  o = next(o, suspended);
  o.kueue.workload.reset();
  o.kueue.workloadObject.reset();
  o.run->spec.suspend = false;
  o.checkpoints.listed = true;
  auto resumed = decide(o);
  EXPECT_FALSE(resumed.createJob.has_value());
  ASSERT_TRUE(resumed.createWorkload.has_value());
  EXPECT_EQ(resumed.status->phase, crd::Phase::Queued);
}

TEST(KueueDecide, AnEvictionCancelsTheJobReleasesTheAdmissionOnceItEndedAndResumesWhenAdmittedAgain) {
  auto o = running(vertex::JobState::Running);
  json evicted = admittedStatus();
  evicted["conditions"].push_back(condition("Evicted", "True", "Preempted",
                                            "Preempted to accommodate a workload (UID: x, JobUID: y) due to prioritization"));
  withWorkload(o, workloadOf(o, evicted));

  // 1. The job is cancelled as for suspend; the quota stays Kueue's until the job has ended.
  auto cancelling = decide(o);
  ASSERT_TRUE(cancelling.cancelJob.has_value());
  EXPECT_EQ(*cancelling.cancelJob, kJob);
  EXPECT_EQ(reasons(cancelling), std::vector<std::string>{"Preempted"});
  EXPECT_NE(cancelling.events[0].message.find("(Preempted): Preempted to accommodate"), std::string::npos);
  EXPECT_EQ(cancelling.status->phase, crd::Phase::Cancelling);
  noKueueWrites(cancelling);
  EXPECT_FALSE(cancelling.createJob.has_value());
  o = next(o, cancelling);
  o.vertex.job->state = vertex::JobState::Cancelling;
  auto still = decide(o);
  EXPECT_FALSE(still.cancelJob.has_value()) << "asked once";
  EXPECT_TRUE(still.events.empty());
  noKueueWrites(still);

  // 2. Vertex says it ended: the admission goes back as Kueue's integrations give it; the run waits,
  // and no checkpoint is listed yet.
  o = next(o, still);
  o.vertex.job->state = vertex::JobState::Cancelled;
  o.vertex.job->endTime = o.now;
  EXPECT_FALSE(checkpointRequired(o));
  auto waiting = decide(o);
  ASSERT_TRUE(waiting.releaseAdmission.has_value());
  EXPECT_FALSE(waiting.createJob.has_value());
  EXPECT_EQ(waiting.status->phase, crd::Phase::Queued) << waiting.status->message;
  EXPECT_EQ(conditionOf(*waiting.status, "Ready").rfind("False/WaitingForKueue: evicted (Preempted)", 0), 0u);
  EXPECT_FALSE(crd::isFinished(waiting.status->phase)) << "never Cancelled: the run is not over";

  // Kueue took the admission back: pending again, nothing more to write.
  o = next(o, waiting);
  json pending = pendingStatus("Pending", "Preempted to accommodate a workload");
  pending["conditions"].push_back(condition("Evicted", "True", "Preempted", "Preempted to accommodate a workload"));
  withWorkload(o, workloadOf(o, pending));
  auto quiet = decide(o);
  EXPECT_FALSE(quiet.releaseAdmission.has_value());
  EXPECT_FALSE(quiet.createJob.has_value());

  // 3. Admitted again: attempt 2 from the newest checkpoint.
  o = next(o, quiet);
  json again = admittedStatus();
  again["conditions"].push_back(condition("Evicted", "False", "QuotaReserved", "Previously: Preempted"));
  withWorkload(o, workloadOf(o, again));
  EXPECT_TRUE(checkpointRequired(o));
  o.checkpoints.listed = true;
  o.checkpoints.latest = Checkpoint{"gs://bucket/bert/checkpoints/ckpt-4", T0};
  auto resumed = decide(o);
  ASSERT_TRUE(resumed.createJob.has_value());
  EXPECT_EQ(resumed.createJob->attempt, 2);
  EXPECT_EQ(resumed.createJob->resumeFrom, "gs://bucket/bert/checkpoints/ckpt-4");
  EXPECT_EQ(reasons(resumed), std::vector<std::string>{"Resumed"});
  noKueueWrites(resumed);
}

// The admitted Workload of `o`'s run, then evicted by Kueue for `reason` (still holding its admission:
// only vto releases it).
json evictedStatus(const std::string& reason, const std::string& message = "evicted by Kueue") {
  json status = admittedStatus();
  status["conditions"].push_back(condition("Evicted", "True", reason, message));
  return status;
}

std::map<std::string, std::string> conditionsIn(const json& statusApply) {
  std::map<std::string, std::string> out;
  for (const auto& c : statusApply["status"]["conditions"])
    out[c["type"]] = c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
  return out;
}

// Every reason Kueue v0.17.0 evicts with (apis/kueue/v1beta2/workload_types.go; Deactivated with a
// cause as workload.ReasonWithCause writes it): the job is cancelled, told in a Warning with Kueue's
// reason; once it ended the admission goes back, requeued at once only after a preemption or a node
// failure, as Kueue's integrations do; the run waits and never ends Cancelled.
TEST(KueueDecide, EveryEvictionReasonCancelsTheJobAndReleasesTheAdmissionOnceItEnded) {
  const std::vector<std::pair<std::string, bool>> evictions = {
      {"Preempted", true},
      {"NodeFailures", true},
      {"PodsReadyTimeout", false},
      {"AdmissionCheck", false},
      {"ClusterQueueStopped", false},
      {"LocalQueueStopped", false},
      {"Deactivated", false},
      {"DeactivatedDueToRequeuingLimitExceeded", false},
      {"DeactivatedDueToMaximumExecutionTimeExceeded", false},
      {"DeactivatedDueToAdmissionCheck", false},
      {"EvictedOnManagerCluster", false},
      {"WorkloadSliceReplaced", false},
  };
  std::vector<Row> rows;
  for (const auto& [reason, requeued] : evictions) {
    rows.push_back({reason + ", the job running: cancelled, a Warning with Kueue's reason",
                    [reason] {
                      auto o = running(vertex::JobState::Running);
                      withWorkload(o, workloadOf(o, evictedStatus(reason)));
                      return o;
                    },
                    crd::Phase::Cancelling, {"Preempted"},
                    [reason](const Plan& p) {
                      EXPECT_EQ(p.cancelJob, kJob);
                      EXPECT_EQ(p.events[0].type, controller::EventType::Warning);
                      EXPECT_NE(p.events[0].message.find("(" + reason + "): evicted by Kueue"), std::string::npos)
                          << p.events[0].message;
                      EXPECT_EQ(p.evictedBy, reason);
                      noKueueWrites(p);
                    }});
    rows.push_back({reason + ", the job cancelled: the admission released, the run waits",
                    [reason] {
                      auto o = running(vertex::JobState::Running);
                      withWorkload(o, workloadOf(o, evictedStatus(reason)));
                      o = next(o, decide(o));
                      o.vertex.job->state = vertex::JobState::Cancelled;
                      o.vertex.job->endTime = o.now;
                      return o;
                    },
                    crd::Phase::Queued, {"WaitingForKueue"},
                    [reason, requeued](const Plan& p) {
                      EXPECT_FALSE(p.cancelJob.has_value());
                      EXPECT_FALSE(p.createJob.has_value());
                      ASSERT_TRUE(p.releaseAdmission.has_value());
                      EXPECT_FALSE((*p.releaseAdmission)["status"].contains("admission"));
                      auto conditions = conditionsIn(*p.releaseAdmission);
                      EXPECT_EQ(conditions["Requeued"], (requeued ? "True/" : "False/") + reason);
                      EXPECT_EQ(conditions["QuotaReserved"], "False/Pending");
                      EXPECT_EQ(conditions["Admitted"], "False/NoReservation");
                      EXPECT_EQ(conditionOf(*p.status, "Ready").rfind("False/WaitingForKueue: evicted (" + reason + ")", 0), 0u);
                      EXPECT_EQ(p.events[0].type, controller::EventType::Warning);
                    }});
  }
  runTable(rows);
}

// The operator killed inside the windows an eviction opens: after Vertex took the cancel but before
// the status that marks the job as the eviction's; after that status but before the release. A
// restarted operator sees only Vertex and the Workload, and must neither end the run Cancelled nor
// cancel or release twice.
TEST(KueueDecide, AnEvictionDecidedAgainAfterACrashEndsTheSameWay) {
  auto evicted = [] {
    auto o = running(vertex::JobState::Running);
    withWorkload(o, workloadOf(o, evictedStatus("Preempted")));
    return o;
  };
  runTable({
      {"killed after the cancel, before its status: Vertex says CANCELLING; not asked again, the job marked",
       [&] {
         auto o = evicted();
         o.vertex.job->state = vertex::JobState::Cancelling;
         return o;
       },
       crd::Phase::Cancelling, {"Preempted"},
       [](const Plan& p) {
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_EQ(p.status->history.attempts.back().message, "cancelled by vto: Kueue evicted the run's Workload");
         EXPECT_EQ(p.evictedBy, "Preempted") << "the dead pass's Event and count, told now";
         noKueueWrites(p);
       }},
      {"killed after the cancel, before its status: Vertex says CANCELLED; released, waiting, not Cancelled",
       [&] {
         auto o = evicted();
         o.vertex.job->state = vertex::JobState::Cancelled;
         o.vertex.job->endTime = o.now;
         return o;
       },
       crd::Phase::Queued, {"Preempted", "WaitingForKueue"},
       [](const Plan& p) {
         EXPECT_TRUE(p.releaseAdmission.has_value());
         EXPECT_FALSE(p.finished);
         EXPECT_FALSE(p.finishWorkload.has_value()) << "a Finished Workload would never be admitted again";
         EXPECT_EQ(p.status->history.attempts.back().message, "cancelled by vto: Kueue evicted the run's Workload");
       }},
      {"no checkpoint listing while it waits for Kueue, marked or not",
       [&] {
         auto o = evicted();
         o.vertex.job->state = vertex::JobState::Cancelled;
         EXPECT_FALSE(checkpointRequired(o));
         return o;
       },
       crd::Phase::Queued, {"Preempted", "WaitingForKueue"}},
      {"killed after the status, before the release: released now, once",
       [&] {
         auto o = evicted();
         o = next(o, decide(o));
         o.vertex.job->state = vertex::JobState::Cancelled;
         o.vertex.job->endTime = o.now;
         auto waiting = decide(o);
         EXPECT_TRUE(waiting.releaseAdmission.has_value());
         return next(o, waiting);  // the release never reached the API server: the Workload as it was
       },
       std::nullopt, {},
       [](const Plan& p) {
         EXPECT_TRUE(p.releaseAdmission.has_value()) << "the admission still held";
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_FALSE(p.createJob.has_value());
       }},
      {"a job cancelled outside vto while the Workload stays admitted is still the user's cancel",
       [] { return running(vertex::JobState::Cancelled); }, crd::Phase::Cancelled, {"Cancelled"},
       [](const Plan& p) { EXPECT_TRUE(p.finishWorkload.has_value()); }},
  });
}

// The Workload's other states once a job runs: deleted by someone else (the job goes on: a deleted
// Workload cannot be told from one the cache has not listed yet), Finished by someone else (nothing
// to do until the run needs a new admission).
TEST(KueueDecide, AWorkloadGoneOrFinishedUnderARunningJobLeavesTheJobAlone) {
  runTable({
      {"deleted under a running job: followed as before, no new Workload while the job runs",
       [] {
         auto o = running(vertex::JobState::Running);
         o = next(o, decide(o));  // Running already stored
         o.kueue.workload.reset();
         o.kueue.workloadObject.reset();
         return o;
       },
       std::nullopt, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.cancelJob.has_value());
         noKueueWrites(p);
       }},
      {"deleted while waiting for admission: made again, still no job",
       [] {
         auto o = fresh();
         o = next(o, decide(o));
         withWorkload(o, workloadOf(o, pendingStatus()));
         o = next(o, decide(o));
         o.kueue.workload.reset();
         o.kueue.workloadObject.reset();
         return o;
       },
       crd::Phase::Queued, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_TRUE(p.createWorkload.has_value());
       }},
      {"Finished under a running job: followed, not finished again",
       [] {
         auto o = running(vertex::JobState::Running);
         o = next(o, decide(o));
         json status = admittedStatus();
         status["conditions"].push_back(condition("Finished", "True", "Succeeded", "by hand"));
         withWorkload(o, workloadOf(o, status));
         return o;
       },
       std::nullopt, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.cancelJob.has_value());
         noKueueWrites(p);
       }},
  });
}

// A RetrainingPolicy whose template carries the labels: each run it creates is Kueue's, so it gets a
// Workload on the policy's queue with the policy's priority class, and no job before admission.
TEST(KueueDecide, ARetrainingPolicysRunsInheritItsQueueAndWaitForKueue) {
  json policy = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "RetrainingPolicy",
    "metadata": {"name": "fraud", "namespace": "ml", "uid": "p-uid", "generation": 1,
                 "creationTimestamp": "2026-12-20T11:00:00Z"},
    "spec": {"template": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a",
                                                  "kueue.x-k8s.io/priority-class": "nightly"}},
                          "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                   "resources": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4",
                                                 "acceleratorCount": 1},
                                   "baseOutputDirectory": "gs://bucket/fraud/"}},
             "triggers": {"schedule": {"cron": "0 * * * *"}}}})");
  auto plan = decidePolicy(readPolicy(policy, {}, T0 + seconds(30)));
  ASSERT_EQ(plan.create.size(), 1u) << "the 12:00 slot";
  json run = plan.create[0].run;
  EXPECT_EQ(run["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "team-a");
  run["metadata"]["uid"] = kUid;
  run["metadata"]["generation"] = 1;
  run["metadata"]["resourceVersion"] = "1";

  Observed o;
  o.now = T0 + seconds(31);
  o.run = crd::decodeTrainingRun(run);
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.kueue.enabled = true;
  o.kueue.priority = 10;
  auto first = decide(o);
  EXPECT_FALSE(first.createJob.has_value());
  ASSERT_TRUE(first.createWorkload.has_value());
  EXPECT_EQ((*first.createWorkload)["spec"]["queueName"], "team-a");
  EXPECT_EQ((*first.createWorkload)["spec"]["priorityClassRef"]["name"], "nightly");
  EXPECT_EQ((*first.createWorkload)["spec"]["priority"], 10);
  EXPECT_EQ((*first.createWorkload)["metadata"]["ownerReferences"][0]["name"], run["metadata"]["name"]);
  EXPECT_EQ(first.status->phase, crd::Phase::Queued);
  // Admitted: its job, as for any labelled run.
  o = next(o, first);
  json admitted = *first.createWorkload;
  admitted["metadata"]["uid"] = "w-uid";
  admitted["status"] = admittedStatus();
  withWorkload(o, admitted);
  EXPECT_TRUE(decide(o).createJob.has_value());
}

TEST(KueueDecide, TheWorkloadSaysWhatThePlacementAsksFor) {
  auto o = fresh({{"kueue.x-k8s.io/queue-name", "team-a"}, {"kueue.x-k8s.io/priority-class", "urgent"}});
  o.kueue.priority = 1000;
  auto plan = decide(o);
  ASSERT_TRUE(plan.createWorkload.has_value());
  const auto& w = *plan.createWorkload;
  EXPECT_EQ(w["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(w["kind"], "Workload");
  EXPECT_EQ(w["metadata"]["namespace"], "ml");
  EXPECT_EQ(w["metadata"]["name"], workloadNameOf(o.metadata));
  EXPECT_EQ(w["metadata"]["labels"][kWorkloadRunUidLabel], kUid);
  EXPECT_EQ(w["metadata"]["labels"][kKueueJobUidLabel], kUid);
  const auto& owner = w["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "TrainingRun");
  EXPECT_EQ(owner["name"], "bert");
  EXPECT_EQ(owner["uid"], kUid);
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(w["spec"]["priorityClassRef"],
            json({{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "urgent"}}));
  EXPECT_EQ(w["spec"]["priority"], 1000);
  ASSERT_EQ(w["spec"]["podSets"].size(), 1u);
  const auto& podSet = w["spec"]["podSets"][0];
  EXPECT_EQ(podSet["name"], "workerpool0");
  EXPECT_EQ(podSet["count"], 1);
  EXPECT_EQ(podSet["template"]["spec"]["containers"][0]["resources"]["requests"],
            json({{"vto.dev/nvidia-l4", "1"}, {"vto.dev/runs", "1"}, {"cpu", "0"}, {"memory", "0"}}));
  // What vto wrote reads back as what it asks for: no replacement loop.
  json stored = w;
  stored["metadata"]["uid"] = "w";
  EXPECT_EQ(readWorkload(stored).podSets, podSetsOf(*o.run));
  EXPECT_EQ(readWorkload(stored).priorityClass, "urgent");
}

TEST(KueueDecide, PodSetsFollowTheWorkerPools) {
  // Three machines of 2 T4 each: the chief's pool and the workers' (Vertex's replica counts), the runs
  // resource on the first only.
  auto multi = l4Run({{"kueue.x-k8s.io/queue-name", "q"}},
                     R"({"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
                         "distribution": {"strategy": "MultiWorkerMirrored", "workerCount": 3}})");
  auto sets = podSetsOf(multi);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0], (PodSetShape{"workerpool0", 1, {{"vto.dev/nvidia-tesla-t4", 2}, {"vto.dev/runs", 1}, {"cpu", 0}, {"memory", 0}}}));
  EXPECT_EQ(sets[1], (PodSetShape{"workerpool1", 2, {{"vto.dev/nvidia-tesla-t4", 2}, {"cpu", 0}, {"memory", 0}}}));
  // A CPU-only run asks Kueue for one run and nothing else.
  auto cpu = l4Run({{"kueue.x-k8s.io/queue-name", "q"}}, R"({"resources": {"machineType": "n1-standard-4", "acceleratorType": null,
                                                              "acceleratorCount": null}})");
  EXPECT_EQ(podSetsOf(cpu), (std::vector<PodSetShape>{{"workerpool0", 1, {{"vto.dev/runs", 1}, {"cpu", 0}, {"memory", 0}}}}));
  EXPECT_EQ(acceleratorResourceOf("TPU_V5_LITEPOD"), "vto.dev/tpu-v5-litepod");
  EXPECT_EQ(acceleratorResourceOf("NVIDIA_L4"), "vto.dev/nvidia-l4");
}

TEST(KueueDecide, WorkloadNamesAreDnsLabelsOfTheNameAndUid) {
  crd::ObjectMeta meta;
  meta.name = "bert";
  meta.uid = kUid;
  auto name = workloadNameOf(meta);
  EXPECT_EQ(name.rfind("trainingrun-bert-", 0), 0u) << name;
  EXPECT_EQ(name, workloadNameOf(meta)) << "the same on every pass";
  meta.uid = "another-uid";
  EXPECT_NE(workloadNameOf(meta), name) << "a re-created run of the same name gets another";
  meta.name = std::string(250, 'a') + ".b";
  auto longName = workloadNameOf(meta);
  EXPECT_LE(longName.size(), 63u);
  EXPECT_TRUE(isKueueObjectName(longName)) << longName;
  meta.name = "a.b---";
  EXPECT_TRUE(isKueueObjectName(workloadNameOf(meta))) << workloadNameOf(meta);
}

TEST(KueueDecide, AWorkloadReadsWithoutTrustingItsTypes) {
  json hostile = {{"metadata", {{"name", 5}, {"ownerReferences", "x"}}},
                  {"spec", {{"podSets", {{{"count", "many"}, {"template", 1}}}}, {"queueName", json::array()}}},
                  {"status", {{"conditions", {{{"type", "Admitted"}, {"status", true}}, 7}}}}};
  auto view = readWorkload(hostile);
  EXPECT_EQ(view.name, "");
  EXPECT_EQ(view.controllerUid, "");
  EXPECT_FALSE(view.admitted());
  ASSERT_EQ(view.podSets.size(), 1u);
  EXPECT_EQ(view.podSets[0].count, -1);
}

}  // namespace
}  // namespace vto::reconcilers
