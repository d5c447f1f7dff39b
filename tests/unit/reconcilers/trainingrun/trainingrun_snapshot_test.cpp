#include "reconcilers/trainingrun/snapshot.h"

#include <gtest/gtest.h>

namespace vto::reconcilers {
namespace {

using nlohmann::json;

json run(json spec, json status = json::object()) {
  json object = {{"apiVersion", "vto.dev/v1beta1"},
                 {"kind", "TrainingRun"},
                 {"metadata",
                  {{"name", "resnet"}, {"namespace", "team-a"}, {"uid", "u1"}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
                 {"spec", spec}};
  if (!status.empty()) object["status"] = status;
  return object;
}

json ddpSpec() {
  return {{"framework", "pytorch"},
          {"trainer", {{"container", {{"imageUri", "us-docker.pkg.dev/p/r/i:1"}}}}},
          {"resources", {{"machineType", "a2-highgpu-8g"}, {"acceleratorType", "NVIDIA_TESLA_A100"}, {"acceleratorCount", 8}}},
          {"distribution", {{"strategy", "PyTorchDDP"}, {"workerCount", 4}}},
          {"scheduling", {{"strategy", "Spot"}}},
          {"baseOutputDirectory", "gs://b/resnet"}};
}

TEST(TrainingRunSnapshot, ReadsTheMachinesOfTheRenderedJobOnceValidated) {
  auto snapshot = trainingRunSnapshot(run(ddpSpec(), {{"phase", "Running"}}));
  EXPECT_EQ(snapshot.uid, "u1");
  EXPECT_EQ(snapshot.ns, "team-a");
  EXPECT_EQ(snapshot.phase, "Running");
  EXPECT_EQ(snapshot.framework, "pytorch");
  EXPECT_EQ(snapshot.scheduling, "Spot");
  EXPECT_EQ(snapshot.acceleratorType, "NVIDIA_TESLA_A100");
  ASSERT_TRUE(snapshot.created.has_value());
  // DDP with 4 machines: the primary pool (1) and the worker pool (3), 8 A100s each.
  int machines = 0, accelerators = 0;
  for (const auto& pool : snapshot.pools) {
    machines += pool.replicas;
    accelerators += pool.replicas * pool.acceleratorCount;
  }
  EXPECT_EQ(machines, 4);
  EXPECT_EQ(accelerators, 32);
}

TEST(TrainingRunSnapshot, ProgressIsTheStepOverTotalStepsWithTheEta) {
  struct Case {
    const char* name;
    json progress;
    std::optional<double> ratio;
    bool eta;
  };
  const std::vector<Case> cases = {
      {"a share of totalSteps", {{"step", 7}, {"totalSteps", 10}, {"percent", 70}, {"eta", "2026-01-01T01:00:00Z"}}, 0.7, true},
      {"no totalSteps: no ratio, no eta", {{"step", 7}}, std::nullopt, false},
      {"past totalSteps stays at 1", {{"step", 12}, {"totalSteps", 10}, {"percent", 100}}, 1.0, false},
  };
  for (const auto& c : cases) {
    auto snapshot = trainingRunSnapshot(run(ddpSpec(), {{"phase", "Running"}, {"progress", c.progress}}));
    EXPECT_EQ(snapshot.progressRatio, c.ratio) << c.name;
    EXPECT_EQ(snapshot.eta.has_value(), c.eta) << c.name;
  }
  EXPECT_FALSE(trainingRunSnapshot(run(ddpSpec(), {{"phase", "Running"}})).progressRatio.has_value());
}

TEST(TrainingRunSnapshot, PhasesAreTheCrdsNames) {
  auto phases = trainingRunPhases();
  EXPECT_EQ(phases.size(), 11u);
  EXPECT_EQ(phases.front(), "Pending");
  EXPECT_EQ(phases.back(), "Invalid");
}

TEST(TrainingRunSnapshot, ATuningJobHoldsItsParallelTrials) {
  auto spec = ddpSpec();
  spec["distribution"] = {{"strategy", "None"}};
  spec["hyperparameterTuning"] = {{"maxTrialCount", 8}, {"parallelTrialCount", 3}, {"metrics", {{{"metricId", "acc"}, {"goal", "Maximize"}}}},
                                  {"parameters", {{{"parameterId", "lr"}, {"double", {{"min", 0.001}, {"max", 0.1}}}}}}};
  auto snapshot = trainingRunSnapshot(run(spec, {{"phase", "Running"}}));
  ASSERT_EQ(snapshot.pools.size(), 1u);
  EXPECT_EQ(snapshot.pools[0].replicas, 3);
}

TEST(TrainingRunSnapshot, BeforeValidationOrWhenInvalidNoMachineNamesAreTaken) {
  EXPECT_TRUE(trainingRunSnapshot(run(ddpSpec())).pools.empty());
  EXPECT_EQ(trainingRunSnapshot(run(ddpSpec())).phase, "Pending");
  auto invalid = trainingRunSnapshot(run(ddpSpec(), {{"phase", "Invalid"}}));
  EXPECT_TRUE(invalid.pools.empty());
  EXPECT_EQ(invalid.acceleratorType, "none");
  // An object that does not decode still counts, by namespace, as Pending.
  auto broken = trainingRunSnapshot(run({{"framework", 42}}));
  EXPECT_EQ(broken.ns, "team-a");
  EXPECT_EQ(broken.phase, "Pending");
}

TEST(TrainingRunSnapshot, FailedAttemptsByNumberWithUnknownClassesBounded) {
  json status = {{"phase", "Running"},
                 {"attempts",
                  {{{"attempt", 1}, {"jobName", "j1"}, {"state", "JOB_STATE_FAILED"}, {"startTime", "2026-01-01T00:05:00Z"},
                    {"failureClass", "Preemption"}},
                   {{"attempt", 2}, {"jobName", "j2"}, {"state", "JOB_STATE_FAILED"}, {"failureClass", "made-up {label}"}},
                   {{"attempt", 3}, {"jobName", "j3"}, {"state", "JOB_STATE_RUNNING"}}}}};
  auto snapshot = trainingRunSnapshot(run(ddpSpec(), status));
  EXPECT_EQ(snapshot.failedAttempts, (std::map<int, std::string>{{1, "Preemption"}, {2, "Unknown"}}));
  ASSERT_TRUE(snapshot.firstRunning.has_value());
  EXPECT_EQ(*snapshot.firstRunning - *snapshot.created, std::chrono::minutes(5));
}

}  // namespace
}  // namespace vto::reconcilers
