#pragma once
// A tenancy rule's monthly budget (API.md "Cost and budgets"), decided before a job is created:
// month-to-date spend + what the rule's running jobs cost in the next hour + the new job's hourly
// price x min(timeout, 24h) must fit. Pure: the spend and prices are inputs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "crd/tenancy.h"

namespace vto::crd {

// "2026-12": the calendar month (UTC) a budget counts.
std::string budgetMonth(Clock::time_point t);

// A job's contribution to a month's spend: its estimate and when it was created.
struct JobSpend {
  Clock::time_point createTime{};
  double usd = 0;
};
// The spend of the jobs created in `month` (a job created last month counts in last month's).
double spendIn(const std::vector<JobSpend>& jobs, const std::string& month);

struct BudgetInput {
  std::string rule;  // the rule's name
  Budget budget;
  std::string month;
  double spentUsd = 0;          // month-to-date
  double runningHourlyUsd = 0;  // the rule's running jobs, per hour
  // The new job's price per hour; nullopt: a price is missing (`missingPrice` says which).
  std::optional<double> hourlyUsd;
  std::string missingPrice;
  std::optional<int64_t> timeoutSeconds;  // spec.scheduling.timeout; absent: Vertex's 7 days, capped at 24 h here
};

struct BudgetDecision {
  bool create = true;  // false: Hold (the run waits, phase Queued, reason BudgetExceeded)
  bool warn = false;   // create, with a Warning Event (Warn), or the Hold's message
  double neededUsd = 0;  // spent + next hour of the running jobs + this job's horizon
  std::string message;   // "team-a spent $4,980.12 of $5,000 in 2026-12; this run needs ~$98.40/h ..."
};

BudgetDecision decideBudget(const BudgetInput& input);

}  // namespace vto::crd
