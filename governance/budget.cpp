#include "governance/budget.h"

#include <algorithm>

#include <date/date.h>

#include "crd/duration.h"

namespace vto::governance {
// What this file reads of the API.
using crd::formatDuration;


std::string budgetMonth(Clock::time_point t) {
  auto day = date::year_month_day(date::floor<date::days>(t));
  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u", static_cast<int>(day.year()), static_cast<unsigned>(day.month()));
  return text;
}

std::string durationInWords(std::chrono::seconds duration) {
  auto seconds = duration.count();
  auto plural = [](int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  if (seconds > 0 && seconds % 86400 == 0 && seconds >= 2 * 86400) return plural(seconds / 86400, "day", "days");
  if (seconds > 0 && seconds % 3600 == 0) return std::to_string(seconds / 3600) + " h";
  if (seconds > 0 && seconds % 60 == 0 && seconds < 3600) return std::to_string(seconds / 60) + " min";
  return formatDuration(seconds);
}

std::optional<Reservation> reservationFor(const PriceCatalog& prices, const JobShape& shape,
                                          std::optional<Usd> costLimitLeft, std::string* missing) {
  auto hourly = hourlyPriceOf(prices, shape, missing);
  if (!hourly) return std::nullopt;
  Reservation out;
  out.hourly = *hourly;
  out.timeout = shape.timeout;
  out.trials = shape.tuning ? shape.maxTrials : 1;
  auto whole = [&](const JobShape& s) { return priceJob(prices, s, JobTimes{}, Clock::time_point{}).cost->worstRemaining; };
  out.usd = whole(shape);
  if (costLimitLeft && !shape.tuning && *costLimitLeft < out.usd) {
    if (auto toSpend = hourly->timeToSpend(max(*costLimitLeft, Usd()))) {
      using std::chrono::minutes;
      auto cut = std::chrono::ceil<minutes>(*toSpend) + minutes(1);
      if (cut < shape.timeout) {
        JobShape shorter = shape;
        shorter.timeout = cut;
        out.timeout = cut;
        out.usd = whole(shorter);
        out.limitedByMaxCost = true;
      }
    }
  }
  return out;
}

BudgetDecision decideBudget(const BudgetInput& in) {
  BudgetDecision out;
  bool warn = in.budget.onExceeded == BudgetAction::Warn;
  std::string spent = in.rule + " spent " + in.spent.display() + " of " + in.budget.monthlyUsd.display() + " in " + in.month;
  if (!in.job) {
    // Nothing to add up: a budget is never checked against a guess.
    out.create = warn;
    out.warn = true;
    out.message = spent + "; this run cannot be priced (no " + in.missingPrice + ")" +
                  (warn ? ": created without a budget check" : ": it waits until the price table prices it");
    return out;
  }
  const auto& job = *in.job;
  out.needed = in.spent + in.committed + job.usd;
  // A run that exactly reaches the budget fits; a saturated figure never does.
  if (out.needed <= in.budget.monthlyUsd && !out.needed.saturated()) return out;
  out.warn = true;
  out.create = warn;
  std::string others;
  if (in.unfinishedJobs > 0) {
    bool one = in.unfinishedJobs == 1;
    others = "; its " + (one ? std::string("unfinished job") : std::to_string(in.unfinishedJobs) + " unfinished jobs") +
             " may still spend up to " + in.committed.display() + (one ? " before its timeout" : " before their timeouts");
  }
  std::string horizon = durationInWords(job.timeout);
  std::string how = job.trials > 1 ? std::to_string(job.trials) + " trials of up to " + horizon + " at " + job.hourly.display() + "/h"
                                   : (job.limitedByMaxCost ? "spec.maxCostUsd; " : "") + horizon + " at " +
                                         job.hourly.display() + "/h";
  out.message = spent + others + "; this run may cost up to " + job.usd.display() + " (" + how + "): " +
                out.needed.display() + " in all, over " + in.budget.monthlyUsd.display() +
                (warn ? " (onExceeded: Warn: created anyway)"
                      : "; it starts by itself when the budget allows (running jobs end, next month, a raised budget or a "
                        "shorter scheduling.timeout)");
  return out;
}

}  // namespace vto::governance
