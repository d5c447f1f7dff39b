// Capacity and accelerator quotas: jobs placed where Vertex has no capacity fail or wait as Vertex's
// do, and creates beyond a quota get Vertex's 429.
#include "emulator/capacity.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "tests/unit/emulator/emulator_fixture.h"
#include "vertex/api_error.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A CustomJob with `replicas` x `count` accelerators of `type` and the given scheduling strategy.
json gpuJob(const std::string& type, int count, int replicas = 1, const std::string& strategy = "") {
  auto job = customJob("gpu");
  auto& pool = job["jobSpec"]["workerPoolSpecs"][0];
  pool["machineSpec"] = {{"machineType", "a2-highgpu-1g"}, {"acceleratorType", type}, {"acceleratorCount", count}};
  pool["replicaCount"] = std::to_string(replicas);
  if (!strategy.empty()) job["jobSpec"]["scheduling"] = {{"strategy", strategy}};
  job["jobSpec"].erase("baseOutputDirectory");
  return job;
}

class CapacityTest : public EmulatorFixture {
 protected:
  CapacityTest() : EmulatorFixture(options()) {}
  static EmulatorOptions options() {
    EmulatorOptions options;
    options.simulation = {2s, 3, 10s, 1s};
    options.simulation.stockoutWait = 0s;  // a stockout at once, unless a test waits for it
    return options;
  }
  Response setCapacity(const json& entry) { return control("POST", "capacity", entry); }
};

TEST_F(CapacityTest, AJobWithoutCapacityFailsAfterItsQueueTimeWithVertexsStockoutError) {
  auto running = create(gpuJob("NVIDIA_TESLA_A100", 1));
  advance(2s);
  ASSERT_EQ(get(running)["state"], "JOB_STATE_RUNNING");

  auto set = setCapacity({{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_A100"}, {"machineType", ""},
                          {"strategy", ""}, {"available", false}, {"mode", "fail"}});
  ASSERT_EQ(set.status, 200) << set.body.dump();
  auto stockedOut = create(gpuJob("NVIDIA_TESLA_A100", 1));
  auto otherGpu = create(gpuJob("NVIDIA_TESLA_T4", 1));
  advance(1s);
  EXPECT_EQ(get(stockedOut)["state"], "JOB_STATE_PENDING");
  advance(1s);
  auto job = get(stockedOut);
  EXPECT_EQ(job["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(job["error"]["code"], 8);
  EXPECT_EQ(job["error"]["message"],
            "Resources are insufficient in region: us-central1. Please try a different region. If you use K80, please "
            "consider using P100 or V100 instead.");
  EXPECT_FALSE(job.contains("startTime"));
  EXPECT_EQ(job["endTime"], job["updateTime"]);
  EXPECT_EQ(get(otherGpu)["state"], "JOB_STATE_RUNNING");
  EXPECT_EQ(get(running)["state"], "JOB_STATE_RUNNING") << "a job already running is not affected";

  // Capacity back: new jobs run again.
  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_A100"}, {"available", true}}).status, 200);
  auto later = create(gpuJob("NVIDIA_TESLA_A100", 1));
  advance(2s);
  EXPECT_EQ(get(later)["state"], "JOB_STATE_RUNNING");
}

TEST_F(CapacityTest, WithModeHoldAJobStaysPendingUntilCapacityReturnsThenRuns) {
  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"available", false}, {"mode", "hold"}}).status, 200);
  auto held = create(gpuJob("NVIDIA_L4", 1));
  for (int i = 0; i < 10; ++i) advance(30s);
  auto job = get(held);
  EXPECT_EQ(job["state"], "JOB_STATE_PENDING");
  EXPECT_FALSE(job.contains("startTime"));

  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"available", true}}).status, 200);
  advance(1s);
  job = get(held);
  EXPECT_EQ(job["state"], "JOB_STATE_RUNNING");
  EXPECT_EQ(job["startTime"], rfc3339Millis(clock_.now())) << "it starts when the capacity returns";
  advance(30s);
  EXPECT_EQ(get(held)["state"], "JOB_STATE_SUCCEEDED");
}

TEST_F(CapacityTest, AHeldJobCanBeCancelled) {
  ASSERT_EQ(setCapacity({{"available", false}, {"mode", "hold"}}).status, 200);
  auto held = create(gpuJob("NVIDIA_L4", 1));
  advance(5s);
  ASSERT_EQ(call("POST", "/v1/" + held + ":cancel", json::object()).status, 200);
  advance(1s);
  EXPECT_EQ(get(held)["state"], "JOB_STATE_CANCELLED");
}

TEST_F(CapacityTest, ALaterEntryOverridesTheEarlierOnesItMatches) {
  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"available", false}}).status, 200);
  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_T4"}, {"available", true}}).status, 200);
  auto t4 = create(gpuJob("NVIDIA_TESLA_T4", 1));
  auto l4 = create(gpuJob("NVIDIA_L4", 1));
  auto cpu = create(customJob("cpu"));
  advance(2s);
  EXPECT_EQ(get(t4)["state"], "JOB_STATE_RUNNING");
  EXPECT_EQ(get(l4)["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(get(cpu)["state"], "JOB_STATE_FAILED") << "a region without capacity has none for CPUs either";

  // The same selector again replaces the entry (and moves it last): the list does not grow.
  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"available", true}}).status, 200);
  auto entries = control("GET", "capacity").body["entries"];
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1]["available"], true);
  auto again = create(gpuJob("NVIDIA_L4", 1));
  advance(2s);
  EXPECT_EQ(get(again)["state"], "JOB_STATE_RUNNING");
}

TEST_F(CapacityTest, StrategyMatchesTheJobsSchedulingStrategyInVertexOrVtoSpelling) {
  ASSERT_EQ(setCapacity({{"acceleratorType", "NVIDIA_H100_80GB"}, {"strategy", "Spot"}, {"available", false}}).status, 200);
  auto spot = create(gpuJob("NVIDIA_H100_80GB", 8, 1, "SPOT"));
  auto lowCost = create(gpuJob("NVIDIA_H100_80GB", 8, 1, "LOW_COST"));  // deprecated: spot resources
  auto standard = create(gpuJob("NVIDIA_H100_80GB", 8));                 // no strategy: STANDARD
  auto flexStart = create(gpuJob("NVIDIA_H100_80GB", 8, 1, "FLEX_START"));
  advance(2s);
  EXPECT_EQ(get(spot)["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(get(lowCost)["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(get(standard)["state"], "JOB_STATE_RUNNING");
  EXPECT_EQ(get(flexStart)["state"], "JOB_STATE_RUNNING");
  EXPECT_EQ(control("GET", "capacity").body["entries"][0]["strategy"], "SPOT");
}

TEST_F(CapacityTest, QuotaRefusesCreatesBeyondItWithVertexs429NamingTheMetric) {
  ASSERT_EQ(setCapacity({{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_A100"}, {"quota", 8},
                         {"quotaMode", "refuse"}})
                .status,
            200);
  auto first = create(gpuJob("NVIDIA_TESLA_A100", 4, 2));  // 4 x 2 = 8: exactly the quota
  auto refused = call("POST", kParent + "/customJobs", gpuJob("NVIDIA_TESLA_A100", 1));
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.body["error"]["status"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(refused.body["error"]["message"],
            "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus");
  auto spot = call("POST", kParent + "/customJobs", gpuJob("NVIDIA_TESLA_A100", 1, 1, "SPOT"));
  EXPECT_EQ(spot.status, 429);
  EXPECT_NE(spot.body["error"]["message"].get<std::string>().find("custom_model_training_preemptible_nvidia_a100_gpus"),
            std::string::npos);
  EXPECT_EQ(control("GET", "stats").body["acceleratorQuotaRejected"], 2);
  // Other accelerators, other locations: not counted.
  EXPECT_EQ(call("POST", kParent + "/customJobs", gpuJob("NVIDIA_TESLA_T4", 4)).status, 200);
  EXPECT_EQ(call("POST", "/v1/projects/emu-project/locations/europe-west4/customJobs", gpuJob("NVIDIA_TESLA_A100", 8)).status,
            200);

  advance(2s);
  advance(30s);  // the first job ends: its accelerators are free
  ASSERT_EQ(get(first)["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_EQ(call("POST", kParent + "/customJobs", gpuJob("NVIDIA_TESLA_A100", 8)).status, 200);
}

TEST_F(CapacityTest, QuotaCountsQueuedJobsAndTuningJobsParallelTrials) {
  ASSERT_EQ(setCapacity({{"acceleratorType", "NVIDIA_L4"}, {"quota", 8}, {"quotaMode", "refuse"}}).status, 200);
  auto tuning = json::parse(R"({"displayName": "hpt", "maxTrialCount": 6, "parallelTrialCount": 3,
      "studySpec": {"metrics": [{"metricId": "auc", "goal": "MAXIMIZE"}],
                    "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}})");
  tuning["trialJobSpec"] = gpuJob("NVIDIA_L4", 2)["jobSpec"];
  EXPECT_EQ(call("POST", kParent + "/hyperparameterTuningJobs", tuning).status, 200);  // 2 x 3 trials = 6
  auto queued = call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 2));          // 6 + 2 = 8
  ASSERT_EQ(queued.status, 200);
  EXPECT_EQ(queued.body["state"], "JOB_STATE_QUEUED");
  EXPECT_EQ(call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 1)).status, 429) << "queued jobs count";
  // Cancelling frees the accelerators once the job is CANCELLED.
  ASSERT_EQ(call("POST", "/v1/" + queued.body["name"].get<std::string>() + ":cancel", json::object()).status, 200);
  EXPECT_EQ(call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 1)).status, 429) << "still CANCELLING";
  advance(1s);
  EXPECT_EQ(call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 1)).status, 200);
}

TEST_F(CapacityTest, AJobOverItsQuotaStaysQueuedWithoutAnErrorUntilTheQuotaFrees) {
  // Google's default: a project short of quota keeps the job QUEUED; the create is not refused.
  ASSERT_EQ(setCapacity({{"acceleratorType", "NVIDIA_L4"}, {"quota", 4}}).status, 200);
  auto holder = create(gpuJob("NVIDIA_L4", 4));
  auto queued = call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 2));
  ASSERT_EQ(queued.status, 200) << queued.body.dump();
  std::string name = queued.body["name"];
  EXPECT_EQ(control("GET", "stats").body["acceleratorQuotaQueued"], 1);
  for (int i = 0; i < 5; ++i) advance(2s);
  EXPECT_EQ(get(holder)["state"], "JOB_STATE_RUNNING");
  auto job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_QUEUED") << "no PENDING, no error while the quota is spent";
  EXPECT_FALSE(job.contains("error"));
  advance(30s);  // the holder ends: its accelerators are free
  ASSERT_EQ(get(holder)["state"], "JOB_STATE_SUCCEEDED");
  advance(1s);  // admitted at this tick; its queue time counts from here
  advance(2s);
  EXPECT_EQ(get(name)["state"], "JOB_STATE_RUNNING");
  // Cancelled while queued over its quota, a job frees nothing it never held.
  auto second = call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 4));
  ASSERT_EQ(second.status, 200);
  ASSERT_EQ(call("POST", "/v1/" + second.body["name"].get<std::string>() + ":cancel", json::object()).status, 200);
  advance(1s);
  EXPECT_EQ(get(second.body["name"])["state"], "JOB_STATE_CANCELLED");
  auto third = call("POST", kParent + "/customJobs", gpuJob("NVIDIA_L4", 3));
  advance(2s);
  EXPECT_EQ(get(third.body["name"])["state"], "JOB_STATE_QUEUED") << "the running job still holds 2 of 4";
}

// The emulator's defaults: a stockout is reported after Vertex's provisioning wait.
class StockoutWaitTest : public EmulatorFixture {
 protected:
  StockoutWaitTest() : EmulatorFixture(options()) {}
  static EmulatorOptions options() {
    EmulatorOptions options;
    options.simulation = {2s, 3, 10s, 1s};
    return options;
  }
};

TEST_F(StockoutWaitTest, AStockoutWaitsPendingBeforeItFailsAndCapacityReturningInTimeStartsTheJob) {
  ASSERT_EQ(control("POST", "capacity", {{"location", "us-central1"}, {"available", false}}).status, 200);
  auto stockedOut = create(gpuJob("NVIDIA_L4", 1));
  advance(2s);
  advance(10s);
  EXPECT_EQ(get(stockedOut)["state"], "JOB_STATE_PENDING") << "Vertex tries to provision first";
  advance(19s);
  EXPECT_EQ(get(stockedOut)["state"], "JOB_STATE_PENDING");
  advance(1s);  // 2s queue + 30s wait
  auto job = get(stockedOut);
  EXPECT_EQ(job["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(job["error"]["code"], 8);
  EXPECT_EQ(job["endTime"], rfc3339Millis(clock_.now()));

  ASSERT_EQ(control("POST", "capacity", {{"location", "us-central1"}, {"available", true}}).status, 200);
  auto late = create(gpuJob("NVIDIA_L4", 1));
  ASSERT_EQ(control("POST", "capacity", {{"location", "us-central1"}, {"available", false}}).status, 200);
  advance(2s);
  advance(5s);
  ASSERT_EQ(get(late)["state"], "JOB_STATE_PENDING");
  ASSERT_EQ(control("POST", "capacity", {{"location", "us-central1"}, {"available", true}}).status, 200);
  advance(1s);
  EXPECT_EQ(get(late)["state"], "JOB_STATE_RUNNING") << "capacity back within the wait: it runs";
}

TEST_F(StockoutWaitTest, APreemptedSpotJobCanEndWithTheStockoutError) {
  auto spot = create(gpuJob("NVIDIA_L4", 1, 1, "SPOT"));
  ASSERT_EQ(control("POST", spot + ":fail", {{"failureClass", "SpotStockout"}}).status, 400) << "it never ran";
  advance(2s);
  ASSERT_EQ(get(spot)["state"], "JOB_STATE_RUNNING");
  auto failed = control("POST", spot + ":fail", {{"failureClass", "SpotStockout"}});
  ASSERT_EQ(failed.status, 200) << failed.body.dump();
  auto job = get(spot);
  EXPECT_EQ(job["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(job["error"]["code"], 8);
  EXPECT_NE(job["error"]["message"].get<std::string>().find("Resources are insufficient in region: us-central1"),
            std::string::npos);
  EXPECT_TRUE(job.contains("startTime")) << "it ran";
}

TEST_F(CapacityTest, InvalidEntriesAreRefusedSayingWhatIsExpected) {
  for (const auto& entry : {json{{"location", "us-central1"}},
                            json{{"available", "no"}},
                            json{{"available", false}, {"mode", "wait"}},
                            json{{"acceleratorType", "NVIDIA_T4"}, {"available", false}},
                            json{{"strategy", "Cheap"}, {"available", false}},
                            json{{"quota", -1}},
                            json{{"quota", 1}, {"quotaMode", "wait"}},
                            json{{"region", "us-central1"}, {"available", false}},
                            json::array({json{{"available", false}}, json{{"colour", "red"}}})}) {
    auto response = setCapacity(entry);
    EXPECT_EQ(response.status, 400) << entry.dump();
    EXPECT_NE(response.body["error"]["message"].get<std::string>().find("capacity entry"), std::string::npos)
        << response.body.dump();
  }
  EXPECT_TRUE(control("GET", "capacity").body["entries"].empty()) << "an invalid list changes nothing";
  ASSERT_EQ(setCapacity(json::array({json{{"available", false}}, json{{"quota", 4}, {"location", "x"}}})).status, 200);
  EXPECT_EQ(control("GET", "capacity").body["entries"].size(), 2u);
  EXPECT_TRUE(control("DELETE", "capacity").body["entries"].empty());
}

TEST(CapacityAtStart, EntriesComeFromTheOptionsAndAnInvalidOneIsRefused) {
  testing::FakeClock clock;
  EmulatorOptions options;
  options.capacity = json::parse(R"([{"location": "us-central1", "available": false, "mode": "hold"}])");
  Emulator emulator(clock, options, nullptr);
  auto entries = emulator.handle({"GET", "/emulator/v1/capacity", {}, {}, ""}).body["entries"];
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["mode"], "hold");
  options.capacity = json::parse(R"([{"location": "us-central1"}])");
  EXPECT_THROW(Emulator(clock, options, nullptr), vertex::ApiError);
}

TEST(AcceleratorQuotaMetric, NamesTheOnDemandOrPreemptibleMetric) {
  EXPECT_EQ(acceleratorQuotaMetric("NVIDIA_TESLA_T4", "STANDARD"), "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus");
  EXPECT_EQ(acceleratorQuotaMetric("NVIDIA_A100_80GB", "FLEX_START"),
            "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_a100_80gb_gpus");
  EXPECT_EQ(acceleratorQuotaMetric("NVIDIA_H100_80GB", "STANDARD"), "aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus");
}

}  // namespace
}  // namespace vto::emulator
