// status.cost and status.attempts[].costUsd (API.md "Cost and budgets"): what the run's attempts cost
// at list prices, from the job times this pass already observed (no Vertex call of its own).
//
// The figures move with time while a job runs, yet a pass that sees nothing new must write nothing
// (`make bench`: 0 writes in the steady state). So the stored figures stand unless the pass writes
// status anyway; then they are recomputed up to now, and hourlyUsd lets a reader derive the live figure.
#include <stdexcept>

#include "crd/cost.h"
#include "crd/placement.h"
#include "reconcilers/trainingrun/draft.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers::trainingrun {
namespace {

using controller::warningEvent;
using crd::Phase;
using crd::Usage;

struct AttemptCost {
  std::optional<Usage> usage;      // nullopt: a price is missing
  std::string missing;             // which
  std::optional<double> hourlyUsd;  // while its job runs
};

constexpr const char* kCostLimitMessage = "cancelled by vto: the estimated cost reached spec.maxCostUsd";

// The current attempt's job as this pass read it, when it is that attempt's.
const CachedJob* jobOf(const Draft& d, const crd::Attempt& attempt) {
  const auto& job = d.o.vertex.job;
  if (!job || attempt.jobName.empty() || job->name != attempt.jobName) return nullptr;
  return &*job;
}

AttemptCost costOf(const Draft& d, const crd::Attempt& attempt, const crd::PriceCatalog& prices) {
  AttemptCost out;
  crd::TrainingRun placed;
  placed.metadata = d.run.metadata;
  std::string location;
  try {
    placed.spec = crd::specAt(d.run.spec, static_cast<size_t>(attempt.placement.value_or(0)));
    location = !attempt.jobName.empty() ? vertex::locationOf(attempt.jobName).location
                                        : crd::locationOf(placed.spec, d.o.defaults).location;
  } catch (const std::exception& e) {
    out.missing = std::string("the placement's price (") + e.what() + ")";
    return out;
  }
  auto pricing = crd::priceOf(prices, crd::poolsOf(placed), location, placed.spec.scheduling.strategy);
  if (!pricing.rate) {
    out.missing = pricing.missing;
    return out;
  }
  const auto& rate = *pricing.rate;
  Usage usage;
  auto now = d.now();
  bool running = attempt.startTime && !attempt.endTime;
  const CachedJob* job = jobOf(d, attempt);
  if (job && !job->trialSpans.empty()) {
    // A tuning job: each trial from its own start to its own end (or the job's, or now).
    int runningTrials = 0;
    for (const auto& [start, end] : job->trialSpans) {
      auto until = end ? *end : attempt.endTime ? *attempt.endTime : now;
      usage += crd::usageOf(rate, until - start);
      if (!end && running) ++runningTrials;
    }
    if (running) out.hourlyUsd = rate.usd * runningTrials;
  } else if (attempt.startTime) {
    // Without trial times (a custom job, or a tuning attempt no longer read), the job's own span:
    // for tuning, every parallel trial for all of it, an upper bound.
    double jobs = d.run.spec.hyperparameterTuning ? std::max(1, d.run.spec.hyperparameterTuning->parallelTrialCount) : 1;
    auto until = attempt.endTime ? *attempt.endTime : now;
    auto one = crd::usageOf(rate, until - *attempt.startTime);
    usage = Usage{one.usd * jobs, one.acceleratorHours * jobs, one.replicaHours * jobs};
    if (running) out.hourlyUsd = rate.usd * jobs;
  }
  out.usage = usage;
  return out;
}

const crd::PriceCatalog& pricesOf(const Draft& d) { return d.o.prices ? *d.o.prices : crd::PriceCatalog::builtIn(); }

// The figures of every attempt up to now, the current one's hourly price: nullopt when one is unpriced.
struct LiveCost {
  double usd = 0;
  std::optional<double> hourlyUsd;
};
std::optional<LiveCost> liveCost(const Draft& d) {
  LiveCost out;
  const auto& attempts = d.next.history.attempts;
  for (size_t i = 0; i < attempts.size(); ++i) {
    bool current = i + 1 == attempts.size();
    if (!current && attempts[i].costUsd) {
      out.usd += crd::parseUsd(*attempts[i].costUsd).value_or(0);
      continue;
    }
    auto cost = costOf(d, attempts[i], pricesOf(d));
    if (!cost.usage) return std::nullopt;
    out.usd += cost.usage->usd;
    if (current) out.hourlyUsd = cost.hourlyUsd;
  }
  return out;
}

}  // namespace

CostLimitStep costLimitStep(const Draft& d, const CachedJob& job) {
  if (d.next.history.attempts.empty()) return CostLimitStep::None;
  auto limit = crd::parseUsd(d.run.spec.maxCostUsd);
  // As stored: applyJobState may have replaced the attempt's message with Vertex's.
  const auto& stored = d.o.status.history.attempts;
  bool cancelledForCost = !stored.empty() && stored.back().attempt == d.next.history.attempts.back().attempt &&
                          stored.back().message == kCostLimitMessage;
  if (cancelledForCost && vertex::isTerminal(job.state)) {
    auto spent = d.o.status.cost ? crd::parseUsd(d.o.status.cost->estimatedUsd) : std::nullopt;
    // A raised (or removed) limit resumes the run from its last checkpoint.
    if (!limit || (spent && *spent < *limit)) return CostLimitStep::Resume;
    return CostLimitStep::Failed;
  }
  if (cancelledForCost) return CostLimitStep::Cancel;  // Vertex is still cancelling it
  if (!limit || vertex::isTerminal(job.state) || !job.startTime) return CostLimitStep::None;
  auto live = liveCost(d);
  if (!live || live->usd < *limit) return CostLimitStep::None;
  return CostLimitStep::Cancel;
}

Plan cancelAtCostLimit(Draft& d, const CachedJob& job) {
  auto limit = crd::formatDollars(crd::parseUsd(d.run.spec.maxCostUsd).value_or(0));
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
  auto limit = crd::formatDollars(crd::parseUsd(d.run.spec.maxCostUsd).value_or(0));
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
  auto limit = crd::parseUsd(o.run->spec.maxCostUsd);
  auto spent = o.status.cost ? crd::parseUsd(o.status.cost->estimatedUsd) : std::nullopt;
  return !limit || (spent && *spent < *limit);
}

void costLimitWake(Draft& d) {
  auto limit = crd::parseUsd(d.run.spec.maxCostUsd);
  const auto& job = d.o.vertex.job;
  if (!limit || !job || vertex::isTerminal(job->state) || !job->startTime || d.next.history.attempts.empty()) return;
  auto live = liveCost(d);
  if (!live || !live->hourlyUsd || *live->hourlyUsd <= 0) return;
  // The pass when the estimate reaches the limit, to the second; no write until then.
  auto hoursLeft = std::max(0.0, (*limit - live->usd) / *live->hourlyUsd);
  Clock::duration wake = std::chrono::round<std::chrono::seconds>(std::chrono::duration<double>(hoursLeft * 3600)) +
                         std::chrono::seconds(1);
  if (d.plan.requeueAfter == Clock::duration::zero() || wake < d.plan.requeueAfter) d.plan.requeueAfter = wake;
}

std::string costNote(const Draft& d) {
  const auto& cost = d.next.cost ? d.next.cost : d.o.status.cost;
  if (!cost) return "";
  return "; cost " + crd::formatDollars(crd::parseUsd(cost->estimatedUsd).value_or(0)) + " at list prices";
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
  Usage total;
  std::optional<double> hourly;
  std::string missing;
  for (size_t i = 0; i < attempts.size(); ++i) {
    auto& attempt = attempts[i];
    bool current = i + 1 == attempts.size();
    // An earlier attempt's figure was computed when its end was written; it no longer moves.
    if (!current && attempt.costUsd) {
      total += Usage{crd::parseUsd(*attempt.costUsd).value_or(0), attempt.acceleratorHours, attempt.replicaHours};
      continue;
    }
    auto cost = costOf(d, attempt, prices);
    if (!cost.usage) {
      attempt.costUsd.reset();
      attempt.acceleratorHours = attempt.replicaHours = 0;
      if (missing.empty()) missing = cost.missing;
      continue;
    }
    attempt.costUsd = crd::formatUsd(cost.usage->usd);
    attempt.acceleratorHours = crd::roundHours(cost.usage->acceleratorHours);
    attempt.replicaHours = crd::roundHours(cost.usage->replicaHours);
    total += *cost.usage;
    if (current && cost.hourlyUsd) hourly = cost.hourlyUsd;
  }
  if (!missing.empty()) {
    d.next.cost.reset();
    d.condition(ConditionType::CostEstimated, false, Reason::PriceMissing,
                "no cost estimate: the price table lacks " + missing + "; add it with --price-catalog");
    sortConditions(d.next.conditions);
    return;
  }
  crd::RunCost cost;
  cost.estimatedUsd = crd::formatUsd(total.usd);
  cost.acceleratorHours = crd::roundHours(total.acceleratorHours);
  cost.replicaHours = crd::roundHours(total.replicaHours);
  if (hourly) cost.hourlyUsd = crd::formatUsd(*hourly);
  cost.priceCatalog = prices.id();
  cost.updateTime = d.now();
  d.next.cost = cost;
  d.condition(ConditionType::CostEstimated, true, Reason::Priced, "at list prices of price table " + prices.id());
  sortConditions(d.next.conditions);
}

}  // namespace vto::reconcilers::trainingrun
