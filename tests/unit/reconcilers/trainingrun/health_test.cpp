// kstatus's conditions (healthOf) over every phase, and status.progress (progressOf): the table of
// docs/api.md "Health", as tests.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/trainingrun/decide.h"

namespace vto::reconcilers {
namespace {

using crd::Phase;
using std::chrono::seconds;

crd::Condition cond(const char* type, const char* status, const char* reason) {
  return crd::Condition{type, status, reason, "", std::nullopt, 1};
}

struct Row {
  std::optional<Phase> phase;
  std::vector<crd::Condition> conditions;
  std::optional<std::string> gate;  // a Ready=False gate of this pass, by reason
  bool modelWanted;
  // Expected: Ready, Reconciling, Stalled as "Status/Reason".
  std::string ready, reconciling, stalled;
};

std::string text(const crd::Condition& c) { return c.status + "/" + c.reason; }

TEST(Health, EveryPhaseMapsToKstatusConditions) {
  const std::vector<Row> rows = {
      {std::nullopt, {}, std::nullopt, false, "False/Pending", "True/Pending", "False/NotStalled"},
      {Phase::Pending, {}, std::nullopt, false, "False/Pending", "True/Pending", "False/NotStalled"},
      {Phase::Submitted, {}, std::nullopt, false, "False/Submitted", "True/Submitted", "False/NotStalled"},
      {Phase::Queued, {}, std::nullopt, false, "False/Queued", "True/Queued", "False/NotStalled"},
      {Phase::Running, {}, std::nullopt, false, "False/Running", "True/Running", "False/NotStalled"},
      {Phase::Resuming, {}, std::nullopt, false, "False/Resuming", "True/Resuming", "False/NotStalled"},
      {Phase::Cancelling, {}, std::nullopt, false, "False/Cancelling", "True/Cancelling", "False/NotStalled"},
      {Phase::Succeeded, {}, std::nullopt, false, "True/Succeeded", "False/Succeeded", "False/NotStalled"},
      // With spec.model: ready once the version is registered; registering is work under way.
      {Phase::Succeeded, {}, std::nullopt, true, "False/Registering", "True/Registering", "False/NotStalled"},
      {Phase::Succeeded, {cond("ModelRegistered", "False", "ArtifactMissing")}, std::nullopt, true,
       "False/ArtifactMissing", "True/ArtifactMissing", "False/NotStalled"},
      {Phase::Succeeded, {cond("ModelRegistered", "True", "VersionRegistered")}, std::nullopt, true, "True/Succeeded",
       "False/Succeeded", "False/NotStalled"},
      {Phase::Failed, {cond("Failed", "True", "JobFailed")}, std::nullopt, false, "False/JobFailed", "False/Failed",
       "True/JobFailed"},
      {Phase::Failed, {cond("Failed", "True", "ResumeBudgetExhausted")}, std::nullopt, false,
       "False/ResumeBudgetExhausted", "False/Failed", "True/ResumeBudgetExhausted"},
      {Phase::Failed, {cond("Failed", "True", "CapacityUnavailable")}, "CapacityUnavailable", false,
       "False/CapacityUnavailable", "False/Failed", "True/CapacityUnavailable"},
      // A later pass of the same run (no gate this pass): the reason stays.
      {Phase::Failed, {cond("Failed", "True", "CapacityUnavailable")}, std::nullopt, false,
       "False/CapacityUnavailable", "False/Failed", "True/CapacityUnavailable"},
      {Phase::Cancelled, {cond("Failed", "True", "JobCancelled")}, std::nullopt, false, "False/JobCancelled",
       "False/Cancelled", "True/JobCancelled"},
      {Phase::Suspended, {}, std::nullopt, false, "False/Suspended", "False/Suspended", "False/NotStalled"},
      {Phase::Invalid, {cond("Valid", "False", "SpecInvalid")}, std::nullopt, false, "False/SpecInvalid",
       "False/Invalid", "True/SpecInvalid"},
      {Phase::Invalid, {cond("Valid", "False", "TenantPolicyViolation")}, std::nullopt, false,
       "False/TenantPolicyViolation", "False/Invalid", "True/TenantPolicyViolation"},
      // Gates keep their reason on Ready; those that clear by themselves are work under way...
      {Phase::Queued, {}, "WaitingForCapacity", false, "False/WaitingForCapacity", "True/WaitingForCapacity",
       "False/NotStalled"},
      {Phase::Queued, {}, "TenantQuotaExceeded", false, "False/TenantQuotaExceeded", "True/TenantQuotaExceeded",
       "False/NotStalled"},
      {Phase::Running, {}, "VertexError", false, "False/VertexError", "True/VertexError", "False/NotStalled"},
      // ... those that wait for a person are Stalled.
      {Phase::Queued, {}, "BudgetExceeded", false, "False/BudgetExceeded", "False/Queued", "True/BudgetExceeded"},
      {Phase::Pending, {}, "OutputBucketNotFound", false, "False/OutputBucketNotFound", "False/Pending",
       "True/OutputBucketNotFound"},
  };
  for (const auto& row : rows) {
    HealthInput in;
    in.phase = row.phase;
    in.message = "the run's message";
    in.conditions = row.conditions;
    in.modelWanted = row.modelWanted;
    if (row.gate) in.readyGate = crd::Condition{"Ready", "False", *row.gate, "the gate's message", std::nullopt, 1};
    auto h = healthOf(in);
    std::string what = (row.phase ? crd::enumName(*row.phase, crd::phaseNames()) : "none") + " gate " +
                       row.gate.value_or("-") + (row.modelWanted ? " model" : "");
    EXPECT_EQ(h.ready.type, "Ready");
    EXPECT_EQ(h.reconciling.type, "Reconciling");
    EXPECT_EQ(h.stalled.type, "Stalled");
    EXPECT_EQ(text(h.ready), row.ready) << what;
    EXPECT_EQ(text(h.reconciling), row.reconciling) << what;
    EXPECT_EQ(text(h.stalled), row.stalled) << what;
    // Never both: kstatus reads Stalled as Failed and Reconciling as InProgress.
    EXPECT_FALSE(h.reconciling.status == "True" && h.stalled.status == "True") << what;
    EXPECT_EQ(h.ready.message, row.gate ? "the gate's message" : "the run's message") << what;
    if (h.stalled.status == "True") EXPECT_EQ(h.stalled.message, in.message) << what;
  }
}

const Clock::time_point T0 = parseRfc3339("2026-03-01T12:00:00Z");

crd::TrainingRunStatus statusWith(const std::string& checkpoint, Clock::time_point written, const std::string& resumedFrom,
                                  Phase phase = Phase::Running) {
  crd::TrainingRunStatus status;
  status.phase = phase;
  crd::Attempt attempt;
  attempt.attempt = resumedFrom.empty() ? 1 : 2;
  attempt.startTime = T0;
  attempt.resumedFrom = resumedFrom;
  status.history.attempts.push_back(attempt);
  status.history.lastCheckpoint = crd::CheckpointRef{checkpoint, written};
  return status;
}

crd::TrainingRunSpec specWith(std::optional<int64_t> totalSteps) {
  crd::TrainingRunSpec spec;
  spec.baseOutputDirectory = "gs://b/run";
  spec.checkpointing.totalSteps = totalSteps;
  return spec;
}

TEST(Progress, NoCheckpointNoProgress) {
  crd::TrainingRunStatus status;
  status.phase = Phase::Running;
  EXPECT_FALSE(progressOf(specWith(10), status).has_value());
  // A checkpoint whose name holds no step says nothing of progress.
  EXPECT_FALSE(progressOf(specWith(10), statusWith("gs://b/run/checkpoints/latest", T0 + seconds(60), "")));
}

TEST(Progress, StepPercentRateAndEtaFromThisAttempt) {
  auto p = progressOf(specWith(10), statusWith("gs://b/run/checkpoints/ckpt-4", T0 + seconds(166), ""));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 4);
  EXPECT_EQ(p->totalSteps, 10);
  EXPECT_EQ(p->percent, 40);
  EXPECT_EQ(p->secondsPerStep, 41.5);  // 166 s over 4 steps
  EXPECT_EQ(p->eta, T0 + seconds(166 + 6 * 41) + std::chrono::milliseconds(3000));  // 6 steps to go at 41.5 s
}

TEST(Progress, AResumedAttemptStartsFromItsCheckpointAndCountsOnlyItsOwnSteps) {
  // Attempt 2 resumed from ckpt-7; no new checkpoint yet: the step is the one it resumed from, no rate.
  auto resumed = statusWith("gs://b/run/checkpoints/ckpt-7", T0 - seconds(300), "gs://b/run/checkpoints/ckpt-7");
  auto p = progressOf(specWith(10), resumed);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 7);
  EXPECT_EQ(p->percent, 70);
  EXPECT_FALSE(p->secondsPerStep.has_value());
  EXPECT_FALSE(p->eta.has_value());
  // ckpt-9 written 60 s after attempt 2 started: 2 steps in 60 s (attempt 1's rate does not count).
  p = progressOf(specWith(10), statusWith("gs://b/run/checkpoints/ckpt-9", T0 + seconds(60), "gs://b/run/checkpoints/ckpt-7"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 9);
  EXPECT_EQ(p->secondsPerStep, 30.0);
  EXPECT_EQ(p->eta, T0 + seconds(90));
}

TEST(Progress, WithoutTotalStepsOnlyStepAndRate) {
  auto p = progressOf(specWith(std::nullopt), statusWith("gs://b/run/checkpoints/step-20/model.pt", T0 + seconds(100), ""));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 20);
  EXPECT_FALSE(p->totalSteps.has_value());
  EXPECT_FALSE(p->percent.has_value());
  EXPECT_EQ(p->secondsPerStep, 5.0);
  EXPECT_FALSE(p->eta.has_value());
}

TEST(Progress, NoEtaOnceTheRunIsNotRunningAndPercentStopsAtOneHundred) {
  auto p = progressOf(specWith(10), statusWith("gs://b/run/checkpoints/ckpt-12", T0 + seconds(120), "", Phase::Succeeded));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->percent, 100);
  EXPECT_FALSE(p->eta.has_value());
  p = progressOf(specWith(10), statusWith("gs://b/run/checkpoints/ckpt-5", T0 + seconds(120), "", Phase::Queued));
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->eta.has_value());
}

// A checkpoint's step is whatever number a tenant's training code wrote into its name: at the
// extremes the progress stays sane, and the status vto writes reads back as written.
TEST(Progress, StepsAtTheExtremesStaySaneAndRoundTrip) {
  struct Row {
    std::string checkpoint;
    std::optional<int64_t> totalSteps;
    Clock::time_point written;
    int32_t percent;
    bool eta;
  };
  const int64_t huge = 999999999999999999;  // 18 digits, the most a step is read with
  std::vector<Row> rows = {
      {"ckpt-100000000000000000", 200000000000000000, T0 + seconds(60), 50, true},
      {"ckpt-100000000000000000", 10, T0 + seconds(60), 100, false},
      {"ckpt-999999999999999999", huge, T0 + seconds(60), 100, false},
      {"ckpt-1", huge, T0 + seconds(86400), 0, false},  // 1 step a day: the ETA is no date
      {"ckpt-99999999999999999999999", 10, T0 + seconds(60), 100, false},
  };
  for (const auto& row : rows) {
    auto status = statusWith("gs://b/run/checkpoints/" + row.checkpoint, row.written, "");
    auto p = progressOf(specWith(row.totalSteps), status);
    ASSERT_TRUE(p.has_value()) << row.checkpoint;
    ASSERT_TRUE(p->percent.has_value()) << row.checkpoint;
    EXPECT_EQ(*p->percent, row.percent) << row.checkpoint;
    EXPECT_GE(*p->percent, 0);
    EXPECT_LE(*p->percent, 100);
    EXPECT_EQ(p->eta.has_value(), row.eta) << row.checkpoint;
    status.progress = p;
    auto written = crd::encodeTrainingRunStatus(status);
    crd::TrainingRunStatus read;
    ASSERT_NO_THROW(read = crd::decodeTrainingRunStatus(written, "status")) << written.dump();
    ASSERT_TRUE(read.progress.has_value());
    EXPECT_EQ(read.progress->step, p->step);
    EXPECT_EQ(read.progress->percent, p->percent);
  }
}

}  // namespace
}  // namespace vto::reconcilers
