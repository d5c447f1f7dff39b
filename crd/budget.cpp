#include "crd/budget.h"

#include <algorithm>

#include "crd/cost.h"
#include <date/date.h>

namespace vto::crd {

std::string budgetMonth(Clock::time_point t) {
  auto day = date::year_month_day(date::floor<date::days>(t));
  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u", static_cast<int>(day.year()), static_cast<unsigned>(day.month()));
  return text;
}

double spendIn(const std::vector<JobSpend>& jobs, const std::string& month) {
  double total = 0;
  for (const auto& job : jobs)
    if (budgetMonth(job.createTime) == month) total += job.usd;
  return total;
}

BudgetDecision decideBudget(const BudgetInput& in) {
  BudgetDecision out;
  bool warn = in.budget.onExceeded == BudgetAction::Warn;
  std::string spent = in.rule + " spent " + formatDollars(in.spentUsd) + " of " + formatDollars(in.budget.monthlyUsd) +
                      " in " + in.month;
  if (!in.hourlyUsd) {
    // Nothing to add up: a budget is never checked against a guess.
    out.create = warn;
    out.warn = true;
    out.message = spent + "; this run cannot be priced (no " + in.missingPrice + ")" +
                  (warn ? ": created without a budget check" : ": it waits until the price table prices it");
    return out;
  }
  constexpr int64_t kDay = 24 * 3600;
  int64_t horizon = std::min<int64_t>(in.timeoutSeconds.value_or(7 * kDay), kDay);
  double hours = static_cast<double>(horizon) / 3600.0;
  out.neededUsd = in.spentUsd + in.runningHourlyUsd + *in.hourlyUsd * hours;
  // Cents: a run that exactly reaches the budget fits.
  if (std::llround(out.neededUsd * 100) <= std::llround(in.budget.monthlyUsd * 100)) return out;
  out.warn = true;
  out.create = warn;
  char horizonText[32];
  std::snprintf(horizonText, sizeof horizonText, "%g h", hours);
  out.message = spent + "; this run needs ~" + formatDollars(*in.hourlyUsd) + "/h for up to " + horizonText +
                (in.runningHourlyUsd > 0 ? ", running jobs ~" + formatDollars(in.runningHourlyUsd) + "/h" : "") +
                ": " + formatDollars(out.neededUsd) + " > " + formatDollars(in.budget.monthlyUsd) +
                (warn ? " (onExceeded: Warn: created anyway)"
                      : "; it starts by itself when the budget allows (next month, or a raised budget)");
  return out;
}

}  // namespace vto::crd
