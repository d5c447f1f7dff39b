#include <gtest/gtest.h>

#include "crd/render.h"
#include "crd/retraining_policy.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

using testing::kMinimalRun;
using testing::runFromYaml;

TrainingRun withSpec(const std::string& extraSpecYaml) { return testing::runWithSpec(extraSpecYaml); }

std::string envValue(const json& pool, const std::string& name) {
  const json& code = pool.contains("containerSpec") ? pool["containerSpec"] : pool["pythonPackageSpec"];
  for (const auto& e : code["env"])
    if (e["name"] == name) return e["value"];
  return "<unset>";
}

TEST(Render, SingleMachineIsOnePrimaryPool) {
  json body = renderCustomJob(withSpec(""), 1, "");
  const json& pools = body["jobSpec"]["workerPoolSpecs"];
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]["replicaCount"], "1");
  EXPECT_EQ(pools[0]["machineSpec"], json::parse(R"({"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1})"));
  EXPECT_EQ(pools[0]["containerSpec"]["imageUri"], "us-central1-docker.pkg.dev/p/r/img:1");
  EXPECT_EQ(pools[0]["containerSpec"]["args"], json::array({"--epochs=1"}));
  EXPECT_EQ(body["displayName"], "team-a-demo");
  EXPECT_EQ(body["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"], "gs://bucket/demo");
}

TEST(Render, MirroredAndTpuStayOnOneMachine) {
  EXPECT_EQ(renderCustomJob(withSpec("  distribution: {strategy: Mirrored}\n"), 1, "")["jobSpec"]["workerPoolSpecs"].size(), 1u);
  auto tpu = withSpec("  framework: jax\n  resources: {machineType: cloud-tpu, acceleratorType: TPU_V3, acceleratorCount: 8}\n  distribution: {strategy: TPU}\n");
  json pools = renderCustomJob(tpu, 1, "")["jobSpec"]["workerPoolSpecs"];
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]["machineSpec"]["acceleratorType"], "TPU_V3");
}

TEST(Render, PyTorchDdpHasPrimaryAndWorkers) {
  json pools = renderCustomJob(withSpec("  distribution: {strategy: PyTorchDDP, workerCount: 4}\n"), 1, "")["jobSpec"]["workerPoolSpecs"];
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0]["replicaCount"], "1");
  EXPECT_EQ(pools[1]["replicaCount"], "3");
  EXPECT_EQ(pools[1]["machineSpec"], pools[0]["machineSpec"]);
}

TEST(Render, MultiWorkerMirroredWithReductionServer) {
  json pools = renderCustomJob(withSpec("  distribution: {strategy: MultiWorkerMirrored, workerCount: 2, reductionServer: {replicaCount: 4, machineType: n1-highcpu-16}}\n"),
                               1, "")["jobSpec"]["workerPoolSpecs"];
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[1]["replicaCount"], "1");
  EXPECT_EQ(pools[2]["replicaCount"], "4");
  EXPECT_EQ(pools[2]["machineSpec"], json::parse(R"({"machineType": "n1-highcpu-16"})"));
  EXPECT_EQ(pools[2]["containerSpec"]["imageUri"], kDefaultReductionServerImage);
  EXPECT_EQ(envValue(pools[2], "VTO_ATTEMPT"), "1");
}

TEST(Render, ParameterServerHasChiefWorkersServersAndEvaluator) {
  json pools = renderCustomJob(withSpec(R"(  resources: {machineType: n1-standard-16}
  distribution: {strategy: ParameterServer, workerCount: 3, parameterServers: {replicaCount: 2, machineType: n1-highmem-8}, evaluator: {machineType: n1-standard-4}}
)"), 1, "")["jobSpec"]["workerPoolSpecs"];
  ASSERT_EQ(pools.size(), 4u);
  EXPECT_EQ(pools[1]["replicaCount"], "2");
  EXPECT_EQ(pools[2]["replicaCount"], "2");
  EXPECT_EQ(pools[2]["machineSpec"]["machineType"], "n1-highmem-8");
  EXPECT_EQ(pools[3]["machineSpec"]["machineType"], "n1-standard-4");
  EXPECT_EQ(pools[3]["containerSpec"]["imageUri"], pools[0]["containerSpec"]["imageUri"]);
}

TEST(Render, ParameterServerWithOneMachineSkipsTheWorkerPool) {
  json pools = renderCustomJob(withSpec(R"(  resources: {machineType: n1-standard-16}
  distribution: {strategy: ParameterServer, parameterServers: {machineType: n1-highmem-8}}
)"), 1, "")["jobSpec"]["workerPoolSpecs"];
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[1], json::object());
}

TEST(Render, EveryPoolGetsTheOperatorEnvAfterTheUsers) {
  auto run = withSpec("  trainer: {container: {imageUri: us-docker.pkg.dev/p/r/i:1, env: [{name: LR, value: '0.1'}]}}\n  distribution: {strategy: PyTorchDDP, workerCount: 2}\n");
  json pools = renderCustomJob(run, 3, "gs://bucket/demo/checkpoints/ckpt-7")["jobSpec"]["workerPoolSpecs"];
  for (const auto& pool : pools) {
    EXPECT_EQ(pool["containerSpec"]["env"][0]["name"], "LR");
    EXPECT_EQ(envValue(pool, "VTO_TRAININGRUN"), "team-a/demo");
    EXPECT_EQ(envValue(pool, "VTO_ATTEMPT"), "3");
    EXPECT_EQ(envValue(pool, "VTO_RESUME_FROM"), "gs://bucket/demo/checkpoints/ckpt-7");
  }
  EXPECT_EQ(envValue(renderCustomJob(run, 1, "")["jobSpec"]["workerPoolSpecs"][0], "VTO_RESUME_FROM"), "<unset>");
}

TEST(Render, ARetrainingRunsTriggerAnnotationsBecomeEnvOnEveryPool) {
  auto run = withSpec("  distribution: {strategy: PyTorchDDP, workerCount: 2}\n");
  run.metadata.annotations = {{kTriggerReasonAnnotation, "Schedule"},
                              {kTriggerTimeAnnotation, "2026-12-01T03:00:00Z"},
                              {kWarmStartFromAnnotation, "gs://m/fraud-1/model/"},
                              {"unrelated", "x"}};
  auto job = renderCustomJob(run, 1, "");  // a named job: a loop over a temporary's member dangles
  for (const auto& pool : job["jobSpec"]["workerPoolSpecs"]) {
    EXPECT_EQ(envValue(pool, "VTO_TRIGGER_REASON"), "Schedule");
    EXPECT_EQ(envValue(pool, "VTO_TRIGGER_TIME"), "2026-12-01T03:00:00Z");
    EXPECT_EQ(envValue(pool, "VTO_WARM_START_FROM"), "gs://m/fraud-1/model/");
    EXPECT_EQ(envValue(pool, "VTO_DATA_WATERMARK"), "<unset>");
  }
  EXPECT_EQ(envValue(renderCustomJob(withSpec(""), 1, "")["jobSpec"]["workerPoolSpecs"][0], "VTO_TRIGGER_REASON"), "<unset>");
}

TEST(Render, OutputDirectoryIsTheSameForEveryAttempt) {
  auto run = withSpec("");
  EXPECT_EQ(renderCustomJob(run, 1, "")["jobSpec"]["baseOutputDirectory"],
            renderCustomJob(run, 4, "gs://bucket/demo/checkpoints/ckpt-9")["jobSpec"]["baseOutputDirectory"]);
}

TEST(Render, LabelsCarryTheRunAndTheUsersLabels) {
  auto run = withSpec("  labels: {team: vision}\n");
  run.metadata.name = "ResNet.v2";
  json labels = renderCustomJob(run, 2, "")["labels"];
  EXPECT_EQ(labels, json::parse(R"({"team": "vision", "vto-run-uid": "0b6c1f4e-1111-2222-3333-444455556666",
      "vto-namespace": "team-a", "vto-name": "resnet-v2", "vto-attempt": "2", "managed-by": "vto",
      "vto-accelerators": "1", "vto-accelerator-type": "nvidia_tesla_t4"})"))
      << "what the job holds is on it, for the accelerator caps";
  EXPECT_FALSE(renderCustomJob(withSpec("  resources: {machineType: n1-standard-4}\n"), 1, "")["labels"].contains("vto-accelerators"))
      << "a job without accelerators has no such label";
}

TEST(Render, SchedulingUsesProtoDurationsAndEnumNames) {
  json spot = renderCustomJob(withSpec("  scheduling: {timeout: 24h, strategy: Spot, disableRetries: true}\n"), 1, "")["jobSpec"]["scheduling"];
  EXPECT_EQ(spot, json::parse(R"({"timeout": "86400s", "strategy": "SPOT", "disableRetries": true})"));
  json flex = renderCustomJob(withSpec("  scheduling: {strategy: FlexStart, maxWaitDuration: 2h}\n"), 1, "")["jobSpec"]["scheduling"];
  EXPECT_EQ(flex, json::parse(R"({"strategy": "FLEX_START", "maxWaitDuration": "7200s"})"));
  EXPECT_EQ(renderCustomJob(withSpec(""), 1, "")["jobSpec"]["scheduling"]["strategy"], "STANDARD");
}

TEST(Render, PythonPackageBecomesPythonPackageSpec) {
  auto run = withSpec(R"(  trainer: {pythonPackage: {executorImageUri: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-12.py310:latest, packageUris: [gs://b/t.tar.gz], pythonModule: trainer.task, args: [--x]}}
)");
  json pool = renderCustomJob(run, 1, "")["jobSpec"]["workerPoolSpecs"][0];
  EXPECT_FALSE(pool.contains("containerSpec"));
  EXPECT_EQ(pool["pythonPackageSpec"]["pythonModule"], "trainer.task");
  EXPECT_EQ(pool["pythonPackageSpec"]["packageUris"], json::array({"gs://b/t.tar.gz"}));
  EXPECT_EQ(envValue(pool, "VTO_ATTEMPT"), "1");
}

TEST(Render, OptionalJobFieldsAppearOnlyWhenSet) {
  json plain = renderCustomJob(withSpec(""), 1, "");
  EXPECT_FALSE(plain.contains("encryptionSpec"));
  EXPECT_FALSE(plain["jobSpec"].contains("serviceAccount"));
  json full = renderCustomJob(withSpec(R"(  serviceAccount: sa@p.iam.gserviceaccount.com
  network: projects/1/global/networks/vpc
  enableWebAccess: true
  tensorboard: projects/p/locations/l/tensorboards/1
  encryptionKmsKeyName: projects/p/locations/l/keyRings/r/cryptoKeys/k
)"), 1, "");
  EXPECT_EQ(full["encryptionSpec"]["kmsKeyName"], "projects/p/locations/l/keyRings/r/cryptoKeys/k");
  EXPECT_EQ(full["jobSpec"]["serviceAccount"], "sa@p.iam.gserviceaccount.com");
  EXPECT_EQ(full["jobSpec"]["enableWebAccess"], true);
  EXPECT_EQ(full["jobSpec"]["tensorboard"], "projects/p/locations/l/tensorboards/1");
}

TEST(Render, ExpertPoolsPassThroughWithTheOperatorEnv) {
  auto run = withSpec("");
  run.spec.trainer.reset();
  run.spec.resources.reset();
  run.spec.workerPoolSpecs = json::parse(R"([{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1,
                                             "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1", "env": [{"name": "A", "value": "b"}]}}, {}])");
  json pools = renderCustomJob(run, 2, "")["jobSpec"]["workerPoolSpecs"];
  EXPECT_EQ(pools[0]["replicaCount"], "1");
  EXPECT_EQ(pools[0]["containerSpec"]["env"][0]["name"], "A");
  EXPECT_EQ(envValue(pools[0], "VTO_ATTEMPT"), "2");
  EXPECT_EQ(pools[1], json::object());
}

TEST(Render, HyperparameterTuningJob) {
  auto run = withSpec(R"(  hyperparameterTuning:
    maxTrialCount: 20
    parallelTrialCount: 4
    maxFailedTrialCount: 3
    algorithm: Grid
    metrics: [{metricId: loss, goal: Minimize}]
    parameters:
      - {parameterId: layers, integer: {min: 2, max: 8}, scale: Linear}
      - {parameterId: batch, discrete: {values: [32, 64]}}
      - {parameterId: opt, categorical: {values: [adam, sgd]}}
)");
  EXPECT_EQ(jobKindOf(run.spec), vertex::JobKind::HyperparameterTuning);
  json body = renderJob(run, 1, "");
  EXPECT_EQ(body["maxTrialCount"], 20);
  EXPECT_EQ(body["parallelTrialCount"], 4);
  EXPECT_EQ(body["maxFailedTrialCount"], 3);
  EXPECT_EQ(body["studySpec"]["algorithm"], "GRID_SEARCH");
  EXPECT_EQ(body["studySpec"]["metrics"][0], json::parse(R"({"metricId": "loss", "goal": "MINIMIZE"})"));
  EXPECT_EQ(body["studySpec"]["parameters"][0]["integerValueSpec"], json::parse(R"({"minValue": "2", "maxValue": "8"})"));
  EXPECT_EQ(body["studySpec"]["parameters"][0]["scaleType"], "UNIT_LINEAR_SCALE");
  EXPECT_EQ(body["studySpec"]["parameters"][2]["categoricalValueSpec"]["values"], json::array({"adam", "sgd"}));
  EXPECT_EQ(body["trialJobSpec"]["workerPoolSpecs"].size(), 1u);
  EXPECT_FALSE(body.contains("jobSpec"));
}

TEST(Render, TheLocationComesFromTheSpecOrTheDefaults) {
  auto run = withSpec("  location: europe-west4\n");
  auto placement = locationOf(run.spec, {"default-project", "us-central1"});
  EXPECT_EQ(parentOf(placement), "projects/default-project/locations/europe-west4");
  EXPECT_THROW(parentOf(locationOf(run.spec, {})), std::invalid_argument);
}

}  // namespace
}  // namespace vto::crd
