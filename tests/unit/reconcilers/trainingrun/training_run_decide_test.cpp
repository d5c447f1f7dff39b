// decide() as tables: each row is what observe saw (a run, its job, a checkpoint, a Vertex error, the
// clock) and what the plan must say (phase, actions, Events, requeue). No fakes: decide is pure.
#include "reconcilers/trainingrun/decide.h"
#include "reconcilers/trainingrun/reconciler.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/rfc3339.h"
#include "reconcilers/jobs/log_tail.h"
#include "tests/unit/reconcilers/trainingrun/decide_table.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {
namespace {

using decide_table::reasons;
using decide_table::Row;
using decide_table::runTable;

using nlohmann::json;
using std::chrono::seconds;
using vertex::JobState;

const Clock::time_point T0 = parseRfc3339("2026-03-01T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";

crd::TrainingRun runWith(const std::string& extraSpec = "") {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1, "resourceVersion": "5"},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-4"},
             "baseOutputDirectory": "gs://bucket/r"}})");
  if (!extraSpec.empty()) object["spec"].merge_patch(json::parse(extraSpec));
  return crd::decodeTrainingRun(object);
}

CachedJob jobIn(JobState state, std::optional<vertex::RpcStatus> error = std::nullopt) {
  CachedJob job;
  job.name = kJob;
  job.state = state;
  job.createTime = T0 - seconds(600);
  if (state != JobState::Queued && state != JobState::Pending) job.startTime = T0 - seconds(500);
  if (vertex::isTerminal(state)) job.endTime = T0 - seconds(10);
  job.error = std::move(error);
  job.readAt = T0;
  return job;
}

// A run whose attempt 1 was submitted as kJob and last seen in `phase`.
Observed submitted(crd::Phase phase, const std::string& extraSpec = "") {
  Observed o;
  o.now = T0;
  o.run = runWith(extraSpec);
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.hasFinalizer = true;
  o.statusStored = true;
  o.status.observedGeneration = 1;
  o.status.phase = phase;
  crd::Attempt first;
  first.attempt = 1;
  first.jobName = kJob;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  o.status.history.startTime = T0 - seconds(600);
  return o;
}

Observed fresh() {
  auto o = submitted(crd::Phase::Pending);
  o.hasFinalizer = false;
  o.statusStored = false;
  o.status = {};
  return o;
}

std::string conditionReason(const crd::TrainingRunStatus& status, const std::string& type) {
  for (const auto& c : status.conditions) {
    if (c.type == type) return c.status + "/" + c.reason;
  }
  return "";
}

TEST(DecideTest, PhaseTransitionsFollowTheJob) {
  runTable({
      {"a new run gets the finalizer and a job", fresh, crd::Phase::Submitted, {},
       [](const Plan& p) {
         EXPECT_TRUE(p.addFinalizer);
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(p.createJob->attempt, 1);
         EXPECT_EQ(p.createJob->where.project, "test-project");
         EXPECT_EQ(p.createJob->kind, vertex::JobKind::Custom);
         EXPECT_EQ(p.createJob->resumeFrom, "");
       }},
      {"queued",
       [] {
         auto o = submitted(crd::Phase::Submitted);
         o.vertex.job = jobIn(JobState::Queued);
         return o;
       },
       crd::Phase::Queued, {"JobQueued"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Running"), "False/JobQueued");
         EXPECT_EQ(p.requeueAfter, std::chrono::minutes(5));
       }},
      {"pending is queued too",
       [] {
         auto o = submitted(crd::Phase::Submitted);
         o.vertex.job = jobIn(JobState::Pending);
         return o;
       },
       crd::Phase::Queued, {"JobQueued"}},
      {"running",
       [] {
         auto o = submitted(crd::Phase::Queued);
         o.vertex.job = jobIn(JobState::Running);
         return o;
       },
       crd::Phase::Running, {"JobRunning"},
       [](const Plan& p) {
         EXPECT_EQ(conditionReason(*p.status, "Running"), "True/JobRunning");
         EXPECT_EQ(p.status->job->state, "JOB_STATE_RUNNING");
         EXPECT_EQ(p.status->job->id, "7");
       }},
      {"succeeded",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.job = jobIn(JobState::Succeeded);
         return o;
       },
       crd::Phase::Succeeded, {"Succeeded"},
       [](const Plan& p) {
         EXPECT_TRUE(p.finished);
         EXPECT_EQ(p.status->completionTime, T0 - seconds(10));
         EXPECT_EQ(conditionReason(*p.status, "Succeeded"), "True/JobSucceeded");
       }},
      {"a user error fails without resuming",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{3, "The replica exited with a non-zero status of 1."});
         o.checkpoints.listed = true;
         return o;
       },
       crd::Phase::Failed, {"Failed"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(p.status->history.attempts[0].failureClass, crd::FailureClass::UserError);
         EXPECT_EQ(conditionReason(*p.status, "Failed"), "True/JobFailed");
       }},
      {"cancelled outside vto",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.job = jobIn(JobState::Cancelled);
         return o;
       },
       crd::Phase::Cancelled, {"Cancelled"}},
      {"cancelling is looked at soon",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.job = jobIn(JobState::Cancelling);
         return o;
       },
       crd::Phase::Cancelling, {}, [](const Plan& p) { EXPECT_EQ(p.requeueAfter, seconds(2)); }},
  });
}

TEST(DecideTest, FailuresResumeFromTheNewestCheckpointWithinTheBudget) {
  auto preempted = [](int resumes, Clock::duration sinceFailure) {
    auto o = submitted(crd::Phase::Running, R"({"checkpointing": {"resumeBackoff": "30s", "maxResumes": 2}})");
    o.status.history.resumes = resumes;
    o.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{14, "The VM was preempted."});
    o.vertex.job->endTime = T0 - sinceFailure;
    return o;
  };
  runTable({
      {"within the backoff: Resuming, back when it has passed", [&] { return preempted(0, seconds(10)); },
       crd::Phase::Resuming, {"Resuming"},
       [](const Plan& p) {
         EXPECT_EQ(p.requeueAfter, seconds(20));
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Failed"), "False/Resuming");
       }},
      {"after the backoff: attempt 2 from the checkpoint",
       [&] {
         auto o = preempted(0, seconds(30));
         o.checkpoints.listed = true;
         o.checkpoints.latest = Checkpoint{"gs://bucket/r/checkpoints/ckpt-10", parseRfc3339("2026-03-01T11:59:00Z")};
         return o;
       },
       crd::Phase::Submitted, {"Resumed"},
       [](const Plan& p) {
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(p.createJob->attempt, 2);
         EXPECT_EQ(p.createJob->resumeFrom, "gs://bucket/r/checkpoints/ckpt-10");
         EXPECT_EQ(p.status->history.resumes, 1);
         EXPECT_EQ(p.status->history.attemptCount, 2);
         EXPECT_EQ(p.status->history.lastCheckpoint->uri, "gs://bucket/r/checkpoints/ckpt-10");
         EXPECT_EQ(p.resumedAfter, crd::FailureClass::Preemption);
       }},
      {"the checkpoint listing failed: retried, never guessed, and CheckpointsReadable=False says so",
       [&] {
         auto o = preempted(0, seconds(30));
         o.checkpoints.error = "503 backend error";
         return o;
       },
       crd::Phase::Running, {"CheckpointsUnreadable"},
       [](const Plan& p) {
         EXPECT_TRUE(p.failure && !p.failure->terminal);
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "CheckpointsReadable"), "False/CheckpointListFailed");
       }},
      {"the budget is spent",
       [&] {
         auto o = preempted(2, seconds(3600));
         o.checkpoints.listed = true;
         return o;
       },
       crd::Phase::Failed, {"ResumeBudgetExhausted", "Failed"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Failed"), "True/ResumeBudgetExhausted");
         EXPECT_TRUE(p.finished);
       }},
  });
}

TEST(DecideTest, VertexErrorsBecomeConditions) {
  runTable({
      {"the job was deleted outside vto",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.notFound = true;
         return o;
       },
       crd::Phase::Failed, {"Failed"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value()) << "never replaced silently";
         EXPECT_EQ(conditionReason(*p.status, "Failed"), "True/JobNotFound");
       }},
      {"403 reading the job: what we know stays, the reason is shown",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.unavailable = VertexFailure{403, "reading " + kJob + ": PERMISSION_DENIED"};
         return o;
       },
       crd::Phase::Running, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/VertexError");
       }},
      {"just started: the first poll will bring the job",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.awaitingFirstPoll = true;
         return o;
       },
       crd::Phase::Running, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(p.requeueAfter, seconds(5));
       }},
      {"a failing poll target while the job is known",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.job = jobIn(JobState::Running);
         o.vertex.unavailable = VertexFailure{503, "polling Vertex AI jobs in projects/test-project/locations/us-central1: UNAVAILABLE"};
         return o;
       },
       crd::Phase::Running, {}, [](const Plan& p) { EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/VertexError"); }},
      {"403 on create: Failed, terminal, with the fix",
       [] {
         auto o = fresh();
         o.vertex.createRejected = VertexFailure{403, "Permission denied on resource project test-project."};
         return o;
       },
       crd::Phase::Failed, {"Failed"},
       [](const Plan& p) {
         EXPECT_TRUE(p.failure && p.failure->terminal);
         EXPECT_NE(p.status->message.find("roles/aiplatform.user"), std::string::npos);
         EXPECT_EQ(conditionReason(*p.status, "Submitted"), "False/JobRejected");
       }},
      {"404 on create (no such project): Failed, terminal",
       [] {
         auto o = fresh();
         o.vertex.createRejected = VertexFailure{404, "Project test-project not found."};
         return o;
       },
       crd::Phase::Failed, {"Failed"}, [](const Plan& p) { EXPECT_TRUE(p.failure && p.failure->terminal); }},
  });
  // Once Vertex answers again the gate goes: Ready says what the run is doing.
  auto o = submitted(crd::Phase::Running);
  o.vertex.job = jobIn(JobState::Running);
  o.status.conditions.push_back(crd::Condition{"Ready", "False", "VertexError", "x", std::nullopt, 1});
  auto plan = decide(o);
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(conditionReason(*plan.status, "Ready"), "False/Running");
}

TEST(DecideTest, DeletionFollowsTheDeletionPolicy) {
  auto deleting = [](const std::string& spec, std::optional<JobState> state) {
    auto o = submitted(crd::Phase::Running, spec);
    o.metadata.deletionTimestamp = "2026-03-01T11:59:59Z";
    o.run->metadata.deletionTimestamp = o.metadata.deletionTimestamp;
    if (state) o.vertex.job = jobIn(*state);
    return o;
  };
  runTable({
      {"Cancel: the running job is cancelled first", [&] { return deleting("", JobState::Running); },
       crd::Phase::Cancelling, {"CancellingJob"},
       [](const Plan& p) {
         EXPECT_EQ(p.cancelJob, kJob);
         EXPECT_FALSE(p.removeFinalizer);
         EXPECT_EQ(p.requeueAfter, seconds(2));
       }},
      {"Cancel: while cancelling, wait", [&] { return deleting("", JobState::Cancelling); }, crd::Phase::Cancelling, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_FALSE(p.removeFinalizer);
       }},
      {"Cancel: the job ended, the object goes", [&] { return deleting("", JobState::Cancelled); }, std::nullopt, {},
       [](const Plan& p) { EXPECT_TRUE(p.removeFinalizer); }},
      {"Orphan: the job runs on, the object goes", [&] { return deleting(R"({"deletionPolicy": "Orphan"})", JobState::Running); },
       std::nullopt, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_TRUE(p.removeFinalizer);
       }},
      {"no finalizer: nothing to do",
       [&] {
         auto o = deleting("", JobState::Running);
         o.hasFinalizer = false;
         return o;
       },
       std::nullopt, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_FALSE(p.removeFinalizer);
       }},
  });
}

TEST(DecideTest, AFinishedRunWaitsForItsTtlThenIsDeleted) {
  auto finishedAgo = [](Clock::duration ago) {
    auto o = submitted(crd::Phase::Succeeded, R"({"ttlSecondsAfterFinished": 100})");
    o.status.completionTime = T0 - ago;
    return o;
  };
  auto early = decide(finishedAgo(seconds(40)));
  EXPECT_FALSE(early.deleteRun);
  EXPECT_EQ(early.requeueAfter, seconds(60));
  EXPECT_FALSE(early.createJob.has_value());
  auto due = decide(finishedAgo(seconds(100)));
  EXPECT_TRUE(due.deleteRun);
}

TEST(DecideTest, SuspensionCancelsAndUnsuspensionStartsTheNextAttempt) {
  runTable({
      {"suspend: cancel the running job",
       [] {
         auto o = submitted(crd::Phase::Running, R"({"suspend": true})");
         o.vertex.job = jobIn(JobState::Running);
         return o;
       },
       crd::Phase::Cancelling, {"Suspending"},
       [](const Plan& p) {
         EXPECT_EQ(p.cancelJob, kJob);
         EXPECT_EQ(p.status->history.attempts[0].message, "cancelled by vto: the run was suspended");
       }},
      {"suspend: once cancelled, Suspended",
       [] {
         auto o = submitted(crd::Phase::Cancelling, R"({"suspend": true})");
         o.status.history.attempts[0].message = "cancelled by vto: the run was suspended";
         o.vertex.job = jobIn(JobState::Cancelled);
         return o;
       },
       crd::Phase::Suspended, {"Suspended"},
       [](const Plan& p) { EXPECT_EQ(conditionReason(*p.status, "Running"), "False/Suspended"); }},
      {"suspended before any job: no job",
       [] {
         auto o = fresh();
         o.run = runWith(R"({"suspend": true})");
         return o;
       },
       crd::Phase::Suspended, {"Suspended"}, [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"unsuspend: attempt 2, no resume budget spent",
       [] {
         auto o = submitted(crd::Phase::Suspended);
         o.status.history.attempts[0].message = "cancelled by vto: the run was suspended";
         o.vertex.job = jobIn(JobState::Cancelled);
         o.checkpoints.listed = true;
         return o;
       },
       crd::Phase::Submitted, {"Resumed"},
       [](const Plan& p) {
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(p.createJob->attempt, 2);
         EXPECT_EQ(p.status->history.resumes, 0);
       }},
  });
}

TEST(DecideTest, InvalidRunsGetAConditionAndAnEventButNoJob) {
  runTable({
      {"a decode failure",
       [] {
         auto o = fresh();
         o.run.reset();
         o.decodeError = "spec.resources.acceleratorCount: must be an integer";
         return o;
       },
       crd::Phase::Invalid, {"InvalidSpec"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.addFinalizer);
         EXPECT_EQ(conditionReason(*p.status, "Valid"), "False/SpecInvalid");
         EXPECT_EQ(p.requeueAfter, Clock::duration::zero());
       }},
      {"a spec that fails validation",
       [] {
         auto o = fresh();
         o.run = runWith(R"({"trainer": {"container": {"imageUri": "gcr.io/p/i:1"}}})");
         return o;
       },
       crd::Phase::Invalid, {"InvalidSpec"}, [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"no project or location anywhere: terminal",
       [] {
         auto o = fresh();
         o.defaults = {};
         return o;
       },
       crd::Phase::Invalid, {"InvalidSpec"}, [](const Plan& p) { EXPECT_TRUE(p.failure && p.failure->terminal); }},
  });
}

TEST(DecideTest, StatusUnchangedMeansNoWriteAndNoEvent) {
  auto o = submitted(crd::Phase::Queued);
  o.vertex.job = jobIn(JobState::Running);
  auto first = decide(o);
  ASSERT_TRUE(first.status.has_value());
  // The next pass sees what the first wrote, and the same job, later.
  o.status = *first.status;
  o.now = T0 + seconds(30);
  auto second = decide(o);
  EXPECT_FALSE(second.status.has_value()) << "nothing changed: no status write";
  EXPECT_TRUE(second.events.empty());
  EXPECT_FALSE(second.createJob.has_value());
  EXPECT_FALSE(second.addFinalizer);
}

TEST(DecideTest, ARunningRunComesBackWhenItsNextCheckpointLookIsDue) {
  auto o = submitted(crd::Phase::Running);
  o.vertex.job = jobIn(JobState::Running);
  o.checkpoints.nextLookAt = T0 + seconds(45);
  EXPECT_EQ(decide(o).requeueAfter, seconds(45));
  o.checkpoints.latest = Checkpoint{"gs://bucket/r/checkpoints/ckpt-3", parseRfc3339("2026-03-01T11:59:00Z")};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->history.lastCheckpoint->uri, "gs://bucket/r/checkpoints/ckpt-3");
}

TEST(DecideTest, ACreatedJobIsRecordedAtOnceWithItsState) {
  auto o = fresh();
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value());
  auto created = jobIn(JobState::Queued);
  auto recorded = recordCreatedJob(o, plan, created, false);
  ASSERT_TRUE(recorded.status.has_value());
  EXPECT_EQ(recorded.status->history.attempts[0].jobName, kJob);
  EXPECT_EQ(recorded.status->job->name, kJob);
  EXPECT_EQ(crd::enumName(*recorded.status->phase, crd::phaseNames()), "Queued");
  EXPECT_EQ(reasons(recorded), (std::vector<std::string>{"JobCreated"})) << "one Event per run at submission";
  auto adopted = recordCreatedJob(o, plan, created, true);
  EXPECT_TRUE(adopted.events.empty()) << "an adopted job was not created now";
}


// act holds the status that records a new job (HeldStatuses: its phase and history only); the
// catch-up pass rebuilds the rest from what it observes. It must write what act would have written.
TEST(DecideTest, TheCatchUpRebuildsTheHeldStatusExactlyAndTellsNothingAgain) {
  auto o = fresh();
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value());
  for (auto state : {JobState::Queued, JobState::Running}) {
    auto created = jobIn(JobState::Queued);
    auto recorded = recordCreatedJob(o, plan, created, false);
    ASSERT_TRUE(recorded.status.has_value());
    HeldStatuses held;  // through its encoding, as act holds it
    held.hold({"ns", "r"}, o.metadata.uid, *recorded.status);
    auto heldStatus = held.heldFor({"ns", "r"}, o.metadata.uid);
    ASSERT_TRUE(heldStatus.has_value());
    EXPECT_FALSE(held.heldFor({"ns", "r"}, "another-uid").has_value()) << "a namesake sees nothing of it";
    Observed catchUp = o;
    catchUp.hasFinalizer = true;
    catchUp.status.phase = heldStatus->phase;
    catchUp.status.history = heldStatus->history;
    catchUp.statusHeld = true;
    catchUp.statusStored = false;
    catchUp.vertex.job = jobIn(state);
    auto rebuilt = decide(catchUp);
    ASSERT_TRUE(rebuilt.status.has_value()) << "a held status is always written";
    EXPECT_FALSE(rebuilt.createJob.has_value());
    if (state == JobState::Queued) {
      EXPECT_EQ(*rebuilt.status, *recorded.status);
      EXPECT_TRUE(rebuilt.events.empty()) << "JobCreated told it";
    } else {
      EXPECT_EQ(crd::enumName(*rebuilt.status->phase, crd::phaseNames()), "Running");
      EXPECT_EQ(reasons(rebuilt), std::vector<std::string>{"JobRunning"}) << "the job's progress is told as usual";
      ASSERT_EQ(rebuilt.status->history.attempts.size(), 1u);
      EXPECT_EQ(rebuilt.status->history.attempts[0].jobName, kJob);
    }
  }
}

// Tenancy: one rule for namespace "ns"; the run is in "ns" and uses project "proj" by default. The
// rule allows the test run's image unless it says otherwise.
governance::TenancyRules rulesFor(const std::string& rule) {
  auto parsed = json::parse(rule);
  if (!parsed.contains("imagePrefixes")) parsed["imagePrefixes"] = {"us-docker.pkg.dev/p/"};
  return governance::parseTenancyRules(json::array({parsed}));
}

TEST(DecideTest, ATenancyViolationIsRefusedBeforeAnyJob) {
  static const auto otherProject = rulesFor(R"({"namespaces": ["ns"], "projects": ["team-b-proj"]})");
  static const auto otherNamespace = rulesFor(R"({"namespaces": ["team-b"]})");
  static const auto allowed = rulesFor(R"({"namespaces": ["ns"], "projects": ["test-project"]})");
  auto with = [](const governance::TenancyRules& rules) {
    auto o = fresh();
    o.tenancy.rules = &rules;
    o.tenancy.ns = {"ns", std::nullopt};
    return o;
  };
  runTable({
      {"another team's project: Invalid, TenantPolicyViolation naming the field and the rule, no job",
       [&] { return with(otherProject); }, crd::Phase::Invalid, {"TenantPolicyViolation"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.addFinalizer);
         EXPECT_FALSE(p.failure.has_value()) << "nothing to retry: an edit brings the run back";
         EXPECT_EQ(conditionReason(*p.status, "Valid"), "False/TenantPolicyViolation");
         EXPECT_NE(p.status->message.find("spec.project"), std::string::npos) << p.status->message;
         EXPECT_NE(p.status->message.find("tenancy[0]"), std::string::npos) << p.status->message;
       }},
      {"a namespace no rule matches: refused",
       [&] { return with(otherNamespace); }, crd::Phase::Invalid, {"TenantPolicyViolation"},
       [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"already told: no second Event",
       [&] {
         auto o = with(otherProject);
         auto first = decide(o);
         o.status = *first.status;
         o.statusStored = true;
         return o;
       },
       std::nullopt, {}, [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"allowed by its rule: created", [&] { return with(allowed); }, crd::Phase::Submitted, {},
       [](const Plan& p) {
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Valid"), "True/SpecValid");
       }},
  });
}

// serviceAccount and checkpointing.directory may change after submission (the CRD keeps project,
// location, resources and the trainer immutable): a tenant who edits them outside the rule once the
// first job runs must not get a second job (a resume, an unsuspend) under the new values.
TEST(DecideTest, ASpecEditedOutsideItsRuleAfterItsFirstJobStartsNoOtherJob) {
  static const auto rules =
      rulesFor(R"({"namespaces": ["ns"], "serviceAccounts": ["trainer@test-project.iam.gserviceaccount.com"]})");
  const std::string edited = R"({"serviceAccount": "owner@team-b.iam.gserviceaccount.com"})";
  auto with = [&](crd::Phase phase, const std::string& spec, CachedJob job) {
    auto o = submitted(phase, spec);
    o.tenancy.rules = &rules;
    o.tenancy.ns = {"ns", std::nullopt};
    o.vertex.job = std::move(job);
    return o;
  };
  runTable({
      {"running when edited: the job goes on (a rule is not retroactive), Valid=False says why",
       [&] { return with(crd::Phase::Running, edited, jobIn(JobState::Running)); }, crd::Phase::Running,
       {"TenantPolicyViolation"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Valid"), "False/TenantPolicyViolation");
         EXPECT_NE(p.status->conditions.front().message.find("spec.serviceAccount"), std::string::npos);
       }},
      {"preempted after the edit: no resume under the new service account",
       [&] {
         auto o = with(crd::Phase::Running, edited,
                       jobIn(JobState::Failed, vertex::RpcStatus{14, "The replica workerpool0-0 was preempted"}));
         o.now = T0 + seconds(3600);  // past the resume backoff
         o.checkpoints.listed = true;     // even had observe listed (it no longer does for a refused spec)
         return o;
       },
       crd::Phase::Invalid, {"TenantPolicyViolation"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.failure.has_value()) << "nothing to retry: an edit brings the run back";
         EXPECT_EQ(p.status->history.resumes, 0) << "the resume budget is not spent on a refusal";
       }},
      {"unsuspended after the edit: no new attempt",
       [&] {
         auto o = with(crd::Phase::Suspended, edited, jobIn(JobState::Cancelled));
         o.status.history.attempts[0].message = "cancelled by vto: the run was suspended";
         o.checkpoints.listed = true;
         return o;
       },
       crd::Phase::Invalid, {"TenantPolicyViolation"}, [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"the same, within the rule: resumed",
       [&] {
         auto o = with(crd::Phase::Running, "",
                       jobIn(JobState::Failed, vertex::RpcStatus{14, "The replica workerpool0-0 was preempted"}));
         o.run->spec.serviceAccount = "trainer@test-project.iam.gserviceaccount.com";
         o.now = T0 + seconds(3600);
         o.checkpoints.listed = true;
         return o;
       },
       crd::Phase::Submitted, {"Resumed"}, [](const Plan& p) { EXPECT_TRUE(p.createJob.has_value()); }},
  });
}

TEST(DecideTest, TheAcceleratorCapQueuesRunsFirstCreatedFirstServed) {
  static const auto capped = rulesFor(R"({"namespaces": ["ns"], "maxAccelerators": 4})");
  const std::string gpus = R"({"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4",
                                             "acceleratorCount": 4}})";
  auto claim = [](const std::string& created, bool holding, size_t rule = 0) {
    return std::pair<size_t, governance::AcceleratorClaim>{rule, governance::AcceleratorClaim{"ns/other-" + created, created, 4, holding}};
  };
  auto with = [&](std::vector<std::pair<size_t, governance::AcceleratorClaim>> others) {
    auto o = fresh();
    o.run = runWith(gpus);
    o.run->metadata.creationTimestamp = "2026-03-01T11:00:00Z";
    o.metadata = o.run->metadata;
    o.tenancy.rules = &capped;
    o.tenancy.ns = {"ns", std::nullopt};
    o.tenancy.otherClaims = std::move(others);
    return o;
  };
  runTable({
      {"another run holds the 4: Queued, Ready=False TenantQuotaExceeded, no job, looks again",
       [&] { return with({claim("2026-03-01T11:30:00Z", true)}); }, crd::Phase::Queued, {"TenantQuotaExceeded"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/TenantQuotaExceeded");
         EXPECT_EQ(p.requeueAfter, seconds(30));
       }},
      {"an older run waits for them: it goes first",
       [&] { return with({claim("2026-03-01T10:00:00Z", false)}); }, crd::Phase::Queued, {"TenantQuotaExceeded"},
       [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"a younger waiting run does not block it; act reserves the room it was admitted to",
       [&] { return with({claim("2026-03-01T11:30:00Z", false)}); }, crd::Phase::Submitted, {},
       [](const Plan& p) {
         EXPECT_TRUE(p.createJob.has_value());
         ASSERT_TRUE(p.acceleratorReservation.has_value());
         EXPECT_EQ(p.acceleratorReservation->rule, 0u);
         EXPECT_EQ(p.acceleratorReservation->claim.accelerators, 4);
         EXPECT_EQ(p.acceleratorReservation->attempt, 1);
       }},
      {"a run under another rule does not count",
       [&] { return with({claim("2026-03-01T10:00:00Z", true, 1)}); }, crd::Phase::Submitted, {},
       [](const Plan& p) { EXPECT_TRUE(p.createJob.has_value()); }},
      {"after a start, before the cap's places are listed: it waits, naming what is still to be read",
       [&] {
         auto o = with({});
         o.tenancy.unlistedCaps[0] = "projects/p/locations/us-central1/customJobs/";
         return o;
       },
       crd::Phase::Queued, {"TenantQuotaExceeded"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_NE(p.status->message.find("first list of its unfinished jobs in projects/p/locations/us-central1"),
                   std::string::npos)
             << p.status->message;
         EXPECT_EQ(p.requeueAfter, seconds(30));
       }},
      {"another rule's places still unlisted do not hold it",
       [&] {
         auto o = with({});
         o.tenancy.unlistedCaps[1] = "projects/q/locations/us-central1/customJobs/";
         return o;
       },
       crd::Phase::Submitted, {}, [](const Plan& p) { EXPECT_TRUE(p.createJob.has_value()); }},
      {"capacity freed: created, and the quota condition goes",
       [&] {
         auto o = with({claim("2026-03-01T11:30:00Z", true)});
         auto queued = decide(o);
         o.status = *queued.status;
         o.statusStored = true;
         o.tenancy.otherClaims.clear();  // the holder finished
         return o;
       },
       crd::Phase::Submitted, {},
       [](const Plan& p) {
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/Submitted");
       }},
  });
}

TEST(DecideTest, BucketsAreCheckedBeforeAttemptOne) {
  runTable({
      {"a missing output bucket: no job, Ready=False OutputBucketNotFound, a Warning naming it, retried",
       [] {
         auto o = fresh();
         o.outputBucketMissing = "bucket";
         return o;
       },
       crd::Phase::Pending, {"OutputBucketNotFound"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_TRUE(p.failure && !p.failure->terminal);
         EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/OutputBucketNotFound");
         EXPECT_NE(p.events.at(0).message.find("gs://bucket"), std::string::npos);
       }},
      {"the bucket was created: the job is, and the condition goes",
       [] {
         auto o = fresh();
         o.outputBucketMissing = "bucket";
         auto waiting = decide(o);
         o.status = *waiting.status;
         o.statusStored = true;
         o.outputBucketMissing.reset();
         o.checkpoints.listed = true;
         return o;
       },
       crd::Phase::Submitted, {},
       [](const Plan& p) {
         ASSERT_TRUE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/Submitted");
         EXPECT_EQ(conditionReason(*p.status, "CheckpointsReadable"), "True/CheckpointsListed");
       }},
      {"checkpoints forbidden (403): submitted anyway, CheckpointsReadable=False and a Warning",
       [] {
         auto o = fresh();
         o.checkpoints.error = "403 forbidden";
         o.checkpoints.forbidden = true;
         return o;
       },
       crd::Phase::Submitted, {"CheckpointsUnreadable"},
       [](const Plan& p) {
         EXPECT_TRUE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "CheckpointsReadable"), "False/CheckpointsForbidden");
         EXPECT_NE(p.events.at(0).message.find("from scratch"), std::string::npos);
       }},
      {"a running run's periodic listing fails: CheckpointsReadable=False",
       [] {
         auto o = submitted(crd::Phase::Running);
         o.vertex.job = jobIn(JobState::Running);
         o.checkpoints.error = "500 backend error";
         return o;
       },
       crd::Phase::Running, {"CheckpointsUnreadable"},
       [](const Plan& p) { EXPECT_EQ(conditionReason(*p.status, "CheckpointsReadable"), "False/CheckpointListFailed"); }},
  });
}

// --- A failed attempt's log tail: the phase is written first, the tail (read off the workers, handed
// in by observe) follows once, and the Failed Event carries it. ---

const std::string kUserError = "The replica workerpool0-0 exited with a non-zero status of 1.";
const std::string kTraceback = "Traceback (most recent call last):\n  File \"task.py\", line 3\nValueError: NaN";

// A submitted run in `phase` whose operator reads logs.
Observed tailed(crd::Phase phase) {
  auto o = submitted(phase);
  o.logTails.enabled = true;
  return o;
}

// The run as the pass that saw its job fail with a user error left it (phase Failed, no tail yet).
Observed failedWithoutTail() {
  auto running = tailed(crd::Phase::Running);
  running.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{3, kUserError});
  auto plan = decide(running);
  auto o = tailed(crd::Phase::Failed);
  o.status = *plan.status;
  return o;
}

TEST(DecideLogTailTest, APhaseChangeIsWrittenAtOnceAndItsEventWaitsForTheTail) {
  auto o = tailed(crd::Phase::Running);
  o.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{3, kUserError});
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, crd::Phase::Failed);
  EXPECT_EQ(plan.status->history.attempts[0].failureClass, crd::FailureClass::UserError);
  EXPECT_EQ(plan.status->history.attempts[0].logTail, "");
  EXPECT_TRUE(reasons(plan).empty()) << "the Failed Event comes with the tail";

  // Without log access configured, nothing waits: the Event is told at once.
  o.logTails.enabled = false;
  EXPECT_EQ(reasons(decide(o)), std::vector<std::string>{"Failed"});
}

TEST(DecideLogTailTest, TheTailIsRecordedOnceWithTheFailedEvent) {
  auto o = failedWithoutTail();
  EXPECT_FALSE(decide(o).status) << "nothing read yet: nothing to write";
  o.logTails.read = {{1, kTraceback}};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, crd::Phase::Failed);
  EXPECT_EQ(plan.status->history.attempts[0].logTail, kTraceback);
  ASSERT_EQ(reasons(plan), std::vector<std::string>{"Failed"});
  EXPECT_EQ(plan.events[0].type, controller::EventType::Warning);
  EXPECT_NE(plan.events[0].message.find("attempt 1 failed (UserError): " + kUserError), std::string::npos) << plan.events[0].message;
  EXPECT_NE(plan.events[0].message.find("Traceback (most recent call last): |   File \"task.py\", line 3 | ValueError: NaN"),
            std::string::npos)
      << plan.events[0].message;

  // The next pass (status shows the tail; the reading is still around): no write, no Event again.
  auto after = failedWithoutTail();
  after.status = *plan.status;
  after.logTails.read = {{1, "something else"}};
  auto again = decide(after);
  EXPECT_FALSE(again.status);
  EXPECT_TRUE(again.events.empty());
}

// A tail that is slow to come (Cloud Logging slow, the two log-tail threads busy elsewhere) delays
// the Failed Event by at most logTailWait: then the Event goes out alone and the tail follows in status.
TEST(DecideLogTailTest, TheFailedEventWaitsForItsTailOnlyAFewSeconds) {
  auto running = tailed(crd::Phase::Running);
  running.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{3, kUserError});
  auto failing = decide(running);
  EXPECT_TRUE(reasons(failing).empty());
  EXPECT_GT(failing.requeueAfter, Clock::duration::zero());
  EXPECT_LE(failing.requeueAfter, DecideOptions{}.logTailWait) << "looked at again when the wait ends";

  auto o = failedWithoutTail();
  o.now = T0 + seconds(5);
  auto early = decide(o);
  EXPECT_FALSE(early.status);
  EXPECT_TRUE(early.events.empty());
  EXPECT_LE(early.requeueAfter, seconds(5));

  o.now = T0 + DecideOptions{}.logTailWait;
  auto late = decide(o);
  ASSERT_TRUE(late.status);
  EXPECT_EQ(late.status->history.attempts[0].logTail, kLogTailFollows);
  ASSERT_EQ(reasons(late), std::vector<std::string>{"Failed"});
  EXPECT_NE(late.events[0].message.find("attempt 1 failed (UserError)"), std::string::npos) << late.events[0].message;
  EXPECT_EQ(late.events[0].message.find("log: "), std::string::npos) << late.events[0].message;

  // The tail read later goes into status only: the Event was told.
  auto after = failedWithoutTail();
  after.status = *late.status;
  after.now = T0 + seconds(60);
  after.logTails.read = {{1, kTraceback}};
  auto recorded = decide(after);
  ASSERT_TRUE(recorded.status);
  EXPECT_EQ(recorded.status->history.attempts[0].logTail, kTraceback);
  EXPECT_TRUE(recorded.events.empty());
  EXPECT_TRUE(wantsLogTail(late.status->history.attempts[0], after.now)) << "the poller still reads it";
}

TEST(DecideLogTailTest, ATailReadInThePassThatSeesTheFailureGoesIntoItsEvent) {
  auto o = tailed(crd::Phase::Running);
  o.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{3, kUserError});
  o.logTails.read = {{1, kTraceback}};
  auto plan = decide(o);
  EXPECT_EQ(plan.status->history.attempts[0].logTail, kTraceback);
  ASSERT_EQ(reasons(plan), std::vector<std::string>{"Failed"});
  EXPECT_NE(plan.events[0].message.find("ValueError: NaN"), std::string::npos);
}

TEST(DecideLogTailTest, APreemptedOrCapacityFailedAttemptGetsNoTail) {
  auto o = tailed(crd::Phase::Running);
  o.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{14, "The VM was preempted."});
  o.logTails.read = {{1, "must not be recorded"}};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, crd::Phase::Resuming);
  EXPECT_EQ(plan.status->history.attempts[0].logTail, "");

  o.vertex.job = jobIn(JobState::Failed, vertex::RpcStatus{8, "Resources are insufficient in region: us-central1"});
  auto stockout = decide(o);
  EXPECT_EQ(stockout.status->history.attempts[0].logTail, "");
}

TEST(DecideLogTailTest, WithoutLogAccessTheRunIsFailedAndTheEventSaysWhy) {
  auto o = failedWithoutTail();
  vertex::ApiError forbidden(403, "PERMISSION_DENIED", "Permission 'logging.logEntries.list' denied");
  o.logTails.read = {{1, logUnreadableText(forbidden)}};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, crd::Phase::Failed);
  const auto& tail = plan.status->history.attempts[0].logTail;
  EXPECT_NE(tail.find("could not read the log: "), std::string::npos) << tail;
  EXPECT_NE(tail.find("grant the operator's service account roles/logging.viewer"), std::string::npos) << tail;
  ASSERT_EQ(reasons(plan), std::vector<std::string>{"Failed"});
  EXPECT_NE(plan.events[0].message.find("roles/logging.viewer"), std::string::npos) << plan.events[0].message;
}

TEST(DecideLogTailTest, TheEventIsShortenedToFitAndKeepsTheLastLines) {
  auto o = failedWithoutTail();
  std::string tail;
  for (int i = 0; i < 19; ++i) tail += std::string(200, 'a' + i) + "\n";
  tail += "ValueError: NaN";
  o.logTails.read = {{1, tail}};
  auto plan = decide(o);
  EXPECT_EQ(plan.status->history.attempts[0].logTail, tail) << "status keeps the whole tail";
  ASSERT_EQ(plan.events.size(), 1u);
  const auto& message = plan.events[0].message;
  EXPECT_LE(message.size(), 1024u);
  EXPECT_EQ(message.substr(message.size() - 15), "ValueError: NaN");
}

TEST(DecideLogTailTest, AResumedAttemptKeepsItsTailWithoutAnEvent) {
  // InternalError resumes by default: attempt 1's tail arrives while attempt 2 runs.
  auto o = tailed(crd::Phase::Running);
  auto& first = o.status.history.attempts[0];
  first.state = "JOB_STATE_FAILED";
  first.failureClass = crd::FailureClass::InternalError;
  first.endTime = T0 - seconds(60);
  crd::Attempt second;
  second.attempt = 2;
  second.jobName = "projects/test-project/locations/us-central1/customJobs/8";
  o.status.history.attempts.push_back(second);
  o.status.history.attemptCount = 2;
  CachedJob running;
  running.name = second.jobName;
  running.state = JobState::Running;
  running.createTime = running.startTime = T0 - seconds(30);
  running.readAt = T0;
  o.vertex.job = running;
  o.logTails.read = {{1, "InternalError: the backend went away"}};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->history.attempts[0].logTail, "InternalError: the backend went away");
  EXPECT_EQ(plan.status->history.attempts[1].logTail, "");
  for (const auto& e : plan.events) EXPECT_NE(e.reason, "Failed");
}


// A Vertex job that carries this run's labels without this operator's ownership tag is ignored
// everywhere (the JobCache keeps it out); the run says once which it is, whatever else it does.
TEST(DecideTest, AJobImitatingTheRunIsNamedInAWarningOnce) {
  auto imitated = [] {
    auto o = submitted(crd::Phase::Running);
    o.vertex.job = jobIn(vertex::JobState::Running);
    o.vertex.impostors = {"projects/test-project/locations/us-central1/customJobs/666"};
    return o;
  };
  auto plan = decide(imitated());
  ASSERT_EQ(reasons(plan), std::vector<std::string>{"ForeignJobIgnored"});
  EXPECT_EQ(plan.events[0].type, controller::EventType::Warning);
  EXPECT_NE(plan.events[0].message.find("customJobs/666"), std::string::npos) << plan.events[0].message;
  EXPECT_EQ(plan.impostorsWarned, std::vector<std::string>{"projects/test-project/locations/us-central1/customJobs/666"});
  EXPECT_FALSE(plan.cancelJob.has_value()) << "never cancelled";
  auto o = imitated();
  o.vertex.impostors.clear();  // reported: the cache no longer hands it over
  EXPECT_TRUE(decide(o).events.empty());
}


// A run created anew under a name whose earlier run left its job unfinished (a GitOps re-apply into a
// rebuilt cluster, a restore without status, a delete with deletionPolicy Orphan and a re-apply):
// that job becomes its attempt 1, never a second paid one.
TEST(DecideTest, AFreshRunAdoptsTheUnfinishedJobItsNamesakeLeft) {
  auto namesake = [] {
    auto job = jobIn(JobState::Running);
    job.name = "projects/test-project/locations/us-central1/customJobs/41";
    job.labels = {{"vto-run-uid", "the-old-uid"}, {"vto-attempt", "2"}, {"vto-namespace", "ns"}, {"vto-name", "run"}};
    return job;
  };
  runTable({
      {"an unfinished namesake: adopted as attempt 1, one JobAdopted Event, no create",
       [&] {
         auto o = fresh();
         o.vertex.namesake = namesake();
         return o;
       },
       crd::Phase::Running, {"JobAdopted"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_TRUE(p.addFinalizer);
         ASSERT_EQ(p.status->history.attempts.size(), 1u);
         EXPECT_EQ(p.status->history.attempts[0].jobName, "projects/test-project/locations/us-central1/customJobs/41");
         EXPECT_NE(p.events[0].message.find("the-old-uid, attempt 2"), std::string::npos) << p.events[0].message;
       }},
      {"its place not listed since the start: nothing written, it looks again once listed",
       [&] {
         auto o = fresh();
         o.vertex.placeUnlisted = "projects/test-project/locations/us-central1/customJobs/";
         return o;
       },
       std::nullopt, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.addFinalizer) << "no write while it waits";
         EXPECT_EQ(p.requeueAfter, seconds(5));
       }},
      {"its place cannot be listed: said in status, no job",
       [&] {
         auto o = fresh();
         o.vertex.placeUnlisted = "projects/test-project/locations/us-central1/customJobs/";
         o.vertex.unavailable = VertexFailure{503, "polling Vertex AI jobs in projects/test-project/locations/us-central1: 503"};
         return o;
       },
       crd::Phase::Pending, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Ready"), "False/VertexError");
         EXPECT_NE(p.status->message.find("waiting for the first list of projects/test-project"), std::string::npos)
             << p.status->message;
       }},
      {"no namesake: its own job is created", [] { return fresh(); }, crd::Phase::Submitted, {},
       [](const Plan& p) { EXPECT_TRUE(p.createJob.has_value()); }},
  });
}

// A run restored without its status (a backup keeps metadata, not status or uid): its metadata names
// the runs it was, and their jobs are its history again. A manifest re-applied from Git has no such
// metadata: it is a new run (only an unfinished namesake is adopted, above).
TEST(DecideTest, ARunRestoredWithoutStatusTakesBackItsHistory) {
  auto jobOf = [](int id, int attempt, JobState state, int endedSecondsAgo) {
    auto job = jobIn(state);
    job.name = "projects/test-project/locations/us-central1/customJobs/" + std::to_string(id);
    job.labels = {{"vto-run-uid", "old-uid"}, {"vto-attempt", std::to_string(attempt)}, {"vto-namespace", "ns"}, {"vto-name", "r"}};
    job.createTime = T0 - seconds(7200 - 1000 * attempt);
    job.startTime = *job.createTime + seconds(60);
    if (vertex::isTerminal(state)) job.endTime = T0 - seconds(endedSecondsAgo);
    return job;
  };
  auto preempted = [&](int id, int attempt) {
    auto job = jobOf(id, attempt, JobState::Failed, 4000);
    job.error = vertex::RpcStatus{14, "The replica workerpool0-0 was preempted"};
    return job;
  };
  auto restored = [](std::vector<CachedJob> jobs) {
    auto o = fresh();
    o.metadata.annotations[crd::kRunUidsAnnotation] = "old-uid";
    o.vertex.restored = std::move(jobs);
    o.vertex.job = o.vertex.restored.back();  // as observe hands it over
    o.checkpoints.listed = true;
    return o;
  };
  runTable({
      {"a finished run stays finished: both attempts back, numbered as they were, no job",
       [&] { return restored({preempted(41, 1), jobOf(42, 2, JobState::Succeeded, 600)}); },
       crd::Phase::Succeeded, {"JobAdopted", "Succeeded"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_EQ(p.runUids, std::optional<std::string>("old-uid,u-1"));
         const auto& attempts = p.status->history.attempts;
         ASSERT_EQ(attempts.size(), 2u);
         EXPECT_EQ(attempts[0].attempt, 1);
         EXPECT_EQ(attempts[0].jobName, "projects/test-project/locations/us-central1/customJobs/41");
         EXPECT_EQ(attempts[0].state, "JOB_STATE_FAILED");
         EXPECT_EQ(attempts[1].attempt, 2);
         EXPECT_EQ(attempts[1].jobName, "projects/test-project/locations/us-central1/customJobs/42");
         EXPECT_EQ(p.status->history.attemptCount, 2);
         EXPECT_EQ(p.status->completionTime, T0 - seconds(600)) << "when the job ended, not when it was restored";
         EXPECT_NE(p.events[0].message.find("restored without status"), std::string::npos) << p.events[0].message;
         EXPECT_NE(p.events[0].message.find("customJobs/42"), std::string::npos) << p.events[0].message;
       }},
      {"an unfinished job is followed as the attempt it was",
       [&] { return restored({preempted(41, 1), jobOf(43, 2, JobState::Running, 0)}); },
       crd::Phase::Running, {"JobAdopted", "JobRunning"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         ASSERT_EQ(p.status->history.attempts.size(), 2u);
         EXPECT_EQ(p.status->history.attempts[1].jobName, "projects/test-project/locations/us-central1/customJobs/43");
       }},
      {"suspended while restored: its job is its own again first (the next pass cancels it)",
       [&] {
         auto o = restored({jobOf(43, 1, JobState::Running, 0)});
         o.run->spec.suspend = true;
         return o;
       },
       crd::Phase::Running, {"JobAdopted", "JobRunning"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_EQ(p.status->history.attempts.back().jobName, "projects/test-project/locations/us-central1/customJobs/43");
       }},
  });
  // The last attempt was preempted: the next one resumes, numbered after the restored ones.
  auto plan = decide(restored({preempted(41, 1), preempted(44, 2)}));
  EXPECT_EQ(reasons(plan), (std::vector<std::string>{"JobAdopted", "Resumed"}));
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->attempt, 3);
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->history.attempts.size(), 3u);
}

// The uids that find a run's jobs after a restore go into its metadata with the finalizer, once.
TEST(DecideTest, TheRunsUidsAreKeptInItsMetadata) {
  auto o = fresh();
  auto plan = decide(o);
  EXPECT_TRUE(plan.addFinalizer);
  EXPECT_EQ(plan.runUids, std::optional<std::string>("u-1")) << "written with the finalizer, one patch";
  auto running = submitted(crd::Phase::Running);
  running.vertex.job = jobIn(JobState::Running);
  running.metadata.annotations[crd::kRunUidsAnnotation] = "u-1";
  EXPECT_FALSE(decide(running).runUids.has_value()) << "already there: no write";
  auto before = submitted(crd::Phase::Succeeded);  // a run of the release before: once
  before.status.completionTime = T0;
  EXPECT_EQ(decide(before).runUids, std::optional<std::string>("u-1"));
  auto forged = fresh();
  forged.metadata.annotations[crd::kRunUidsAnnotation] = "a,B@d,,../x," + std::string(100, 'f') + ",b";
  EXPECT_EQ(decide(forged).runUids, std::optional<std::string>("a,b,u-1")) << "what is not a uid is dropped";
}

// spec.adoptJob: a job started outside vto becomes attempt 1, or the run says why it may not.
TEST(DecideTest, AJobNamedInAdoptJobIsFollowedAsAttemptOneOrRefusedUntouched) {
  const std::string named = "projects/test-project/locations/us-central1/customJobs/900";
  auto adopting = [&] {
    auto o = fresh();
    o.run->spec.adoptJob = named;
    return o;
  };
  auto foreign = [&](JobState state) {
    auto job = jobIn(state);
    job.name = named;
    job.labels = {{"owner", "alice"}};
    return job;
  };
  runTable({
      {"allowed and running: attempt 1 is that job, no job created",
       [&] {
         auto o = adopting();
         o.vertex.adoptable = foreign(JobState::Running);
         return o;
       },
       crd::Phase::Running, {"JobAdopted", "JobRunning"},
       [&](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         ASSERT_EQ(p.status->history.attempts.size(), 1u);
         EXPECT_EQ(p.status->history.attempts[0].jobName, named);
         EXPECT_NE(p.events[0].message.find("spec.adoptJob"), std::string::npos) << p.events[0].message;
       }},
      {"allowed and already succeeded: the run succeeds with it",
       [&] {
         auto o = adopting();
         o.vertex.adoptable = foreign(JobState::Succeeded);
         return o;
       },
       crd::Phase::Succeeded, {"JobAdopted", "Succeeded"},
       [](const Plan& p) { EXPECT_FALSE(p.createJob.has_value()); }},
      {"refused: Invalid with AdoptionRefused, the job neither cancelled nor replaced",
       [&] {
         auto o = adopting();
         o.vertex.adoptionRefused = "spec.adoptJob " + named + " is already adopted by TrainingRun ns/first";
         return o;
       },
       crd::Phase::Invalid, {"AdoptionRefused"},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_FALSE(p.cancelJob.has_value());
         EXPECT_EQ(conditionReason(*p.status, "Valid"), "False/AdoptionRefused");
         EXPECT_NE(p.status->message.find("ns/first"), std::string::npos) << p.status->message;
       }},
      {"not read yet (Vertex unavailable): it waits and never creates a job of its own",
       [&] {
         auto o = adopting();
         o.vertex.unavailable = VertexFailure{403, "reading spec.adoptJob: permission denied"};
         return o;
       },
       crd::Phase::Pending, {},
       [](const Plan& p) {
         EXPECT_FALSE(p.createJob.has_value());
         EXPECT_NE(p.status->message.find("permission denied"), std::string::npos) << p.status->message;
       }},
  });
}

}  // namespace
}  // namespace vto::reconcilers
