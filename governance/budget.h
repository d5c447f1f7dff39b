#pragma once
// A tenancy rule's monthly budget (API.md "Cost and budgets"), decided before a job is created: what
// the rule's jobs created this month have spent, plus what its unfinished jobs (of any month) may still
// spend until their timeouts, plus the new job's whole cost to its timeout must fit the budget. Pure:
// the spend and the prices are inputs; every amount is Usd, so an absurd figure saturates and
// fails the check closed.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/money.h"
#include "governance/cost.h"
#include "governance/tenancy.h"

namespace vto::governance {

// "2026-12": the calendar month (UTC) a budget counts.
std::string budgetMonth(Clock::time_point t);

// What the check sets aside for a new job: its whole worst case (governance::priceJob with no times yet). A
// job under a Hold budget is created with `timeout` as its scheduling.timeout, so that nothing but the
// reservation's own horizon can let it spend more (Vertex's 7 days rendered when the spec sets none).
struct Reservation {
  Usd usd;                        // the most the job may spend
  Usd hourly;                     // its price per hour (a tuning job: one trial's)
  std::chrono::seconds timeout{};  // per job (a tuning job: per trial)
  int64_t trials = 1;             // a tuning job's maxTrialCount
  bool limitedByMaxCost = false;  // spec.maxCostUsd, not the timeout, bounds it
};
// `costLimitLeft`: what the run may still spend under spec.maxCostUsd (its limit minus what its
// attempts cost), when it has one. Where that is less than a custom job's cost to its timeout, the
// reservation is that much, and the timeout is cut to the time it takes to spend it, rounded up to
// the minute plus one minute (so that the run's own cost limit cancels the job before Vertex's timeout
// does). A tuning job's trials each keep their timeout: its reservation is never cut. nullopt with
// `missing` set when the price table lacks a price.
std::optional<Reservation> reservationFor(const PriceCatalog& prices, const JobShape& shape,
                                          std::optional<Usd> costLimitLeft, std::string* missing);

struct BudgetInput {
  std::string rule;  // the rule's name
  Budget budget;
  std::string month;
  Usd spent;                 // month-to-date: the rule's jobs created this month, up to now
  Usd committed;             // what the rule's unfinished jobs (of any month) may still spend
  int64_t unfinishedJobs = 0;
  std::optional<Reservation> job;  // the new job; nullopt: a price is missing (`missingPrice` says which)
  std::string missingPrice;
};

struct BudgetDecision {
  bool create = true;  // false: Hold (the run waits, phase Queued, reason BudgetExceeded)
  bool warn = false;   // create, with a Warning Event (Warn), or the Hold's message
  Usd needed;          // spent + committed + the new job's reservation
  std::string message;  // "team-a spent $4,980.12 of $5,000 in 2026-12; its 3 unfinished jobs may ..."
};

BudgetDecision decideBudget(const BudgetInput& input);

// "7 days", "24 h", "2 min", "1h30m": a duration in a message.
std::string durationInWords(std::chrono::seconds duration);

}  // namespace vto::governance
