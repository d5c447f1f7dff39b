// The price table and the pure cost arithmetic (crd/price_catalog.h, crd/cost.h).
#include "crd/cost.h"

#include <gtest/gtest.h>

#include "crd/strict_json.h"

namespace vto::crd {
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
  EXPECT_EQ(prices.accelerator("us-central1", "NVIDIA_TESLA_T4", SchedulingStrategy::Spot), 0.15);
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

TEST(Cost, MultiPoolWithReductionServerPricesEveryPool) {
  auto prices = PriceCatalog::parse(kPrices, "t");
  auto run = runWith(R"({"resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
      "distribution": {"strategy": "PyTorchDDP", "workerCount": 3,
                       "reductionServer": {"replicaCount": 2, "machineType": "n1-highcpu-16"}}})");
  auto pools = poolsOf(run);
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[0], (PoolUse{"n1-standard-8", "NVIDIA_TESLA_T4", 2, 1}));
  EXPECT_EQ(pools[1], (PoolUse{"n1-standard-8", "NVIDIA_TESLA_T4", 2, 2}));
  EXPECT_EQ(pools[2], (PoolUse{"n1-highcpu-16", "", 0, 2}));
  auto pricing = priceOf(prices, pools, "us-central1", SchedulingStrategy::Standard);
  ASSERT_TRUE(pricing.rate.has_value()) << pricing.missing;
  // 3 x (0.40 + 2 x 0.35) + 2 x 0.60
  EXPECT_NEAR(pricing.rate->usd, 3 * 1.10 + 1.20, 1e-9);
  EXPECT_DOUBLE_EQ(pricing.rate->accelerators, 6);
  EXPECT_DOUBLE_EQ(pricing.rate->replicas, 5);
  auto usage = usageOf(*pricing.rate, std::chrono::minutes(90));
  EXPECT_NEAR(usage.usd, 4.5 * 1.5, 1e-9);
  EXPECT_NEAR(usage.acceleratorHours, 9, 1e-9);
  EXPECT_NEAR(usage.replicaHours, 7.5, 1e-9);
}

TEST(Cost, SpotAndStandardUseTheirOwnPricesAndAMissingOneIsNamed) {
  auto prices = PriceCatalog::parse(kPrices, "t");
  auto run = runWith(R"({"resources": {"machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 1}})");
  auto pools = poolsOf(run);
  EXPECT_NEAR(priceOf(prices, pools, "us-central1", SchedulingStrategy::Standard).rate->usd, 4.00, 1e-9);
  EXPECT_NEAR(priceOf(prices, pools, "us-central1", SchedulingStrategy::Spot).rate->usd, 1.30, 1e-9);
  auto flex = priceOf(prices, pools, "us-central1", SchedulingStrategy::FlexStart);
  EXPECT_FALSE(flex.rate.has_value());
  EXPECT_EQ(flex.missing, "the flexStart price of a2-highgpu-1g in us-central1 (price table t)");
  auto elsewhere = priceOf(prices, pools, "europe-west4", SchedulingStrategy::Standard);
  EXPECT_FALSE(elsewhere.rate.has_value());
}

TEST(Cost, RawPoolsAndBuiltInAcceleratorsCount) {
  auto run = runWith(R"({"workerPoolSpecs": [
      {"machineSpec": {"machineType": "a2-highgpu-1g"}, "replicaCount": 2,
       "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}}]})");
  auto pools = poolsOf(run);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0], (PoolUse{"a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, 2}));
}

TEST(Cost, DollarFigures) {
  EXPECT_EQ(formatUsd(41.265), "41.27");
  EXPECT_EQ(formatUsd(0), "0.00");
  EXPECT_EQ(formatDollars(4980.125), "$4,980.13");
  EXPECT_EQ(formatDollars(5000), "$5,000");
  EXPECT_EQ(formatDollars(1234567.5), "$1,234,567.50");
  EXPECT_EQ(parseUsd("250"), 250);
  EXPECT_EQ(parseUsd("99.50"), 99.5);
  for (const char* bad : {"", "-1", "1.234", "1e3", ".5", "5.", "abc", "9999999999"}) EXPECT_FALSE(parseUsd(bad).has_value()) << bad;
}

}  // namespace
}  // namespace vto::crd
