// The tenancy budget gate (API.md "Cost and budgets"): before any job is created (first attempt,
// resume, failover), the governing rule's month-to-date spend, what its unfinished jobs may still
// spend until their timeouts and this job's whole cost to its timeout must fit its monthlyUsd
// (governance::decideBudget). Hold: the run waits (Queued, Ready=False BudgetExceeded, one Event) and looks
// again; the job it creates once admitted carries the reservation's timeout. Warn: the job is created
// with a Warning Event. Running jobs are never cancelled by a budget. The spend is observed (BudgetLedger).
#include <exception>

#include "governance/budget.h"
#include "reconcilers/trainingrun/draft.h"

namespace vto::reconcilers::trainingrun {

using controller::warningEvent;
using crd::Phase;

std::string teamOf(const Observed& o) {
  if (o.tenancy.rules == nullptr || o.tenancy.rules->empty() || !o.run) return "";
  auto tenancy = tenancyOf(o);
  if (!tenancy.governingRule) return "";
  return (*o.tenancy.rules)[*tenancy.governingRule].name;
}

std::optional<Plan> budgetGate(Draft& d, const crd::TrainingRun& at, const Location& where) {
  if (d.o.tenancy.rules == nullptr || d.o.tenancy.rules->empty()) return std::nullopt;
  auto tenancy = tenancyOf(d.o);
  if (!tenancy.governingRule) return std::nullopt;
  size_t index = *tenancy.governingRule;
  const auto& rule = (*d.o.tenancy.rules)[index];
  if (!rule.budget) return std::nullopt;
  bool warnOnly = rule.budget->onExceeded == governance::BudgetAction::Warn;

  governance::BudgetInput input;
  input.rule = rule.name;
  input.budget = *rule.budget;
  input.month = governance::budgetMonth(d.o.now);
  const auto& prices = d.o.prices ? *d.o.prices : governance::PriceCatalog::builtIn();
  try {
    // What the run may still spend under its own limit: the limit less what its attempts cost.
    std::optional<Usd> costLimitLeft;
    if (auto limit = Usd::parse(at.spec.maxCostUsd))
      costLimitLeft = *limit - (d.o.status.cost ? d.o.status.cost->estimatedUsd : Usd());
    input.job = governance::reservationFor(prices, governance::shapeOfRun(at, where.location), costLimitLeft, &input.missingPrice);
  } catch (const std::exception& e) {
    input.missingPrice = std::string("price for this placement (") + e.what() + ")";
  }
  // Under Hold the job carries the reservation's timeout, so it cannot outspend what was set aside.
  auto reservation = [&](uint64_t generation, bool unconditionally) {
    return BudgetReservation{index, input.job->usd, warnOnly ? std::nullopt : std::optional(input.job->timeout), generation,
                             unconditionally};
  };

  std::string message;
  bool create = false;
  auto spend = d.o.tenancy.budgets.find(index);
  if (spend == d.o.tenancy.budgets.end() || spend->second.month != input.month) {
    // No reading of this month's spend yet (just after a start): a budget is never checked against nothing.
    create = warnOnly;
    message = rule.name + "'s spend in " + input.month + " has not been read from Vertex AI yet" +
              (warnOnly ? ": created without a budget check" : "; the run starts once it is and the budget allows");
  } else {
    input.spent = spend->second.spent;
    input.committed = spend->second.committed;
    input.unfinishedJobs = spend->second.unfinishedJobs;
    auto decision = governance::decideBudget(input);
    if (!decision.warn) {
      d.plan.budgetReservation = reservation(spend->second.generation, warnOnly);
      return std::nullopt;
    }
    create = decision.create;
    message = decision.message;
  }
  if (create) {
    d.plan.events.push_back(warningEvent("BudgetExceeded", message));
    if (input.job) d.plan.budgetReservation = reservation(spend != d.o.tenancy.budgets.end() ? spend->second.generation : 0, true);
    return std::nullopt;
  }
  if (!conditionIs(d, ConditionType::Ready, "False", Reason::BudgetExceeded)) {
    d.plan.events.push_back(warningEvent("BudgetExceeded", message));
  }
  d.phase(Phase::Queued, message, Told::ByOwnEvent);
  d.condition(ConditionType::Ready, false, Reason::BudgetExceeded, message);
  d.plan.requeueAfter = d.options.budgetRecheckPeriod;
  return finish(d);
}

}  // namespace vto::reconcilers::trainingrun
