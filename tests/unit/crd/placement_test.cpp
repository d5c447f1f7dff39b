// spec.capacity: fallbacks decoded as written, merged over the spec (crd::specAt), and each placement
// validated like the spec, its problems named under spec.capacity.fallbacks[i].
#include "crd/placement.h"

#include <gtest/gtest.h>

#include "crd/strict_json.h"

namespace vto::crd {
namespace {

TrainingRun runWith(const std::string& capacity) {
  auto object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns"},
    "spec": {"framework": "pytorch", "location": "us-central1",
             "trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "a2-highgpu-8g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 8,
                           "bootDiskSizeGb": 200},
             "scheduling": {"strategy": "FlexStart", "maxWaitDuration": "2h", "timeout": "24h"},
             "baseOutputDirectory": "gs://bucket/r"}})");
  object["spec"]["capacity"] = json::parse(capacity);
  return decodeTrainingRun(object);
}

std::vector<std::string> errors(const TrainingRun& run) {
  std::vector<std::string> out;
  for (const auto& f : validate(run))
    if (f.severity == Severity::Error) out.push_back(f.path + ": " + f.message);
  return out;
}

TEST(Placement, DefaultsAndDurations) {
  auto run = runWith(R"({"fallbacks": [{"location": "us-east4"}], "maxQueueTime": "45m"})");
  ASSERT_TRUE(run.spec.capacity);
  EXPECT_EQ(run.spec.capacity->maxQueueSeconds, 2700);
  EXPECT_EQ(run.spec.capacity->blockForSeconds, 1800);
  EXPECT_EQ(run.spec.capacity->giveUpAfterSeconds, 86400);
  EXPECT_EQ(placementCount(run.spec), 2u);
  EXPECT_THROW(runWith(R"({"blockFor": "half an hour"})"), DecodeError);
  // The CRD's advice, word for word; zero would retry a placement at once, or never wait.
  for (const auto& [capacity, advice] : std::vector<std::pair<std::string, std::string>>{
           {R"({"blockFor": "0s"})", "spec.capacity.blockFor: blockFor must be a positive duration like 30m or 1h"},
           {R"({"giveUpAfter": 0})", "spec.capacity.giveUpAfter: giveUpAfter must be a positive duration like 24h or 2h"},
           {R"({"maxQueueTime": "-5m"})", "spec.capacity.maxQueueTime: maxQueueTime must be a duration like 30m, 1h or 0s (never)"},
           {R"({"maxQueueTime": "soon"})", "spec.capacity.maxQueueTime: maxQueueTime must be a duration like 30m, 1h or 0s (never)"}}) {
    try {
      runWith(capacity);
      ADD_FAILURE() << capacity << " was accepted";
    } catch (const DecodeError& e) {
      EXPECT_EQ(std::string(e.what()), advice);
    }
  }
  EXPECT_EQ(runWith(R"({"maxQueueTime": "0s"})").spec.capacity->maxQueueSeconds, 0) << "0s: never";
  EXPECT_EQ(runWith(R"({"fallbacks": [{"location": "us-east4"}], "maxQueueTime": "0s"})").spec.capacity->maxQueueSeconds, 0);
  EXPECT_EQ(run.spec.capacity->maxFailovers, 20);
}

TEST(Placement, FailoverIsBoundedAsTheContractSays) {
  // Vertex holds a job QUEUED while the project lacks quota: with fallbacks, a queue has a limit.
  EXPECT_EQ(runWith(R"({"fallbacks": [{"location": "us-east4"}]})").spec.capacity->maxQueueSeconds, 1800);
  EXPECT_EQ(runWith(R"({})").spec.capacity->maxQueueSeconds, 0) << "nowhere else to go: never";
  auto bounded = runWith(R"({"fallbacks": [{"location": "us-east4"}], "maxQueueTime": "5m", "blockFor": "60s",
                             "giveUpAfter": "720h", "maxFailovers": 100})");
  EXPECT_EQ(bounded.spec.capacity->maxQueueSeconds, 300);
  EXPECT_EQ(bounded.spec.capacity->blockForSeconds, 60);
  EXPECT_EQ(bounded.spec.capacity->giveUpAfterSeconds, 30 * 86400);
  EXPECT_EQ(bounded.spec.capacity->maxFailovers, 100);
  // The CRD's advice, word for word: each failure may create a job, so these bound the creates.
  for (const auto& [capacity, advice] : std::vector<std::pair<std::string, std::string>>{
           {R"({"maxQueueTime": "1s"})", "spec.capacity.maxQueueTime: maxQueueTime must be 0s (never) or at least 5m, like 30m or 1h"},
           {R"({"maxQueueTime": "299"})", "spec.capacity.maxQueueTime: maxQueueTime must be 0s (never) or at least 5m, like 30m or 1h"},
           {R"({"blockFor": "59s"})", "spec.capacity.blockFor: blockFor must be at least 1m, like 30m or 1h"},
           {R"({"giveUpAfter": "87600h"})", "spec.capacity.giveUpAfter: giveUpAfter must be at most 720h (30 days), like 24h"},
           {R"({"giveUpAfter": "720h1s"})", "spec.capacity.giveUpAfter: giveUpAfter must be at most 720h (30 days), like 24h"},
           {R"({"maxFailovers": 101})", "spec.capacity.maxFailovers: maxFailovers must be a number from 0 to 100 (default 20)"},
           {R"({"maxFailovers": -1})", "spec.capacity.maxFailovers: maxFailovers must be a number from 0 to 100 (default 20)"}}) {
    try {
      runWith(capacity);
      ADD_FAILURE() << capacity << " was accepted";
    } catch (const DecodeError& e) {
      EXPECT_EQ(std::string(e.what()), advice);
    }
  }
  EXPECT_THROW(runWith(R"({"fallbacks": [{"resources": {"machineTyp": "x"}}]})"), DecodeError) << "unknown fields are refused";
}

TEST(Placement, AFallbackMergesItsFieldsOverTheSpec) {
  auto run = runWith(R"({"fallbacks": [
      {"location": "us-east4"},
      {"resources": {"machineType": "a3-highgpu-8g", "acceleratorType": "NVIDIA_H100_80GB"}},
      {"location": "europe-west4", "scheduling": {"strategy": "Standard"}}]})");
  auto east = specAt(run.spec, 1);
  EXPECT_EQ(east.location, "us-east4");
  EXPECT_EQ(east.resources->machineType, "a2-highgpu-8g");
  EXPECT_FALSE(east.capacity) << "a placement has no fallbacks of its own";
  auto h100 = specAt(run.spec, 2);
  EXPECT_EQ(h100.location, "us-central1");
  EXPECT_EQ(h100.resources->machineType, "a3-highgpu-8g");
  EXPECT_EQ(h100.resources->acceleratorCount, 8) << "fields it does not name come from the spec";
  EXPECT_EQ(h100.resources->bootDiskSizeGb, 200);
  auto europe = specAt(run.spec, 3);
  EXPECT_EQ(europe.scheduling.strategy, SchedulingStrategy::Standard);
  EXPECT_FALSE(europe.scheduling.maxWaitSeconds) << "only FlexStart keeps the spec's maxWaitDuration";
  EXPECT_EQ(europe.scheduling.timeoutSeconds, 86400);
  EXPECT_EQ(placementPath(3), "spec.capacity.fallbacks[2]");
  EXPECT_EQ(encodeTrainingRunSpec(decodeTrainingRunSpec(encodeTrainingRunSpec(run.spec), "spec")),
            encodeTrainingRunSpec(run.spec));
}

TEST(Placement, EveryFallbackIsValidatedLikeTheSpecAndNamedAsTheFallback) {
  EXPECT_TRUE(errors(runWith(R"({"fallbacks": [{"location": "us-east4"}]})")).empty());
  auto bad = errors(runWith(R"({"fallbacks": [
      {},
      {"resources": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 1}},
      {"location": "US Central"},
      {"resources": {"machineType": "ct5lp-hightpu-4t", "acceleratorType": "TPU_V5_LITEPOD", "acceleratorCount": 4}}]})"));
  ASSERT_EQ(bad.size(), 5u) << ::testing::PrintToString(bad);
  EXPECT_EQ(bad[0].rfind("spec.capacity.fallbacks[0]: an empty fallback", 0), 0u) << bad[0];
  EXPECT_EQ(bad[1].rfind("spec.capacity.fallbacks[1].resources.acceleratorType: ", 0), 0u) << bad[1];
  EXPECT_EQ(bad[2].rfind("spec.capacity.fallbacks[2].location: ", 0), 0u) << bad[2];
  EXPECT_EQ(bad[3].rfind("spec.capacity.fallbacks[3].framework: ", 0), 0u) << "pytorch on the fallback's TPU: " << bad[3];
  EXPECT_EQ(bad[4], "spec.capacity.fallbacks[3].resources.acceleratorType: FlexStart runs only on L4, A100, H100, H200 or "
                    "B200 GPUs; use one of them or another scheduling strategy")
      << "the spec's FlexStart on the fallback's TPU";
}

TEST(Placement, FlexStartPrerequisitesHoldOnEveryPlacement) {
  // Google's Dynamic Workload Scheduler: L4, A100, H100, H200 or B200 only; a timeout of at most 7 days.
  auto bad = errors(runWith(R"({"fallbacks": [
      {"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1}},
      {"scheduling": {"timeout": "200h"}},
      {"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
       "scheduling": {"strategy": "Spot"}}]})"));
  ASSERT_EQ(bad.size(), 2u) << ::testing::PrintToString(bad);
  EXPECT_EQ(bad[0].rfind("spec.capacity.fallbacks[0].resources.acceleratorType: FlexStart runs only on L4, A100", 0), 0u)
      << bad[0];
  EXPECT_EQ(bad[1], "spec.capacity.fallbacks[1].scheduling.timeout: FlexStart allows a timeout of at most 7 days (168h)");
}

TEST(Placement, FlexStartRulesHoldOnTheMergedPlacement) {
  auto bad = errors(runWith(R"({"fallbacks": [{"scheduling": {"strategy": "Spot", "maxWaitDuration": "1h"}}]})"));
  ASSERT_EQ(bad.size(), 1u) << ::testing::PrintToString(bad);
  EXPECT_EQ(bad[0].rfind("spec.capacity.fallbacks[0].scheduling.maxWaitDuration: only FlexStart waits", 0), 0u) << bad[0];
  // A fallback that names no strategy keeps the spec's FlexStart, and may wait longer there.
  auto longer = runWith(R"({"fallbacks": [{"location": "us-east4", "scheduling": {"maxWaitDuration": "4h"}}]})");
  EXPECT_TRUE(errors(longer).empty()) << ::testing::PrintToString(errors(longer));
  EXPECT_EQ(specAt(longer.spec, 1).scheduling.maxWaitSeconds, 4 * 3600);
}

}  // namespace
}  // namespace vto::crd
