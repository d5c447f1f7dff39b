#pragma once
// What a job costs by the hour, from its worker pools and a price table (crd/price_catalog.h), and
// what a stretch of running at that rate comes to. Pure: no clock, no I/O. The reconciler
// (reconcilers/trainingrun/cost.h) applies it to the times Vertex reported; budgets and `vto cost`
// use the same figures.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "crd/price_catalog.h"
#include "crd/training_run.h"

namespace vto::crd {

// One worker pool as it runs: `replicas` machines, each with `acceleratorCount` x `acceleratorType`
// (what the pool names, else what its machine type carries by itself).
struct PoolUse {
  std::string machineType;
  std::string acceleratorType;  // "" for none
  int64_t acceleratorCount = 0;
  int64_t replicas = 0;
  bool operator==(const PoolUse&) const = default;
};

// The pools of one job (one trial of a tuning job) of `run` as written: the pools vto renders for
// resources/distribution (reduction server, parameter servers and evaluator included), or the raw
// workerPoolSpecs. Empty pools (a skipped middle pool) are left out.
std::vector<PoolUse> poolsOf(const TrainingRun& run);
// The same from a Vertex job's workerPoolSpecs as Vertex returns them (a job whose run is gone).
std::vector<PoolUse> poolsOfWorkerPools(const nlohmann::json& workerPoolSpecs);
// A job's scheduling.strategy as Vertex writes it ("SPOT", "FLEX_START"; anything else: Standard).
SchedulingStrategy strategyOfJob(const nlohmann::json& scheduling);

// What one job (one trial) costs per hour, with the hours it accrues per hour.
struct HourlyRate {
  double usd = 0;
  double accelerators = 0;  // accelerator-hours per hour: accelerators held at once
  double replicas = 0;      // machine replica-hours per hour: machines held at once
};

struct Pricing {
  std::optional<HourlyRate> rate;  // nullopt: a price is missing
  std::string missing;             // then which one: "the spot price of NVIDIA_TESLA_A100 in us-east4"
};

Pricing priceOf(const PriceCatalog& prices, const std::vector<PoolUse>& pools, const std::string& location,
                SchedulingStrategy strategy);

// What running at `rate` for `hours` comes to.
struct Usage {
  double usd = 0, acceleratorHours = 0, replicaHours = 0;
  Usage& operator+=(const Usage& other);
};
Usage usageOf(const HourlyRate& rate, Clock::duration running);

// "41.27": dollars to 2 decimals, as status and Events write them.
std::string formatUsd(double usd);
// "$4,980.12": for messages people read.
std::string formatDollars(double usd);
// Parses a "41.27"-style amount (spec.maxCostUsd, status figures); nullopt for anything else
// (negative, not a number, more than 2 decimals, over a billion).
std::optional<double> parseUsd(const std::string& text);
// Hours rounded to 3 decimals (status.cost.acceleratorHours / replicaHours), so a status that
// nothing new changed compares equal.
double roundHours(double hours);

}  // namespace vto::crd
