// status.cost as decide computes it (reconcilers/trainingrun/cost.cpp): from the times the pass
// observed, on a fixed clock, and only with a status write that happens anyway.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "governance/cost.h"
#include "reconcilers/trainingrun/decide.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using vertex::JobState;

const Clock::time_point T0 = parseRfc3339("2026-12-10T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";
const std::string kTuningJob = "projects/test-project/locations/us-central1/hyperparameterTuningJobs/8";

const governance::PriceCatalog& prices() {
  static const auto catalog = governance::PriceCatalog::parse(R"(
date: "2026-11-01"
source: test
locations:
  us-central1:
    machines:
      n1-standard-8: {standard: 0.50, spot: 0.10}
      n1-highcpu-16: {standard: 1.00}
    accelerators:
      NVIDIA_TESLA_T4: {standard: 0.25, spot: 0.05}
)",
                                                       "custom:0123456789ab");
  return catalog;
}

crd::TrainingRun runWith(const std::string& extraSpec) {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1, "resourceVersion": "5"},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
             "baseOutputDirectory": "gs://bucket/r"}})");
  object["spec"].merge_patch(json::parse(extraSpec));
  return crd::decodeTrainingRun(object);
}

// Attempt 1 as kJob (or `job`), last seen in `phase`; its job read this pass in `state`, started 2 h ago.
Observed observed(crd::Phase phase, JobState state, const std::string& extraSpec = "{}", const std::string& job = kJob) {
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
  first.jobName = job;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  o.status.history.startTime = T0 - hours(3);
  o.prices = &prices();
  CachedJob read;
  read.name = job;
  read.state = state;
  read.createTime = T0 - hours(3);
  if (state != JobState::Queued && state != JobState::Pending) read.startTime = T0 - hours(2);
  if (vertex::isTerminal(state)) read.endTime = T0 - minutes(30);
  read.readAt = T0;
  o.vertex.job = read;
  return o;
}

// The status a pass wrote becomes the stored one, read again a little later.
Observed later(Observed o, const crd::TrainingRunStatus& written, Clock::duration after) {
  o.status = written;
  o.now += after;
  return o;
}

std::string condition(const crd::TrainingRunStatus& status, const std::string& type) {
  for (const auto& c : status.conditions)
    if (c.type == type) return c.status + "/" + c.reason + ": " + c.message;
  return "";
}

TEST(CostDecideTest, ARunningJobCostsFromItsStartWithItsHourlyPrice) {
  auto plan = decide(observed(crd::Phase::Queued, JobState::Running));
  ASSERT_TRUE(plan.status && plan.status->cost);
  const auto& cost = *plan.status->cost;
  // n1-standard-8 + 2 x T4 = 1.00/h, 2 h
  EXPECT_EQ(cost.estimatedUsd, Usd::cents(200));
  EXPECT_EQ(cost.hourlyUsd, Usd::cents(100));
  EXPECT_DOUBLE_EQ(cost.acceleratorHours, 4);
  EXPECT_DOUBLE_EQ(cost.replicaHours, 2);
  EXPECT_EQ(cost.priceCatalog, "custom:0123456789ab");
  EXPECT_EQ(cost.updateTime, T0);
  EXPECT_EQ(plan.status->history.attempts.back().costUsd, Usd::cents(200));
  EXPECT_EQ(condition(*plan.status, "CostEstimated").substr(0, 11), "True/Priced");
}

TEST(CostDecideTest, TimeAloneWritesNothingAndTheNextStateChangeBringsTheFigureUpToDate) {
  auto first = observed(crd::Phase::Queued, JobState::Running);
  auto plan = decide(first);
  ASSERT_TRUE(plan.status);
  auto steady = later(first, *plan.status, hours(1));
  EXPECT_FALSE(decide(steady).status.has_value()) << "a pass that sees nothing new must not write for cost";

  auto ended = later(first, *plan.status, hours(1));
  ended.vertex.job->state = JobState::Succeeded;
  ended.vertex.job->endTime = T0 + minutes(30);
  auto done = decide(ended);
  ASSERT_TRUE(done.status && done.status->cost);
  EXPECT_EQ(done.status->cost->estimatedUsd, Usd::cents(250));
  EXPECT_FALSE(done.status->cost->hourlyUsd.has_value()) << "nothing runs";
  ASSERT_FALSE(done.events.empty());
  EXPECT_EQ(done.events.back().reason, "Succeeded");
  EXPECT_NE(done.events.back().message.find("cost $2.50"), std::string::npos) << done.events.back().message;
}

TEST(CostDecideTest, SpotIsPricedAtItsOwnPrice) {
  auto plan = decide(observed(crd::Phase::Queued, JobState::Running, R"({"scheduling": {"strategy": "Spot"}})"));
  ASSERT_TRUE(plan.status && plan.status->cost);
  EXPECT_EQ(plan.status->cost->hourlyUsd, Usd::cents(20));  // 0.10 + 2 x 0.05
  EXPECT_EQ(plan.status->cost->estimatedUsd, Usd::cents(40));
}

TEST(CostDecideTest, AMissingPriceIsNoFigureAndAConditionSaysWhich) {
  auto plan = decide(observed(crd::Phase::Queued, JobState::Running, R"({"scheduling": {"strategy": "FlexStart"}})"));
  ASSERT_TRUE(plan.status);
  EXPECT_FALSE(plan.status->cost.has_value());
  EXPECT_FALSE(plan.status->history.attempts.back().costUsd.has_value());
  EXPECT_EQ(condition(*plan.status, "CostEstimated"),
            "False/PriceMissing: no cost estimate: the price table lacks the flexStart price of n1-standard-8 in "
            "us-central1 (price table custom:0123456789ab); add it with --price-catalog");
}

TEST(CostDecideTest, ATuningJobCostsEachTrialFromItsOwnStartToItsOwnEnd) {
  auto o = observed(crd::Phase::Queued, JobState::Running, R"({"hyperparameterTuning": {"maxTrialCount": 4,
      "parallelTrialCount": 2, "metrics": [{"metricId": "acc", "goal": "Maximize"}],
      "parameters": [{"parameterId": "lr", "double": {"min": 0.001, "max": 0.1}}]}})",
                    kTuningJob);
  // Two trials of 1 h side by side, then a third running for the last 30 min, a fourth not started.
  o.vertex.job->trialSpans = {{T0 - hours(2), T0 - hours(1)},
                              {T0 - hours(2), T0 - hours(1)},
                              {T0 - minutes(30), std::nullopt}};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status && plan.status->cost);
  EXPECT_EQ(plan.status->cost->estimatedUsd, Usd::cents(250));  // 2.5 trial-hours at 1.00/h
  EXPECT_EQ(plan.status->cost->hourlyUsd, Usd::cents(100));     // one trial runs now
  EXPECT_DOUBLE_EQ(plan.status->cost->acceleratorHours, 5);
}

TEST(CostDecideTest, MultiPoolWithReductionServerAndAResumedAttemptAddUp) {
  auto o = observed(crd::Phase::Queued, JobState::Running, R"({"distribution": {"strategy": "PyTorchDDP",
      "workerCount": 2, "reductionServer": {"replicaCount": 1, "machineType": "n1-highcpu-16"}}})");
  // Attempt 1 was preempted after costing 3.00; attempt 2 (this job) runs on 2 x 1.00 + 1.00 = 3.00/h.
  auto& history = o.status.history;
  history.attempts.front().jobName = "projects/test-project/locations/us-central1/customJobs/6";
  history.attempts.front().startTime = T0 - hours(4);
  history.attempts.front().endTime = T0 - hours(3);
  history.attempts.front().costUsd = Usd::dollars(3);
  history.attempts.front().acceleratorHours = 4;
  history.attempts.front().replicaHours = 3;
  crd::Attempt second;
  second.attempt = 2;
  second.jobName = kJob;
  history.attempts.push_back(second);
  history.attemptCount = 2;
  auto plan = decide(o);
  ASSERT_TRUE(plan.status && plan.status->cost);
  EXPECT_EQ(plan.status->history.attempts.back().costUsd, Usd::cents(600));
  EXPECT_EQ(plan.status->cost->estimatedUsd, Usd::cents(900));
  EXPECT_EQ(plan.status->cost->hourlyUsd, Usd::cents(300));
  EXPECT_DOUBLE_EQ(plan.status->cost->acceleratorHours, 4 + 8);
  EXPECT_DOUBLE_EQ(plan.status->cost->replicaHours, 3 + 6);
}

TEST(CostDecideTest, MaxCostUsdCancelsTheJobAtTheLimitAndTheRunFailsKeepingItsCheckpoint) {
  // Under the limit: no write of its own, and a pass is due when the estimate reaches it.
  auto under = observed(crd::Phase::Queued, JobState::Running, R"({"maxCostUsd": "2.05"})");
  auto first = decide(under);
  ASSERT_TRUE(first.status);
  EXPECT_FALSE(first.cancelJob.has_value());
  EXPECT_EQ(first.requeueAfter, seconds(181));  // 0.05 h at 1.00/h, then a second
  auto again = decide(later(under, *first.status, seconds(60)));
  EXPECT_FALSE(again.status.has_value());
  EXPECT_EQ(again.requeueAfter, seconds(109)) << "from the figure status shows ($2.02): never after the limit";

  // At the limit: cancelled, one Event.
  auto reached = later(under, *first.status, seconds(181));
  auto cancel = decide(reached);
  ASSERT_TRUE(cancel.cancelJob.has_value());
  EXPECT_EQ(*cancel.cancelJob, kJob);
  ASSERT_TRUE(cancel.status);
  EXPECT_EQ(cancel.status->phase, crd::Phase::Cancelling);
  ASSERT_EQ(cancel.events.size(), 1u);
  EXPECT_EQ(cancel.events[0].reason, "CostLimitReached");
  auto stillCancelling = later(reached, *cancel.status, seconds(2));
  stillCancelling.vertex.job->state = JobState::Cancelling;
  auto waiting = decide(stillCancelling);
  EXPECT_FALSE(waiting.cancelJob.has_value()) << "asked once";
  EXPECT_TRUE(waiting.events.empty());

  // Cancelled: Failed, CostLimitReached, the Failed Event says what it cost.
  auto cancelled = later(reached, *cancel.status, seconds(5));
  cancelled.vertex.job->state = JobState::Cancelled;
  cancelled.vertex.job->endTime = cancelled.now;
  cancelled.checkpoints.listed = true;
  auto failed = decide(cancelled);
  ASSERT_TRUE(failed.status);
  EXPECT_EQ(failed.status->phase, crd::Phase::Failed);
  EXPECT_EQ(condition(*failed.status, "Failed").substr(0, 21), "True/CostLimitReached");
  ASSERT_TRUE(failed.status->cost);
  EXPECT_EQ(failed.status->cost->estimatedUsd, Usd::cents(205));
  ASSERT_EQ(failed.events.size(), 1u);
  EXPECT_EQ(failed.events[0].reason, "Failed");
  EXPECT_NE(failed.events[0].message.find("cost $2.05"), std::string::npos) << failed.events[0].message;
  EXPECT_FALSE(failed.createJob.has_value());

  // The limit raised above the estimate: attempt 2 resumes from the newest checkpoint.
  auto raised = later(cancelled, *failed.status, minutes(10));
  raised.run = runWith(R"({"maxCostUsd": "10"})");
  raised.run->metadata.generation = 2;
  raised.metadata = raised.run->metadata;
  raised.checkpoints.latest = Checkpoint{"gs://bucket/r/checkpoints/ckpt-3", T0};
  EXPECT_TRUE(checkpointRequired(raised));
  auto resumed = decide(raised);
  ASSERT_TRUE(resumed.createJob.has_value());
  EXPECT_EQ(resumed.createJob->attempt, 2);
  EXPECT_EQ(resumed.createJob->resumeFrom, "gs://bucket/r/checkpoints/ckpt-3");
}

}  // namespace
}  // namespace vto::reconcilers
