// The tenancy budget gate (API.md "Cost and budgets"): before any job is created (first attempt,
// resume, failover), the governing rule's month-to-date spend, its running jobs' next hour and this
// job's price over min(timeout, 24 h) must fit its monthlyUsd. Hold: the run waits (Queued,
// Ready=False BudgetExceeded, one Event) and looks again; Warn: the job is created with a Warning
// Event. Running jobs are never cancelled by a budget. The spend is observed (BudgetLedger).
#include <exception>

#include "crd/budget.h"
#include "crd/cost.h"
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
  bool warnOnly = rule.budget->onExceeded == crd::BudgetAction::Warn;

  crd::BudgetInput input;
  input.rule = rule.name;
  input.budget = *rule.budget;
  input.month = crd::budgetMonth(d.o.now);
  input.timeoutSeconds = at.spec.scheduling.timeoutSeconds;
  const auto& prices = d.o.prices ? *d.o.prices : crd::PriceCatalog::builtIn();
  try {
    auto pricing = crd::priceOf(prices, crd::poolsOf(at), where.location, at.spec.scheduling.strategy);
    if (pricing.rate) {
      double trials = at.spec.hyperparameterTuning ? std::max(1, at.spec.hyperparameterTuning->parallelTrialCount) : 1;
      input.hourlyUsd = pricing.rate->usd * trials;
    } else {
      input.missingPrice = pricing.missing;
    }
  } catch (const std::exception& e) {
    input.missingPrice = std::string("price for this placement (") + e.what() + ")";
  }

  std::string message;
  bool create = false;
  auto spend = d.o.tenancy.budgets.find(index);
  if (spend == d.o.tenancy.budgets.end() || spend->second.month != input.month) {
    // No reading of this month's spend yet (just after a start): a budget is never checked against nothing.
    create = warnOnly;
    message = rule.name + "'s spend in " + input.month + " has not been read from Vertex AI yet" +
              (warnOnly ? ": created without a budget check" : "; the run starts once it is and the budget allows");
  } else {
    input.spentUsd = spend->second.spentUsd;
    input.runningHourlyUsd = spend->second.runningHourlyUsd;
    auto decision = crd::decideBudget(input);
    if (!decision.warn) {
      d.plan.budgetReservation = BudgetReservation{index, decision.neededUsd - input.spentUsd - input.runningHourlyUsd,
                                                   input.hourlyUsd.value_or(0), spend->second.generation, warnOnly};
      return std::nullopt;
    }
    create = decision.create;
    message = decision.message;
  }
  if (create) {
    d.plan.events.push_back(warningEvent("BudgetExceeded", message));
    if (input.hourlyUsd) {
      constexpr double kDayHours = 24;
      double hours = std::min(kDayHours, static_cast<double>(input.timeoutSeconds.value_or(7 * 86400)) / 3600.0);
      auto seen = spend != d.o.tenancy.budgets.end() ? spend->second.generation : 0;
      d.plan.budgetReservation = BudgetReservation{index, *input.hourlyUsd * hours, *input.hourlyUsd, seen, true};
    }
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
