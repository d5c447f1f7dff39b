#pragma once
// The cost model: what one Vertex job costs, has cost and may still cost, from what it runs (its
// worker pools, strategy, location, trials, timeout: JobShape) and the times Vertex reported
// (JobTimes). Pure: no clock, no I/O. priceJob is the one computation of a job's money: status.cost
// (reconcilers/trainingrun/cost.cpp, from the run's spec and the job it read), the budget ledger
// (reconcilers/tenancy/budget_ledger.cpp, from the job Vertex lists), the budget check (a new job:
// no times yet) and, through status, `vto cost` and the metrics all call it; they differ only in
// where they read the shape and times from (shapeOfRun / shapeOfJob).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/money.h"
#include "crd/training_run.h"
#include "governance/price_catalog.h"

namespace vto::governance {

// How long Vertex lets a job (a tuning job: each trial) run when its scheduling.timeout is unset.
inline constexpr std::chrono::seconds kVertexDefaultTimeout{7 * 24 * 3600};

// One worker pool as it runs: `replicas` x (`hosts` machines holding `acceleratorCount` x
// `acceleratorType` between them; crd::replicaUseOf says how many of each).
struct PoolUse {
  std::string machineType;
  std::string acceleratorType;  // "" for none
  int64_t acceleratorCount = 0;  // per replica (a TPU slice: all its chips)
  int64_t hosts = 1;             // machines per replica (a multi-host TPU slice: more than one)
  int64_t replicas = 0;
  bool operator==(const PoolUse&) const = default;
};

// The pools of a Vertex workerPoolSpecs list (vto's rendering or Vertex's answer). Empty pools (a
// skipped middle pool) are left out.
std::vector<PoolUse> poolsOfWorkerPools(const nlohmann::json& workerPoolSpecs);

// What one job runs: per trial for a tuning job.
struct JobShape {
  std::vector<PoolUse> pools;
  std::string location;
  crd::SchedulingStrategy strategy = crd::SchedulingStrategy::Standard;
  bool tuning = false;
  int64_t maxTrials = 1;       // a tuning job's maxTrialCount; 1 for a custom job
  int64_t parallelTrials = 1;  // trials at once (1 for a custom job)
  std::chrono::seconds timeout = kVertexDefaultTimeout;  // per job (a tuning job: per trial)
};

// The job `run` renders to at `location` (run.spec: the placement's, with crd::specAt applied).
// Throws what rendering throws (a spec validation refuses).
JobShape shapeOfRun(const crd::TrainingRun& run, const std::string& location);
// The same from a Vertex job resource (CustomJob or HyperparameterTuningJob) at `location`.
JobShape shapeOfJob(const nlohmann::json& job, const std::string& location);

// What Vertex reported of a job's times.
struct JobTimes {
  std::optional<Clock::time_point> start, end;
  bool finished = false;  // terminal: nothing more to spend
  struct Trial {
    Clock::time_point start;
    std::optional<Clock::time_point> end;
    bool operator==(const Trial&) const = default;
  };
  std::vector<Trial> trials;  // the trials that started (a tuning job)
};

// One job's money at one moment.
struct JobCost {
  Usd spent;           // from its start (each trial's) to its end or now, rounded to the cent
  Usd hourly;          // what it spends per hour now: its running trials (a custom job: 1 while it runs)
  Usd worstRemaining;  // the most it may still spend: each unfinished trial (and every trial not yet
                       // started) until its timeout; 0 once finished
  double acceleratorHours = 0, replicaHours = 0;
  Usd worstTotal() const { return spent + worstRemaining; }
};

struct JobPricing {
  std::optional<JobCost> cost;  // nullopt: a price is missing
  std::string missing;          // then which one: "the spot price of NVIDIA_TESLA_A100 in us-east4 ..."
};

// A job of `shape` that Vertex reported `times` for, at `now`. A new job (no times) costs nothing
// yet and may still spend its whole worst case: maxTrials x its hourly price x its timeout.
JobPricing priceJob(const PriceCatalog& prices, const JobShape& shape, const JobTimes& times, Clock::time_point now);

// What one trial (a custom job: the job) costs per hour; nullopt with `missing` set when the table
// lacks a price.
std::optional<Usd> hourlyPriceOf(const PriceCatalog& prices, const JobShape& shape, std::string* missing = nullptr);

// Hours rounded to 3 decimals (status.cost.acceleratorHours / replicaHours), so a status that
// nothing new changed compares equal.
double roundHours(double hours);

}  // namespace vto::governance
