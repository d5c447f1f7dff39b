// status.cost and status.attempts[].costUsd (API.md "Cost and budgets"): what the run's attempts cost
// at list prices, from the job times this pass already observed (no Vertex call of its own).
//
// The figures move with time while a job runs, yet a pass that sees nothing new must write nothing
// (`make bench`: 0 writes in the steady state). So the stored figures stand unless the pass writes
// status anyway; then they are recomputed up to now, and hourlyUsd lets a reader derive the live figure.
#include <stdexcept>

#include "crd/placement.h"
#include "governance/cost.h"
#include "reconcilers/trainingrun/draft.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers::trainingrun {
namespace {

using controller::warningEvent;
using crd::Phase;

constexpr const char* kCostLimitMessage = "cancelled by vto: the estimated cost reached spec.maxCostUsd";

// The current attempt's job as this pass read it, when it is that attempt's.
const CachedJob* jobOf(const Draft& d, const crd::Attempt& attempt) {
  const auto& job = d.o.vertex.job;
  if (!job || attempt.jobName.empty() || job->name != attempt.jobName) return nullptr;
  return &*job;
}

// One attempt's job priced by the cost model: its shape from the placement it was created on, its
// times from the job this pass read (each trial's), else from the attempt.
governance::JobPricing costOf(const Draft& d, const crd::Attempt& attempt, const governance::PriceCatalog& prices) {
  crd::TrainingRun placed;
  placed.metadata = d.run.metadata;
  governance::JobShape shape;
  try {
    placed.spec = crd::specAt(d.run.spec, static_cast<size_t>(attempt.placement.value_or(0)));
    auto location = !attempt.jobName.empty() ? vertex::locationOf(attempt.jobName).location
                                             : crd::locationOf(placed.spec, d.o.defaults).location;
    shape = governance::shapeOfRun(placed, location);
  } catch (const std::exception& e) {
    return {std::nullopt, std::string("the placement's price (") + e.what() + ")"};
  }
  const CachedJob* job = jobOf(d, attempt);
  governance::JobTimes times = job ? timesOf(*job) : governance::JobTimes{};
  times.start = attempt.startTime;
  times.end = attempt.endTime;
  times.finished = times.finished || attempt.endTime.has_value();
  return governance::priceJob(prices, shape, times, d.now());
}

const governance::PriceCatalog& pricesOf(const Draft& d) { return d.o.prices ? *d.o.prices : governance::PriceCatalog::builtIn(); }

// The figures of every attempt up to now, the current one's hourly price: nullopt when one is unpriced.
struct LiveCost {
  Usd spent;
  Usd hourly;
};
std::optional<LiveCost> liveCost(const Draft& d) {
  LiveCost out;
  const auto& attempts = d.next.history.attempts;
  for (size_t i = 0; i < attempts.size(); ++i) {
    bool current = i + 1 == attempts.size();
    if (!current && attempts[i].costUsd) {
      out.spent += *attempts[i].costUsd;
      continue;
    }
    auto cost = costOf(d, attempts[i], pricesOf(d)).cost;
    if (!cost) return std::nullopt;
    out.spent += cost->spent;
    if (current) out.hourly = cost->hourly;
  }
  return out;
}

std::optional<Usd> limitOf(const crd::TrainingRun& run) { return Usd::parse(run.spec.maxCostUsd); }
std::optional<Usd> estimateOf(const crd::TrainingRunStatus& status) {
  return status.cost ? std::optional<Usd>(status.cost->estimatedUsd) : std::nullopt;
}

}  // namespace

CostLimitStep costLimitStep(const Draft& d, const CachedJob& job) {
  if (d.next.history.attempts.empty()) return CostLimitStep::None;
  auto limit = limitOf(d.run);
  // As stored: applyJobState may have replaced the attempt's message with Vertex's.
  const auto& stored = d.o.status.history.attempts;
  bool cancelledForCost = !stored.empty() && stored.back().attempt == d.next.history.attempts.back().attempt &&
                          stored.back().message == kCostLimitMessage;
  if (cancelledForCost && vertex::isTerminal(job.state)) {
    auto spent = estimateOf(d.o.status);
    // A raised (or removed) limit resumes the run from its last checkpoint.
    if (!limit || (spent && *spent < *limit)) return CostLimitStep::Resume;
    return CostLimitStep::Failed;
  }
  if (cancelledForCost) return CostLimitStep::Cancel;  // Vertex is still cancelling it
  if (!limit || vertex::isTerminal(job.state) || !job.startTime) return CostLimitStep::None;
  auto live = liveCost(d);
  if (!live || live->spent < *limit) return CostLimitStep::None;
  return CostLimitStep::Cancel;
}

Plan cancelAtCostLimit(Draft& d, const CachedJob& job) {
  auto limit = limitOf(d.run).value_or(Usd()).display();
  const auto& stored = d.o.status.history.attempts;
  if (stored.empty() || stored.back().message != kCostLimitMessage) {
    d.plan.cancelJob = job.name;
    d.plan.events.push_back(warningEvent("CostLimitReached", "the estimated cost reached spec.maxCostUsd " + limit +
                                                                 ": cancelling " + job.name));
  }
  d.current().message = kCostLimitMessage;
  d.phase(Phase::Cancelling, "cost limit " + limit + " reached: waiting for " + job.name + " to be cancelled",
          Told::ByOwnEvent);
  d.plan.requeueAfter = d.options.cancelPollPeriod;
  return finish(d);
}

Plan failedAtCostLimit(Draft& d) {
  auto limit = limitOf(d.run).value_or(Usd()).display();
  d.current().message = kCostLimitMessage;
  d.phase(Phase::Failed, "the estimated cost reached spec.maxCostUsd " + limit +
                             "; the last checkpoint is kept: raise maxCostUsd to resume from it");
  if (!d.next.completionTime) d.next.completionTime = d.current().endTime ? *d.current().endTime : d.now();
  d.condition(ConditionType::Succeeded, false, Reason::NotFinished);
  d.condition(ConditionType::Failed, true, Reason::CostLimitReached, d.next.message);
  d.condition(ConditionType::Running, false, Reason::CostLimitReached, d.next.message);
  return finished(d);
}

bool resumableAtCostLimit(const Observed& o) {
  if (!o.run || o.status.phase != Phase::Failed || o.status.history.attempts.empty() ||
      o.status.history.attempts.back().message != kCostLimitMessage)
    return false;
  auto limit = limitOf(*o.run);
  auto spent = estimateOf(o.status);
  return !limit || (spent && *spent < *limit);
}

void costLimitWake(Draft& d) {
  auto limit = limitOf(d.run);
  const auto& job = d.o.vertex.job;
  if (!limit || !job || vertex::isTerminal(job->state) || !job->startTime || d.next.history.attempts.empty()) return;
  auto live = liveCost(d);
  if (!live) return;
  // The pass when the estimate reaches the limit, to the second; no write until then.
  auto left = live->hourly.timeToSpend(*limit - live->spent);
  if (!left) return;
  Clock::duration wake = std::min<Clock::duration>(*left, std::chrono::hours(24 * 366)) + std::chrono::seconds(1);
  if (d.plan.requeueAfter == Clock::duration::zero() || wake < d.plan.requeueAfter) d.plan.requeueAfter = wake;
}

std::string costNote(const Draft& d) {
  const auto& cost = d.next.cost ? d.next.cost : d.o.status.cost;
  if (!cost) return "";
  return "; cost " + cost->estimatedUsd.display() + " at list prices";
}

void costView(Draft& d) {
  if (!d.plan.failure && !d.plan.deleteRun && !d.plan.cancelJob) costLimitWake(d);
  d.next.cost = d.o.status.cost;
  d.keepCondition(ConditionType::CostEstimated);
  sortConditions(d.next.conditions);  // kept at the end; stored in rank order
  if (d.o.statusStored && d.next == d.o.status) return;  // nothing else changed: no write for cost alone
  // The job was not seen this pass (Vertex unreadable, the run settled): its last view stands, cost too.
  if (!d.o.vertex.job && d.o.status.cost && d.next.history.attempts.size() == d.o.status.history.attempts.size()) return;

  auto& attempts = d.next.history.attempts;
  if (attempts.empty()) {
    d.next.cost.reset();
    return;
  }
  const auto& prices = pricesOf(d);
  crd::RunCost cost;
  std::optional<Usd> hourly;
  std::string missing;
  for (size_t i = 0; i < attempts.size(); ++i) {
    auto& attempt = attempts[i];
    bool current = i + 1 == attempts.size();
    // An earlier attempt's figure was computed when its end was written; it no longer moves.
    if (!current && attempt.costUsd) {
      cost.estimatedUsd += *attempt.costUsd;
      cost.acceleratorHours += attempt.acceleratorHours;
      cost.replicaHours += attempt.replicaHours;
      continue;
    }
    auto priced = costOf(d, attempt, prices);
    if (!priced.cost) {
      attempt.costUsd.reset();
      attempt.acceleratorHours = attempt.replicaHours = 0;
      if (missing.empty()) missing = priced.missing;
      continue;
    }
    attempt.costUsd = priced.cost->spent;
    attempt.acceleratorHours = governance::roundHours(priced.cost->acceleratorHours);
    attempt.replicaHours = governance::roundHours(priced.cost->replicaHours);
    cost.estimatedUsd += priced.cost->spent;
    cost.acceleratorHours += priced.cost->acceleratorHours;
    cost.replicaHours += priced.cost->replicaHours;
    bool running = attempt.startTime && !attempt.endTime;
    if (current && running) hourly = priced.cost->hourly.roundedToCents();
  }
  if (!missing.empty()) {
    d.next.cost.reset();
    d.condition(ConditionType::CostEstimated, false, Reason::PriceMissing,
                "no cost estimate: the price table lacks " + missing + "; add it with --price-catalog");
    sortConditions(d.next.conditions);
    return;
  }
  cost.acceleratorHours = governance::roundHours(cost.acceleratorHours);
  cost.replicaHours = governance::roundHours(cost.replicaHours);
  cost.hourlyUsd = hourly;
  cost.priceCatalog = prices.id();
  cost.updateTime = d.now();
  d.next.cost = cost;
  d.condition(ConditionType::CostEstimated, true, Reason::Priced, "at list prices of price table " + prices.id());
  sortConditions(d.next.conditions);
}

}  // namespace vto::reconcilers::trainingrun
