// TrainingRuns end to end: kubectl -> real API server -> vto run -> Vertex emulator, and back.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

std::string applyManifest(OperatorStack& stack, const std::string& yaml) {
  std::string path = stack.dir() + "/manifest-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
  std::ofstream(path) << yaml;
  return stack.kubectlOk("apply -f '" + path + "'");
}

const std::string kTuning =
    "  hyperparameterTuning:\n"
    "    maxTrialCount: 4\n    parallelTrialCount: 2\n    algorithm: Random\n"
    "    metrics: [{metricId: accuracy, goal: Maximize}]\n"
    "    parameters:\n"
    "      - {parameterId: lr, double: {min: 0.0001, max: 0.1}, scale: Log}\n"
    "      - {parameterId: layers, integer: {min: 2, max: 8}}\n";

// The runs that are only applied and waited for start together as the operator starts, so that their
// tests wait side by side instead of one after the other (the twenty and the tuning run).
void applyRunsThatOnlyWait(OperatorStack& stack) {
  std::string manifests;
  for (int i = 0; i < 20; ++i) manifests += "---\n" + simpleRunManifest("twenty", "run-" + std::to_string(i));
  manifests += "---\n" + simpleRunManifest("tuning", "tuned", kTuning);
  for (const char* ns : {"twenty", "tuning"}) stack.createNamespace(ns);
  applyManifest(stack, manifests);
}

// One stack for every test here: jobs queue 1 s and train 6 steps of 1 s.
// Destroyed at exit before the shared cluster (constructed inside it), so every process stops. The
// operator runs as the Helm chart's ServiceAccount with leader election: every test below also proves
// that the chart's least-privilege RBAC is enough.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "6", "--step-time", "1s", "--cancel-time", "300ms"});
  static bool started = (shared.useChartServiceAccount(),
                         shared.startOperator({"--leader-elect", "--leader-election-namespace", "vto-system"}),
                         applyRunsThatOnlyWait(shared), true);
  (void)started;
  return shared;
}

std::string applyManifest(const std::string& yaml) { return applyManifest(stack(), yaml); }

std::string uidOf(const std::string& ns, const std::string& name) {
  auto run = stack().getRun(ns, name);
  return run.is_object() ? run["metadata"].value("uid", "") : "";
}

TEST(TrainingRun, TwentyRunsAppliedAtOnceEachGetExactlyOneJobAndSucceed) {
  const std::string ns = "twenty";  // applied as the operator started
  for (int i = 0; i < 20; ++i) {
    std::string name = "run-" + std::to_string(i);
    ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(180)))
        << name << " is " << stack().phaseOf(ns, name) << "\n" << stack().operatorLog();
  }
  for (int i = 0; i < 20; ++i) {
    std::string name = "run-" + std::to_string(i);
    auto jobs = stack().jobsOfRun(uidOf(ns, name));
    ASSERT_EQ(jobs.size(), 1u) << name;
    EXPECT_EQ(jobs[0].state, vertex::JobState::Succeeded);
    auto run = stack().getRun(ns, name);
    EXPECT_EQ(run["status"]["job"]["name"], jobs[0].name);
    EXPECT_EQ(run["status"]["job"]["state"], "JOB_STATE_SUCCEEDED");
    EXPECT_EQ(run["status"]["observedGeneration"], run["metadata"]["generation"]);
  }
  // `kubectl wait` works on the conditions, as users script it.
  stack().kubectlOk("-n " + ns + " wait --for=condition=Succeeded trun/run-0 --timeout=5s");
}

TEST(TrainingRun, DeletingARunningRunCancelsItsJobBeforeTheRunGoes) {
  const std::string ns = "deletion";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "doomed"));
  ASSERT_TRUE(stack().waitForPhase(ns, "doomed", "Running", seconds(60))) << stack().operatorLog();
  std::string uid = uidOf(ns, "doomed");
  auto run = stack().getRun(ns, "doomed");
  EXPECT_EQ(run["metadata"]["finalizers"], nlohmann::json::array({"vto.dev/finalizer"}));
  stack().kubectlOk("-n " + ns + " delete trainingrun doomed --wait=false");
  ASSERT_TRUE(waitFor([&] { return stack().getRun(ns, "doomed").is_null(); }, seconds(60)));
  auto jobs = stack().jobsOfRun(uid);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, vertex::JobState::Cancelled);
}

TEST(TrainingRun, SuspendCancelsTheJobAndUnsuspendStartsTheNextAttempt) {
  const std::string ns = "suspension";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "pausable"));
  ASSERT_TRUE(stack().waitForPhase(ns, "pausable", "Running", seconds(60))) << stack().operatorLog();
  stack().kubectlOk("-n " + ns + " patch trainingrun pausable --type=merge -p '{\"spec\":{\"suspend\":true}}'");
  ASSERT_TRUE(stack().waitForPhase(ns, "pausable", "Suspended", seconds(60))) << stack().operatorLog();
  std::string uid = uidOf(ns, "pausable");
  auto suspended = stack().jobsOfRun(uid);
  ASSERT_EQ(suspended.size(), 1u);
  EXPECT_EQ(suspended[0].state, vertex::JobState::Cancelled);

  stack().kubectlOk("-n " + ns + " patch trainingrun pausable --type=merge -p '{\"spec\":{\"suspend\":false}}'");
  ASSERT_TRUE(stack().waitForPhase(ns, "pausable", "Succeeded", seconds(90))) << stack().operatorLog();
  auto jobs = stack().jobsOfRun(uid);
  ASSERT_EQ(jobs.size(), 2u);
  auto run = stack().getRun(ns, "pausable");
  ASSERT_EQ(run["status"]["attempts"].size(), 2u);
  EXPECT_EQ(run["status"]["attempts"][0]["state"], "JOB_STATE_CANCELLED");
  EXPECT_EQ(run["status"]["attempts"][1]["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_EQ(jobs[0].labels.at("vto-attempt") == "1" ? jobs[1].labels.at("vto-attempt") : jobs[0].labels.at("vto-attempt"),
            "2");
}

TEST(TrainingRun, AnInvalidSpecReachesInvalidWithAnEventAndCreatesNoJob) {
  const std::string ns = "invalid";
  stack().createNamespace(ns);
  // The API server accepts this (no CEL rule says a TPU slice is one pool); the operator must refuse it.
  // (An accelerator the machine cannot carry is refused by the CRD itself now: see crd_test.)
  auto manifest = simpleRunManifest(ns, "bad-gpu", "  distribution: {strategy: MultiWorkerMirrored, workerCount: 2}\n");
  const std::string cpuMachine = "    machineType: n1-standard-4\n";
  manifest.replace(manifest.find(cpuMachine), cpuMachine.size(),
                   "    machineType: cloud-tpu\n    acceleratorType: TPU_V3\n    acceleratorCount: 8\n");
  manifest.replace(manifest.find("framework: pytorch"), std::string("framework: pytorch").size(), "framework: tensorflow");
  applyManifest(manifest);
  ASSERT_TRUE(stack().waitForPhase(ns, "bad-gpu", "Invalid", seconds(60))) << stack().operatorLog();
  auto run = stack().getRun(ns, "bad-gpu");
  bool validFalse = false;
  for (const auto& c : run["status"]["conditions"]) {
    if (c["type"] == "Valid") validFalse = c["status"] == "False" && c["reason"] == "SpecInvalid";
  }
  EXPECT_TRUE(validFalse) << run["status"].dump(2);
  EXPECT_NE(run["status"]["message"].get<std::string>().find("spec.distribution.strategy"), std::string::npos)
      << run["status"]["message"];
  EXPECT_TRUE(waitFor(
      [&] {
        auto events = stack().cluster().kubectl("-n " + ns + " get events --field-selector involvedObject.name=bad-gpu "
                                                "-o jsonpath='{.items[*].reason}'");
        return events.output.find("InvalidSpec") != std::string::npos;
      },
      seconds(30)));
  EXPECT_TRUE(stack().jobsOfRun(uidOf(ns, "bad-gpu")).empty());
}

TEST(TrainingRun, AHyperparameterTuningRunReportsItsBestTrial) {
  const std::string ns = "tuning";  // applied as the operator started
  ASSERT_TRUE(stack().waitForPhase(ns, "tuned", "Succeeded", seconds(120))) << stack().operatorLog();
  auto run = stack().getRun(ns, "tuned");
  EXPECT_EQ(run["status"]["job"]["kind"], "HyperparameterTuningJob");
  ASSERT_TRUE(run["status"].contains("bestTrial")) << run["status"].dump(2);
  EXPECT_FALSE(run["status"]["bestTrial"]["id"].get<std::string>().empty());
  EXPECT_TRUE(run["status"]["bestTrial"]["metrics"].contains("accuracy"));
  EXPECT_TRUE(run["status"]["bestTrial"]["parameters"].contains("lr"));
  // The best trial is the best: no finished trial of the job has a higher accuracy.
  auto jobs = stack().jobsOfRun(uidOf(ns, "tuned"), vertex::JobKind::HyperparameterTuning);
  ASSERT_EQ(jobs.size(), 1u);
  double best = run["status"]["bestTrial"]["metrics"]["accuracy"];
  for (const auto& trial : jobs[0].raw["trials"]) {
    for (const auto& m : trial["finalMeasurement"]["metrics"]) {
      if (m["metricId"] == "accuracy") {
        EXPECT_LE(m["value"].get<double>(), best);
      }
    }
  }
}

TEST(TrainingRun, AFinishedRunIsDeletedAfterItsTtl) {
  const std::string ns = "ttl";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "short-lived", "  ttlSecondsAfterFinished: 2\n"));
  ASSERT_TRUE(stack().waitForPhase(ns, "short-lived", "Succeeded", seconds(60))) << stack().operatorLog();
  EXPECT_TRUE(waitFor([&] { return stack().getRun(ns, "short-lived").is_null(); }, seconds(30)))
      << "still there after its TTL";
}

TEST(TrainingRun, TheOperatorRunsWithTheChartsLeastPrivilegeRbac) {
  auto canI = [](const std::string& what) {
    return stack().cluster().kubectl("auth can-i " + what + " --as=system:serviceaccount:vto-system:vto").exitCode == 0;
  };
  EXPECT_TRUE(canI("watch trainingruns.vto.dev --all-namespaces"));
  EXPECT_TRUE(canI("update trainingruns.vto.dev --subresource=status -n default"));
  EXPECT_TRUE(canI("update leases.coordination.k8s.io -n vto-system"));
  EXPECT_FALSE(canI("update leases.coordination.k8s.io -n default"));
  EXPECT_FALSE(canI("get secrets -n vto-system"));
  EXPECT_FALSE(canI("create pods -n default"));
  EXPECT_FALSE(canI("update trainingruns.vto.dev -n default")) << "spec writes beyond finalizer patches are not needed";
  // Everything above ran with these rights; a missing one would have shown up as a 403 in the log.
  EXPECT_EQ(stack().operatorLog().find("forbidden"), std::string::npos) << stack().operatorLog();
}

}  // namespace
}  // namespace vto::testing
