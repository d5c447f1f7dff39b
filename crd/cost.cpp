#include "crd/cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "crd/machine_catalog.h"
#include "crd/raw_pool.h"
#include "crd/render.h"

namespace vto::crd {

std::vector<PoolUse> poolsOf(const TrainingRun& run) {
  // The rendered pools are what Vertex runs, whichever form the spec used, so the price follows the
  // same expansion of distribution into pools as the job itself.
  nlohmann::json body = renderCustomJob(run, 1, "");
  return poolsOfWorkerPools(body["jobSpec"]["workerPoolSpecs"]);
}

SchedulingStrategy strategyOfJob(const nlohmann::json& scheduling) {
  if (!scheduling.is_object()) return SchedulingStrategy::Standard;
  auto strategy = scheduling.value("strategy", nlohmann::json(""));
  if (strategy == "SPOT") return SchedulingStrategy::Spot;
  if (strategy == "FLEX_START") return SchedulingStrategy::FlexStart;
  return SchedulingStrategy::Standard;
}

std::vector<PoolUse> poolsOfWorkerPools(const nlohmann::json& workerPoolSpecs) {
  std::vector<PoolUse> out;
  if (!workerPoolSpecs.is_array()) return out;
  for (const auto& pool : workerPoolSpecs) {
    if (!pool.is_object() || pool.empty()) continue;
    RawPool raw = readRawPool(pool);
    if (raw.machineType.empty() || raw.replicaCount <= 0) continue;
    PoolUse use{raw.machineType, raw.acceleratorType, raw.acceleratorCount, raw.replicaCount};
    if (use.acceleratorType.empty() || use.acceleratorCount == 0) {
      if (auto builtIn = MachineCatalog::builtIn().builtInAccelerators(use.machineType);
          builtIn && !builtIn->acceleratorType.empty() && builtIn->count > 0) {
        use.acceleratorType = builtIn->acceleratorType;
        use.acceleratorCount = builtIn->count;
      } else {
        use.acceleratorType.clear();
        use.acceleratorCount = 0;
      }
    }
    out.push_back(std::move(use));
  }
  return out;
}

Pricing priceOf(const PriceCatalog& prices, const std::vector<PoolUse>& pools, const std::string& location,
                SchedulingStrategy strategy) {
  HourlyRate rate;
  auto missing = [&](const std::string& what) {
    return Pricing{std::nullopt, std::string("the ") + priceKeyOf(strategy) + " price of " + what + " in " + location +
                                     " (price table " + prices.id() + ")"};
  };
  for (const auto& pool : pools) {
    auto machine = prices.machine(location, pool.machineType, strategy);
    if (!machine) return missing(pool.machineType);
    double perMachine = *machine;
    if (pool.acceleratorCount > 0) {
      auto accelerator = prices.accelerator(location, pool.acceleratorType, strategy);
      if (!accelerator) return missing(pool.acceleratorType);
      perMachine += *accelerator * static_cast<double>(pool.acceleratorCount);
    }
    double replicas = static_cast<double>(pool.replicas);
    rate.usd += perMachine * replicas;
    rate.accelerators += static_cast<double>(pool.acceleratorCount) * replicas;
    rate.replicas += replicas;
  }
  return Pricing{rate, ""};
}

Usage& Usage::operator+=(const Usage& other) {
  usd += other.usd;
  acceleratorHours += other.acceleratorHours;
  replicaHours += other.replicaHours;
  return *this;
}

Usage usageOf(const HourlyRate& rate, Clock::duration running) {
  if (running < Clock::duration::zero()) running = Clock::duration::zero();
  double hours = std::chrono::duration<double, std::ratio<3600>>(running).count();
  return Usage{rate.usd * hours, rate.accelerators * hours, rate.replicas * hours};
}

std::string formatUsd(double usd) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", std::max(0.0, usd) + 1e-9);
  return text;
}

std::string formatDollars(double usd) {
  std::string plain = formatUsd(usd);
  auto dot = plain.find('.');
  std::string whole = plain.substr(0, dot);
  std::string grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  std::string cents = plain.substr(dot);
  if (cents == ".00") cents.clear();
  return "$" + grouped + cents;
}

std::optional<double> parseUsd(const std::string& text) {
  if (text.empty() || text.size() > 13) return std::nullopt;
  size_t dot = text.find('.');
  for (size_t i = 0; i < text.size(); ++i)
    if (i != dot && (text[i] < '0' || text[i] > '9')) return std::nullopt;
  if (dot == 0) return std::nullopt;
  if (dot != std::string::npos && (dot + 1 == text.size() || text.size() - dot - 1 > 2)) return std::nullopt;
  double value = std::stod(text);
  if (value > 1e9) return std::nullopt;
  return value;
}

double roundHours(double hours) { return std::round(hours * 1000.0) / 1000.0; }

}  // namespace vto::crd
