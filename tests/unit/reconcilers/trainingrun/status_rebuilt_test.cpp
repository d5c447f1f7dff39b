// Status is rebuilt from what a pass observes, and only the history is carried: a pass that observes
// nothing new must compute exactly the status that is stored, every field of it. The fixtures below
// set every field of the status with designated initializers, and a missing one is a compile error
// here: a field added to crd::TrainingRunStatus has to be added below, and then decide must rebuild
// or carry it, or these tests fail (it is never reset, or carried, silently).
#pragma GCC diagnostic error "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/trainingrun/decide.h"

namespace vto::reconcilers {
namespace {

using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-03-01T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";

crd::Condition condition(const char* type, const char* status, const char* reason, std::string message = "") {
  return crd::Condition{.type = type,
                        .status = status,
                        .reason = reason,
                        .message = std::move(message),
                        .lastTransitionTime = T0 - seconds(500),
                        .observedGeneration = 1};
}

crd::RunHistory everyHistoryField(const std::string& state, std::optional<Clock::time_point> endTime) {
  return crd::RunHistory{
      .attempts = {crd::Attempt{.attempt = 1,
                                .placement = std::nullopt,
                                .location = "",
                                .jobName = kJob,
                                .state = state,
                                .startTime = T0 - seconds(500),
                                .endTime = endTime,
                                .failureClass = std::nullopt,
                                .message = "",
                                .resumedFrom = "",
                                .logTail = "",
                                .costUsd = Usd::cents(3),
                                .acceleratorHours = 0,
                                .replicaHours = 0.139}},
      .attemptCount = 1,
      .resumes = 0,
      .lastCheckpoint = crd::CheckpointRef{.uri = "gs://bucket/r/checkpoints/ckpt-3",
                                           .updateTime = parseRfc3339("2026-03-01T11:59:00.250Z")},
      .bestTrial = crd::BestTrial{.id = "4", .parameters = {{"lr", 0.01}}, .metrics = {{"accuracy", 0.9}}},
      .startTime = T0 - seconds(600),
      .capacity = std::nullopt,
      .model = std::nullopt,
  };
}

crd::RunCost everyCostField(bool running) {
  return crd::RunCost{.estimatedUsd = Usd::cents(3),
                      .acceleratorHours = 0,
                      .replicaHours = 0.139,
                      .hourlyUsd = running ? std::optional<Usd>(Usd::cents(22)) : std::nullopt,
                      .priceCatalog = "2026-12-05",
                      .updateTime = T0 - seconds(100)};
}

crd::JobRef everyJobField(const std::string& state, std::optional<Clock::time_point> endTime) {
  return crd::JobRef{.name = kJob,
                     .id = "7",
                     .kind = "CustomJob",
                     .state = state,
                     .consoleUrl = consoleUrl(kJob),
                     .createTime = T0 - seconds(600),
                     .startTime = T0 - seconds(500),
                     .endTime = endTime,
                     .webAccessUris = {{"workerpool0-0", "https://abc.aiplatform-training.googleusercontent.com"}}};
}

CachedJob jobIn(vertex::JobState state, std::optional<Clock::time_point> endTime) {
  CachedJob job;
  job.name = kJob;
  job.state = state;
  job.createTime = T0 - seconds(600);
  job.startTime = T0 - seconds(500);
  job.endTime = endTime;
  job.webAccessUris = {{"workerpool0-0", "https://abc.aiplatform-training.googleusercontent.com"}};
  job.readAt = T0;
  return job;
}

Observed observing(crd::TrainingRunStatus status, const std::string& capacity = "") {
  Observed o;
  o.now = T0;
  auto object = nlohmann::json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-4"}, "baseOutputDirectory": "gs://bucket/r"}})");
  if (!capacity.empty()) object["spec"]["capacity"] = nlohmann::json::parse(capacity);
  o.run = crd::decodeTrainingRun(object);
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.hasFinalizer = true;
  o.statusStored = true;
  o.status = std::move(status);
  return o;
}

// A run whose attempt 1 runs, as decide leaves it.
crd::TrainingRunStatus runningStatus() {
  auto state = "JOB_STATE_RUNNING";
  return crd::TrainingRunStatus{
      .observedGeneration = 1,
      .phase = crd::Phase::Running,
      .message = "attempt 1 running",
      .conditions = {condition("Valid", "True", "SpecValid"), condition("Ready", "False", "Running", "attempt 1 running"),
                     condition("Submitted", "True", "JobCreated", kJob),
                     condition("Running", "True", "JobRunning"), condition("Succeeded", "False", "NotFinished"),
                     condition("Failed", "False", "NoFailure"),
                     condition("CheckpointsReadable", "True", "CheckpointsListed"),
                     condition("Reconciling", "True", "Running", "attempt 1 running"),
                     condition("Stalled", "False", "NotStalled")},
      .job = everyJobField(state, std::nullopt),
      // ckpt-3 at 11:59:00.25, 440.25 s after the attempt started: 146.75 s a step.
      .progress = crd::Progress{.step = 3, .totalSteps = std::nullopt, .percent = std::nullopt, .eta = std::nullopt,
                                .secondsPerStep = 146.8},
      .placement = std::nullopt,
      .history = everyHistoryField(state, std::nullopt),
      .completionTime = std::nullopt,
      .cost = everyCostField(true),
  };
}

TEST(StatusRebuilt, ARunningRunThatShowsNothingNewIsNotWritten) {
  auto o = observing(runningStatus());
  o.vertex.job = jobIn(vertex::JobState::Running, std::nullopt);
  auto plan = decide(o);
  EXPECT_FALSE(plan.status.has_value()) << crd::encodeTrainingRunStatus(*plan.status).dump(2);
}

TEST(StatusRebuilt, ASettledRunKeepsEveryFieldAndIsNotWritten) {
  auto state = "JOB_STATE_SUCCEEDED";
  auto ended = T0 - seconds(100);
  auto o = observing(crd::TrainingRunStatus{
      .observedGeneration = 1,
      .phase = crd::Phase::Succeeded,
      .message = "attempt 1 succeeded",
      .conditions = {condition("Valid", "True", "SpecValid"),
                     condition("Ready", "True", "Succeeded", "attempt 1 succeeded"),
                     condition("Submitted", "True", "JobCreated", kJob),
                     condition("Running", "False", "JobSucceeded"), condition("Succeeded", "True", "JobSucceeded"),
                     condition("Failed", "False", "NoFailure"),
                     condition("CheckpointsReadable", "True", "CheckpointsListed"),
                     condition("Reconciling", "False", "Succeeded"), condition("Stalled", "False", "NotStalled")},
      .job = everyJobField(state, ended),
      .progress = crd::Progress{.step = 3, .totalSteps = std::nullopt, .percent = std::nullopt, .eta = std::nullopt,
                                .secondsPerStep = 146.8},
      .placement = std::nullopt,
      .history = everyHistoryField(state, ended),
      .completionTime = ended,
      .cost = everyCostField(false),
  });
  auto plan = decide(o);
  EXPECT_FALSE(plan.status.has_value()) << crd::encodeTrainingRunStatus(*plan.status).dump(2);
}

TEST(StatusRebuilt, ARunThatFailedOverKeepsEveryCapacityFieldAndIsNotWritten) {
  auto state = "JOB_STATE_RUNNING";
  const std::string eastJob = "projects/test-project/locations/us-east4/customJobs/9";
  auto status = runningStatus();
  status.conditions[2].message = eastJob;
  status.job = everyJobField(state, std::nullopt);
  status.job->name = eastJob;
  status.job->id = "9";
  status.job->consoleUrl = consoleUrl(eastJob);
  status.placement = crd::PlacementRef{.index = 1,
                                       .location = "us-east4",
                                       .machineType = "n1-standard-4",
                                       .acceleratorType = "",
                                       .acceleratorCount = 0,
                                       .strategy = "Standard"};
  auto& attempt = status.history.attempts[0];
  attempt.placement = 1;
  attempt.location = "us-east4";
  attempt.jobName = eastJob;
  status.history.capacity = crd::CapacityHistory{
      .blocked = {crd::BlockedPlacement{.index = 0,
                                        .location = "us-central1",
                                        .reason = "Stockout",
                                        .until = T0 + seconds(900),
                                        .message = "Resources are insufficient in region: us-central1."}},
      .waitingSince = std::nullopt,
      .failingSince = std::nullopt,
  };
  auto o = observing(status, R"({"fallbacks": [{"location": "us-east4"}]})");
  auto job = jobIn(vertex::JobState::Running, std::nullopt);
  job.name = eastJob;
  o.vertex.job = job;
  auto plan = decide(o);
  EXPECT_FALSE(plan.status.has_value()) << crd::encodeTrainingRunStatus(*plan.status).dump(2);
}

TEST(StatusRebuilt, WhenVertexCannotBeReadTheLastViewOfTheJobStands) {
  auto o = observing(runningStatus());
  o.vertex.unavailable = VertexFailure{403, "reading " + kJob + ": PERMISSION_DENIED"};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status.has_value());
  auto expected = o.status;
  expected.conditions.at(1) = crd::Condition{.type = "Ready",
                                            .status = "False",
                                            .reason = "VertexError",
                                            .message = o.vertex.unavailable->message,
                                            .lastTransitionTime = T0 - seconds(500),  // still False
                                            .observedGeneration = 1};
  expected.conditions.at(7).reason = "VertexError";  // Reconciling: still under way, and why it is not ready
  EXPECT_EQ(*plan.status, expected) << crd::encodeTrainingRunStatus(*plan.status).dump(2);
}

}  // namespace
}  // namespace vto::reconcilers
