// The accelerators a spec asks for (crd/accelerators.h): machines x per machine x parallel trials,
// the chips a TPU machine or slice carries, and counts that saturate instead of wrapping.
#include "crd/accelerators.h"

#include <gtest/gtest.h>

#include <limits>

#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

TrainingRunSpec minimalSpec() { return testing::runFromYaml(testing::kMinimalRun).spec; }

TEST(Accelerators, CountMachinesAndParallelTrials) {
  auto spec = minimalSpec();
  spec.resources->acceleratorCount = 2;
  EXPECT_EQ(acceleratorsOf(spec), 2);
  spec.distribution = Distribution{};
  spec.distribution->workerCount = 3;
  EXPECT_EQ(acceleratorsOf(spec), 6);
  spec.hyperparameterTuning = HyperparameterTuning{};
  spec.hyperparameterTuning->parallelTrialCount = 2;
  EXPECT_EQ(acceleratorsOf(spec), 12);
  spec.resources->acceleratorType.clear();
  spec.resources->acceleratorCount = 0;
  EXPECT_EQ(acceleratorsOf(spec), 0);
}

// A TPU machine carries its chips whether or not the pool names them; it used to count as zero.
TEST(Accelerators, TpuMachinesCountTheirChipsWithoutAnAcceleratorType) {
  auto raw = minimalSpec();
  raw.trainer.reset();
  raw.resources.reset();
  raw.workerPoolSpecs = nlohmann::json::parse(R"([{"machineSpec": {"machineType": "ct5lp-hightpu-4t"}, "replicaCount": 8,
                                                   "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}}])");
  EXPECT_EQ(acceleratorsOf(raw), 32) << "4 chips per machine x 8 replicas";
  EXPECT_EQ(acceleratorTypesOf(raw), (std::vector<std::pair<std::string, std::string>>{
                                         {"spec.workerPoolSpecs[0].machineSpec.machineType", "TPU_V5_LITEPOD"}}));

  // A declared count below what the machine carries, and a slice larger than one machine.
  auto resources = minimalSpec();
  resources.resources = Resources{"ct5lp-hightpu-8t", "TPU_V5_LITEPOD", 1, "", "", 0};
  EXPECT_EQ(acceleratorsOf(resources), 8);
  resources.resources->tpuTopology = "4x8";
  EXPECT_EQ(acceleratorsOf(resources), 32);
  resources.resources = Resources{"cloud-tpu", "", 0, "", "", 0};
  EXPECT_EQ(acceleratorsOf(resources), 8);
  // A CPU parameter server on a GPU machine holds its GPUs too.
  auto ps = minimalSpec();
  ps.distribution = Distribution{Strategy::ParameterServer, 1, ReplicaPool{2, "a2-highgpu-4g"}, std::nullopt, std::nullopt};
  EXPECT_EQ(acceleratorsOf(ps), 1 + 2 * 4);
}

TEST(Accelerators, CountsSaturateInsteadOfWrappingNegative) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(saturatingMultiply(int64_t{1} << 40, int64_t{1} << 40), kMax);
  EXPECT_EQ(saturatingAdd(kMax - 1, 5), kMax);
  EXPECT_EQ(saturatingMultiply(4096, 4), 16384);
  // The largest counts a run may write stay exact: every factor is bounded.
  auto spec = minimalSpec();
  spec.resources->acceleratorCount = 64;
  spec.distribution = Distribution{};
  spec.distribution->workerCount = 10000;
  spec.hyperparameterTuning = HyperparameterTuning{};
  spec.hyperparameterTuning->parallelTrialCount = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(acceleratorsOf(spec), int64_t{64} * 10000 * std::numeric_limits<int32_t>::max());
}

}  // namespace
}  // namespace vto::crd
