// The price table, money and the cost model (governance/price_catalog.h, base/money.h, governance/cost.h).
#include "governance/cost.h"

#include <gtest/gtest.h>

#include "crd/accelerators.h"
#include "crd/machine_catalog.h"
#include "crd/render.h"
#include "crd/strict_json.h"

namespace vto::governance {
// What this file reads of the API.
using crd::DecodeError;
using crd::ReplicaUse;
using crd::SchedulingStrategy;
using crd::TrainingRun;
using crd::acceleratorsOf;
using crd::decodeTrainingRun;
using crd::renderJob;
using crd::replicaUseOf;

namespace {

using nlohmann::json;

const char* kPrices = R"(
date: "2026-11-01"
source: https://cloud.google.com/vertex-ai/pricing
locations:
  us-central1:
    machines:
      n1-standard-8: {standard: 0.40, spot: 0.10}
      n1-highcpu-16: {standard: 0.60}
      a2-highgpu-1g: {standard: 1.00, spot: 0.30}
    accelerators:
      NVIDIA_TESLA_T4: {standard: 0.35, spot: 0.15}
      NVIDIA_TESLA_A100: {standard: 3.00, spot: 1.00, flexStart: 1.50}
)";

TrainingRun runWith(const std::string& spec) {
  json object = {{"apiVersion", "vto.dev/v1beta1"},
                 {"kind", "TrainingRun"},
                 {"metadata", {{"name", "r"}, {"namespace", "ns"}, {"uid", "u"}}},
                 {"spec", json::parse(spec)}};
  object["spec"]["baseOutputDirectory"] = "gs://b/r";
  if (!object["spec"].contains("trainer") && !object["spec"].contains("workerPoolSpecs"))
    object["spec"]["trainer"] = {{"container", {{"imageUri", "us-docker.pkg.dev/p/r/i:1"}}}};
  return decodeTrainingRun(object);
}

TEST(PriceCatalog, TheBuiltInTableHasItsDateAndSource) {
  const auto& prices = PriceCatalog::builtIn();
  EXPECT_FALSE(prices.date().empty());
  EXPECT_EQ(prices.id(), prices.date());
  EXPECT_EQ(prices.source(), "https://cloud.google.com/vertex-ai/pricing");
  ASSERT_TRUE(prices.machine("us-central1", "n1-standard-4", SchedulingStrategy::Standard).has_value());
}

TEST(PriceCatalog, AMissingStrategyPriceIsMissingNotTheStandardOne) {
  auto prices = PriceCatalog::parse(kPrices, "custom:abc");
  EXPECT_EQ(prices.id(), "custom:abc");
  EXPECT_EQ(prices.accelerator("us-central1", "NVIDIA_TESLA_T4", SchedulingStrategy::Spot), Usd::cents(15));
  EXPECT_FALSE(prices.accelerator("us-central1", "NVIDIA_TESLA_T4", SchedulingStrategy::FlexStart).has_value());
  EXPECT_FALSE(prices.machine("us-central1", "n1-highcpu-16", SchedulingStrategy::Spot).has_value());
  EXPECT_FALSE(prices.machine("us-east4", "n1-standard-8", SchedulingStrategy::Standard).has_value());
}

TEST(PriceCatalog, AFileThatIsNotATableIsRefusedNamingTheField) {
  try {
    PriceCatalog::parse("date: \"2026-11-01\"\nlocations: {us-central1: {machines: {n1-standard-8: {standrd: 1}}}}", "x");
    FAIL() << "accepted";
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.path(), "locations.us-central1.machines.n1-standard-8.standrd");
  }
  EXPECT_THROW(PriceCatalog::parse("date: \"d\"\nlocations: {l: {machines: {m: {standard: -1}}}}", "x"), DecodeError);
  EXPECT_THROW(PriceCatalog::parse("source: s\n", "x"), DecodeError);  // no date
  // An absurd price (a typo, or 1e17 an hour) would swamp every budget's sums: refused when read.
  try {
    PriceCatalog::parse("date: \"d\"\nlocations: {l: {machines: {m: {standard: 1e17}}}}", "x");
    ADD_FAILURE() << "a price of 1e17 an hour was accepted";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("more than $10,000 an hour"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(PriceCatalog::parse("date: \"d\"\nlocations: {l: {accelerators: {a: {standard: 10000}}}}", "x"));
}

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point kStart = Clock::time_point{} + hours(24 * 365 * 56);

JobShape shapeOf(const TrainingRun& run, const std::string& location = "us-central1") { return shapeOfRun(run, location); }

TEST(Cost, MultiPoolWithReductionServerPricesEveryPool) {
  auto prices = PriceCatalog::parse(kPrices, "t");
  auto run = runWith(R"({"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
      "distribution": {"strategy": "PyTorchDDP", "workerCount": 3,
                       "reductionServer": {"replicaCount": 2, "machineType": "n1-highcpu-16"}}})");
  auto shape = shapeOf(run);
  ASSERT_EQ(shape.pools.size(), 3u);
  EXPECT_EQ(shape.pools[0], (PoolUse{"n1-standard-8", "NVIDIA_TESLA_T4", 2, 1, 1}));
  EXPECT_EQ(shape.pools[1], (PoolUse{"n1-standard-8", "NVIDIA_TESLA_T4", 2, 1, 2}));
  EXPECT_EQ(shape.pools[2], (PoolUse{"n1-highcpu-16", "", 0, 1, 2}));
  // 3 x (0.40 + 2 x 0.35) + 2 x 0.60
  EXPECT_EQ(hourlyPriceOf(prices, shape), Usd::cents(3 * 110 + 120));
  JobTimes times{kStart, kStart + minutes(90), true, {}};
  auto cost = priceJob(prices, shape, times, kStart + hours(5)).cost;
  ASSERT_TRUE(cost);
  EXPECT_EQ(cost->spent, Usd::cents(675));  // 4.50 x 1.5 h
  EXPECT_NEAR(cost->acceleratorHours, 9, 1e-9);
  EXPECT_NEAR(cost->replicaHours, 7.5, 1e-9);
  EXPECT_EQ(cost->hourly, Usd());
  EXPECT_EQ(cost->worstRemaining, Usd()) << "an ended job spends nothing more";
}

TEST(Cost, SpotAndStandardUseTheirOwnPricesAndAMissingOneIsNamed) {
  auto prices = PriceCatalog::parse(kPrices, "t");
  auto run = runWith(R"({"resources": {"machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 1}})");
  auto shape = shapeOf(run);
  EXPECT_EQ(hourlyPriceOf(prices, shape), Usd::dollars(4));
  shape.strategy = SchedulingStrategy::Spot;
  EXPECT_EQ(hourlyPriceOf(prices, shape), Usd::cents(130));
  shape.strategy = SchedulingStrategy::FlexStart;
  std::string missing;
  EXPECT_FALSE(hourlyPriceOf(prices, shape, &missing).has_value());
  EXPECT_EQ(missing, "the flexStart price of a2-highgpu-1g in us-central1 (price table t)");
  auto elsewhere = priceJob(prices, shapeOf(run, "europe-west4"), {}, kStart);
  EXPECT_FALSE(elsewhere.cost.has_value());
  EXPECT_NE(elsewhere.missing.find("in europe-west4"), std::string::npos) << elsewhere.missing;
}

TEST(Cost, RawPoolsAndBuiltInAcceleratorsCount) {
  auto run = runWith(R"({"workerPoolSpecs": [
      {"machineSpec": {"machineType": "a2-highgpu-1g"}, "replicaCount": 2,
       "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}}]})");
  auto shape = shapeOf(run);
  ASSERT_EQ(shape.pools.size(), 1u);
  EXPECT_EQ(shape.pools[0], (PoolUse{"a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, 1, 2}));
}

// A multi-host TPU slice: every host priced, and the chips counted as the accelerator cap counts them.
TEST(Cost, ATpuSliceIsPricedForEveryHostWithTheChipsTenancyCounts) {
  auto prices = PriceCatalog::parse(R"(
date: "d"
locations:
  us-west4:
    machines: {ct5lp-hightpu-4t: {standard: 1.00}}
    accelerators: {TPU_V5_LITEPOD: {standard: 1.20}})", "t");
  auto run = runWith(R"({"resources": {"machineType": "ct5lp-hightpu-4t", "acceleratorType": "TPU_V5_LITEPOD",
                                       "acceleratorCount": 4, "tpuTopology": "4x4"}})");
  auto shape = shapeOf(run, "us-west4");
  ASSERT_EQ(shape.pools.size(), 1u);
  EXPECT_EQ(shape.pools[0], (PoolUse{"ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 16, 4, 1}));
  EXPECT_EQ(acceleratorsOf(run.spec), 16) << "the cap and the price count the same chips";
  EXPECT_EQ(replicaUseOf("ct5lp-hightpu-4t", 4, "4x4"), (ReplicaUse{16, 4}));
  EXPECT_EQ(replicaUseOf("ct5lp-hightpu-4t", 0, ""), (ReplicaUse{4, 1}));
  // 4 hosts x 1.00 + 16 chips x 1.20
  EXPECT_EQ(hourlyPriceOf(prices, shape), Usd::cents(400 + 1920));
  auto cost = priceJob(prices, shape, JobTimes{kStart, kStart + hours(2), true, {}}, kStart + hours(3)).cost;
  EXPECT_EQ(cost->spent, Usd::cents(2 * 2320));
  EXPECT_NEAR(cost->acceleratorHours, 32, 1e-9);
  EXPECT_NEAR(cost->replicaHours, 8, 1e-9);
}

// What a job may still spend, for the budget: until its timeout (Vertex's 7 days without one), a
// tuning job for every trial not finished, a running one for what is left of its timeout.
TEST(Cost, AJobsWorstCaseRunsToItsTimeout) {
  auto prices = PriceCatalog::parse(kPrices, "t");
  auto plain = shapeOf(runWith(R"({"resources": {"machineType": "n1-standard-8"}, "scheduling": {"timeout": "2h"}})"));
  EXPECT_EQ(plain.timeout, hours(2));
  auto fresh = priceJob(prices, plain, {}, kStart).cost;
  EXPECT_EQ(fresh->spent, Usd());
  EXPECT_EQ(fresh->worstRemaining, Usd::cents(80)) << "0.40/h for 2 h";
  auto halfway = priceJob(prices, plain, JobTimes{kStart, std::nullopt, false, {}}, kStart + minutes(30)).cost;
  EXPECT_EQ(halfway->spent, Usd::cents(20));
  EXPECT_EQ(halfway->hourly, Usd::cents(40));
  EXPECT_EQ(halfway->worstRemaining, Usd::cents(60));
  EXPECT_EQ(halfway->worstTotal(), fresh->worstRemaining);
  auto overdue = priceJob(prices, plain, JobTimes{kStart, std::nullopt, false, {}}, kStart + hours(3)).cost;
  EXPECT_EQ(overdue->worstRemaining, Usd()) << "past its timeout Vertex stops it";

  auto unbounded = shapeOf(runWith(R"({"resources": {"machineType": "n1-standard-8"}})"));
  EXPECT_EQ(unbounded.timeout, kVertexDefaultTimeout);
  EXPECT_EQ(priceJob(prices, unbounded, {}, kStart).cost->worstRemaining, Usd::cents(40 * 24 * 7));

  auto tuning = shapeOf(runWith(R"({"resources": {"machineType": "n1-standard-8"}, "scheduling": {"timeout": "1h"},
      "hyperparameterTuning": {"maxTrialCount": 100, "parallelTrialCount": 4,
        "metrics": [{"metricId": "auc", "goal": "Maximize"}],
        "parameters": [{"parameterId": "lr", "double": {"min": 0.001, "max": 0.1}}]}})"));
  EXPECT_TRUE(tuning.tuning);
  EXPECT_EQ(tuning.maxTrials, 100);
  EXPECT_EQ(tuning.parallelTrials, 4);
  EXPECT_EQ(priceJob(prices, tuning, {}, kStart).cost->worstRemaining, Usd::dollars(40)) << "100 trials of 1 h at 0.40";
  // 10 trials ended, 2 running for 15 min: 88 not started + 2 x 45 min.
  JobTimes trials{kStart, std::nullopt, false, {}};
  for (int i = 0; i < 10; ++i) trials.trials.push_back({kStart, kStart + minutes(30)});
  for (int i = 0; i < 2; ++i) trials.trials.push_back({kStart + hours(1), std::nullopt});
  auto now = kStart + hours(1) + minutes(15);
  auto going = priceJob(prices, tuning, trials, now).cost;
  EXPECT_EQ(going->spent, Usd::cents(200 + 20));  // 10 x 0.5 h + 2 x 0.25 h at 0.40
  EXPECT_EQ(going->hourly, Usd::cents(80));
  EXPECT_EQ(going->worstRemaining, Usd::cents(88 * 40 + 2 * 30));
  // Between trials nothing runs, and every trial not started may still run to its timeout.
  trials.trials.resize(10);
  auto between = priceJob(prices, tuning, trials, now).cost;
  EXPECT_EQ(between->hourly, Usd());
  EXPECT_EQ(between->worstRemaining, Usd::cents(90 * 40));
}

TEST(Cost, AVertexJobIsReadAsItsRenderingIs) {
  auto run = runWith(R"({"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
      "scheduling": {"strategy": "Spot", "timeout": "90m"}, "distribution": {"strategy": "PyTorchDDP", "workerCount": 2}})");
  auto rendered = renderJob(run, 1, "");
  // Vertex answers int64 fields as strings.
  rendered["jobSpec"]["workerPoolSpecs"][1]["replicaCount"] = "1";
  EXPECT_EQ(shapeOfJob(rendered, "us-central1").pools, shapeOf(run).pools);
  EXPECT_EQ(shapeOfJob(rendered, "us-central1").timeout, minutes(90));
  EXPECT_EQ(shapeOfJob(rendered, "us-central1").strategy, SchedulingStrategy::Spot);
}

}  // namespace
}  // namespace vto::governance
