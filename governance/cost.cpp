#include "governance/cost.h"

#include <algorithm>
#include <cmath>

#include "crd/duration.h"
#include "crd/machine_catalog.h"
#include "crd/raw_pool.h"
#include "crd/render.h"

namespace vto::governance {
// What this file reads of the API.
using crd::MachineCatalog;
using crd::RawPool;
using crd::SchedulingStrategy;
using crd::TrainingRun;
using crd::parseDurationSeconds;
using crd::readRawPool;
using crd::renderJob;
using crd::replicaUseOf;

namespace {

using Hours = std::chrono::duration<double, std::ratio<3600>>;

// A count Vertex writes as a number (or, for int64, a digit string); `fallback` for anything else.
int64_t countOf(const nlohmann::json& job, const char* field, int64_t fallback) {
  auto found = job.find(field);
  if (found == job.end()) return fallback;
  if (found->is_number_integer()) return found->get<int64_t>();
  if (found->is_string()) {
    const auto& text = found->get_ref<const std::string&>();
    if (!text.empty() && text.size() < 10 && text.find_first_not_of("0123456789") == std::string::npos) return std::stoll(text);
  }
  return fallback;
}

SchedulingStrategy strategyOf(const nlohmann::json& scheduling) {
  if (!scheduling.is_object()) return SchedulingStrategy::Standard;
  auto strategy = scheduling.value("strategy", nlohmann::json(""));
  if (strategy == "SPOT") return SchedulingStrategy::Spot;
  if (strategy == "FLEX_START") return SchedulingStrategy::FlexStart;
  return SchedulingStrategy::Standard;
}

// scheduling.timeout as Vertex writes it ("3600s"); Vertex's default when absent or unreadable (a
// fraction of a second: the default is the longer, so the worst case is never under-counted).
std::chrono::seconds timeoutOf(const nlohmann::json& scheduling) {
  if (!scheduling.is_object()) return kVertexDefaultTimeout;
  auto timeout = scheduling.find("timeout");
  if (timeout == scheduling.end() || !timeout->is_string()) return kVertexDefaultTimeout;
  auto seconds = parseDurationSeconds(timeout->get<std::string>());
  if (!seconds || *seconds <= 0) return kVertexDefaultTimeout;
  return std::chrono::seconds(*seconds);
}

// What one trial holds at once: accelerators and machines (hours accrue at this rate).
struct Held {
  double accelerators = 0, replicas = 0;
};

}  // namespace

std::vector<PoolUse> poolsOfWorkerPools(const nlohmann::json& workerPoolSpecs) {
  std::vector<PoolUse> out;
  if (!workerPoolSpecs.is_array()) return out;
  for (const auto& pool : workerPoolSpecs) {
    if (!pool.is_object() || pool.empty()) continue;
    RawPool raw = readRawPool(pool);
    if (raw.machineType.empty() || raw.replicaCount <= 0) continue;
    auto use = replicaUseOf(raw.machineType, raw.acceleratorType.empty() ? 0 : raw.acceleratorCount, raw.tpuTopology);
    std::string type = raw.acceleratorType;
    if (type.empty() && use.accelerators > 0) {
      // A machine that carries its accelerators by itself: the type it carries, if known.
      auto builtIn = MachineCatalog::builtIn().builtInAccelerators(raw.machineType);
      type = builtIn ? builtIn->acceleratorType : "";
    }
    if (type.empty()) use.accelerators = 0;
    out.push_back(PoolUse{raw.machineType, type, use.accelerators, use.hosts, raw.replicaCount});
  }
  return out;
}

JobShape shapeOfJob(const nlohmann::json& job, const std::string& location) {
  JobShape shape;
  shape.location = location;
  if (!job.is_object()) return shape;
  const nlohmann::json* spec = nullptr;
  if (auto trial = job.find("trialJobSpec"); trial != job.end() && trial->is_object()) {
    spec = &*trial;
    shape.tuning = true;
    shape.maxTrials = std::max<int64_t>(1, countOf(job, "maxTrialCount", 1));
    shape.parallelTrials = std::max<int64_t>(1, countOf(job, "parallelTrialCount", 1));
  } else if (auto custom = job.find("jobSpec"); custom != job.end() && custom->is_object()) {
    spec = &*custom;
  }
  if (spec == nullptr) return shape;
  shape.pools = poolsOfWorkerPools(spec->value("workerPoolSpecs", nlohmann::json::array()));
  auto scheduling = spec->value("scheduling", nlohmann::json());
  shape.strategy = strategyOf(scheduling);
  shape.timeout = timeoutOf(scheduling);
  return shape;
}

JobShape shapeOfRun(const TrainingRun& run, const std::string& location) {
  // The rendered job is what Vertex runs, whichever form the spec used: the run is priced from the
  // same resource Vertex will list, so status and the budget ledger read one shape.
  return shapeOfJob(renderJob(run, 1, ""), location);
}

std::optional<Usd> hourlyPriceOf(const PriceCatalog& prices, const JobShape& shape, std::string* missing) {
  auto lacking = [&](const std::string& what) -> std::optional<Usd> {
    if (missing != nullptr)
      *missing = std::string("the ") + priceKeyOf(shape.strategy) + " price of " + what + " in " + shape.location +
                 " (price table " + prices.id() + ")";
    return std::nullopt;
  };
  Usd rate;
  for (const auto& pool : shape.pools) {
    auto machine = prices.machine(shape.location, pool.machineType, shape.strategy);
    if (!machine) return lacking(pool.machineType);
    Usd perReplica = *machine * pool.hosts;
    if (pool.acceleratorCount > 0) {
      auto accelerator = prices.accelerator(shape.location, pool.acceleratorType, shape.strategy);
      if (!accelerator) return lacking(pool.acceleratorType);
      perReplica += *accelerator * pool.acceleratorCount;
    }
    rate += perReplica * pool.replicas;
  }
  return rate;
}

JobPricing priceJob(const PriceCatalog& prices, const JobShape& shape, const JobTimes& times, Clock::time_point now) {
  JobPricing out;
  auto rate = hourlyPriceOf(prices, shape, &out.missing);
  if (!rate) return out;
  Held held;
  for (const auto& pool : shape.pools) {
    held.accelerators += static_cast<double>(pool.acceleratorCount) * static_cast<double>(pool.replicas);
    held.replicas += static_cast<double>(pool.hosts) * static_cast<double>(pool.replicas);
  }
  JobCost cost;
  Usd spent;
  double hours = 0;
  auto add = [&](Clock::duration running, int64_t trials) {
    if (running <= Clock::duration::zero()) return;
    spent += rate->forDuration(running) * trials;
    hours += Hours(running).count() * static_cast<double>(trials);
  };
  auto untilTimeout = [&](Clock::duration elapsed) {
    return rate->forDuration(std::max<Clock::duration>(Clock::duration::zero(), shape.timeout - elapsed));
  };
  if (!times.trials.empty()) {
    // A tuning job: each trial from its own start to its own end (or the job's, or now).
    int64_t running = 0;
    for (const auto& trial : times.trials) {
      add((trial.end ? *trial.end : times.end ? *times.end : now) - trial.start, 1);
      if (!trial.end && !times.finished) {
        ++running;
        cost.worstRemaining += untilTimeout(now - trial.start);
      }
    }
    cost.hourly = *rate * running;
    if (!times.finished) {
      // Between trials a tuning job starts the next ones: each trial not started yet, for all its timeout.
      int64_t notStarted = std::max<int64_t>(0, shape.maxTrials - static_cast<int64_t>(times.trials.size()));
      cost.worstRemaining += untilTimeout(Clock::duration::zero()) * notStarted;
    }
  } else {
    // Without trial times (a custom job, a tuning job before its first trial, or an attempt no longer
    // read): the job's own span, for a tuning job every parallel trial for all of it, an upper bound.
    int64_t trials = shape.tuning ? shape.parallelTrials : 1;
    if (times.start) add((times.end ? *times.end : now) - *times.start, trials);
    if (times.start && !times.finished) cost.hourly = *rate * trials;
    if (!times.finished) {
      cost.worstRemaining = shape.tuning ? untilTimeout(Clock::duration::zero()) * shape.maxTrials
                                         : untilTimeout(times.start ? now - *times.start : Clock::duration::zero());
    }
  }
  cost.spent = spent.roundedToCents();
  cost.acceleratorHours = held.accelerators * hours;
  cost.replicaHours = held.replicas * hours;
  out.cost = cost;
  out.missing.clear();
  return out;
}

double roundHours(double hours) { return std::round(hours * 1000.0) / 1000.0; }

}  // namespace vto::governance
