// A tenancy rule's budget (governance/budget.h) as a table, and its configuration (governance/tenancy.h).
#include "governance/budget.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/strict_json.h"

namespace vto::governance {
// What this file reads of the API.
using crd::DecodeError;

namespace {

using nlohmann::json;

using std::chrono::hours;
using std::chrono::minutes;

const char* kPrices = R"(
date: "2026-12-05"
locations:
  us-central1:
    machines: {n1-standard-8: {standard: 98.40}, n1-standard-4: {standard: 1}})";

// A new job of 1 h at $98.40/h: $98.40 reserved.
Reservation oneHour(double hourly = 98.40) {
  Reservation job;
  job.hourly = *Usd::fromDollars(hourly);
  job.timeout = hours(1);
  job.usd = job.hourly.forDuration(job.timeout);
  return job;
}

BudgetInput input(double spent, std::optional<Reservation> job = oneHour(), BudgetAction action = BudgetAction::Hold) {
  BudgetInput in;
  in.rule = "team-a";
  in.budget = Budget{Usd::dollars(5000), action};
  in.month = "2026-12";
  in.spent = *Usd::fromDollars(spent);
  in.job = job;
  return in;
}

TEST(Budget, DecidesBeforeAJobIsCreated) {
  struct Row {
    std::string name;
    BudgetInput in;
    bool create, warn;
    std::string message;
  };
  auto others = input(4900, oneHour(50));
  others.committed = Usd::dollars(60);
  others.unfinishedJobs = 3;
  auto unpriced = input(100, std::nullopt);
  unpriced.missingPrice = "the spot price of NVIDIA_TESLA_A100 in us-east4 (price table 2026-12-05)";
  auto unpricedWarn = unpriced;
  unpricedWarn.budget.onExceeded = BudgetAction::Warn;
  auto trials = oneHour(0.40);
  trials.trials = 100;
  trials.usd = Usd::dollars(40);
  auto absurd = input(0, oneHour());
  absurd.committed = Usd::max();  // a figure that saturated: never fits
  std::vector<Row> rows = {
      {"fits", input(1000), true, false, ""},
      {"exactly at the limit fits", input(4901.60), true, false, ""},
      {"over, Hold: the run waits with the figures", input(4980.12), false, true,
       "team-a spent $4,980.12 of $5,000 in 2026-12; this run may cost up to $98.40 (1 h at $98.40/h): $5,078.52 in "
       "all, over $5,000; it starts by itself when the budget allows (running jobs end, next month, a raised budget or "
       "a shorter scheduling.timeout)"},
      {"over, Warn: created with a warning", input(4980.12, oneHour(), BudgetAction::Warn), true, true,
       "team-a spent $4,980.12 of $5,000 in 2026-12; this run may cost up to $98.40 (1 h at $98.40/h): $5,078.52 in "
       "all, over $5,000 (onExceeded: Warn: created anyway)"},
      {"what unfinished jobs may still spend counts", others, false, true,
       "team-a spent $4,900 of $5,000 in 2026-12; its 3 unfinished jobs may still spend up to $60 before their "
       "timeouts; this run may cost up to $50 (1 h at $50/h): $5,010 in all, over $5,000; it starts by itself when "
       "the budget allows (running jobs end, next month, a raised budget or a shorter scheduling.timeout)"},
      {"a tuning job counts all its trials", input(4980, trials), false, true,
       "team-a spent $4,980 of $5,000 in 2026-12; this run may cost up to $40 (100 trials of up to 1 h at $0.40/h): "
       "$5,020 in all, over $5,000; it starts by itself when the budget allows (running jobs end, next month, a raised "
       "budget or a shorter scheduling.timeout)"},
      {"a saturated figure fails closed", absurd, false, true, ""},
      {"a missing price holds under Hold", unpriced, false, true,
       "team-a spent $100 of $5,000 in 2026-12; this run cannot be priced (no the spot price of NVIDIA_TESLA_A100 in "
       "us-east4 (price table 2026-12-05)): it waits until the price table prices it"},
      {"a missing price warns under Warn", unpricedWarn, true, true, ""},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto decision = decideBudget(row.in);
    EXPECT_EQ(decision.create, row.create);
    EXPECT_EQ(decision.warn, row.warn);
    if (!row.message.empty()) {
      EXPECT_EQ(decision.message, row.message);
    }
  }
}

// The new job's reservation: its whole cost to its timeout (7 days without one), cut to what
// spec.maxCostUsd leaves where that is lower, the timeout cut with it.
TEST(Budget, AReservationIsTheJobsWholeCostToItsTimeout) {
  auto prices = PriceCatalog::parse(kPrices, "t");
  JobShape shape;
  shape.location = "us-central1";
  shape.pools = {PoolUse{"n1-standard-4", "", 0, 1, 1}};  // $1/h
  std::string missing;
  auto week = reservationFor(prices, shape, std::nullopt, &missing);
  ASSERT_TRUE(week) << missing;
  EXPECT_EQ(week->usd, Usd::dollars(168)) << "no timeout: Vertex's 7 days";
  EXPECT_EQ(week->timeout, kVertexDefaultTimeout);
  shape.timeout = hours(24);
  EXPECT_EQ(reservationFor(prices, shape, std::nullopt, &missing)->usd, Usd::dollars(24));
  EXPECT_EQ(reservationFor(prices, shape, Usd::dollars(100), &missing)->usd, Usd::dollars(24)) << "the limit is higher";
  auto capped = reservationFor(prices, shape, Usd::cents(250), &missing);
  EXPECT_TRUE(capped->limitedByMaxCost);
  EXPECT_EQ(capped->timeout, minutes(151)) << "2.5 h, rounded up to the minute, plus one";
  EXPECT_EQ(capped->usd, Usd::micros(2'516'667));
  shape.tuning = true;
  shape.maxTrials = 100;
  auto tuning = reservationFor(prices, shape, Usd::cents(250), &missing);
  EXPECT_EQ(tuning->usd, Usd::dollars(2400)) << "every trial to its timeout; a tuning job's trials are not cut";
  EXPECT_EQ(tuning->trials, 100);
  shape.pools = {PoolUse{"a2-highgpu-1g", "", 0, 1, 1}};
  EXPECT_FALSE(reservationFor(prices, shape, std::nullopt, &missing));
  EXPECT_NE(missing.find("a2-highgpu-1g"), std::string::npos);
}

TEST(Budget, AMonthIsTheCalendarMonthUtc) {
  EXPECT_EQ(budgetMonth(parseRfc3339("2026-12-05T10:00:00Z")), "2026-12");
  EXPECT_EQ(budgetMonth(parseRfc3339("2026-11-30T23:59:59Z")), "2026-11");
  EXPECT_EQ(budgetMonth(parseRfc3339("2027-01-01T00:00:00Z")), "2027-01");
  EXPECT_EQ(durationInWords(std::chrono::seconds(7 * 86400)), "7 days");
  EXPECT_EQ(durationInWords(hours(24)), "24 h");
  EXPECT_EQ(durationInWords(minutes(2)), "2 min");
  EXPECT_EQ(durationInWords(minutes(90)), "1h30m");
}

TEST(Budget, TheRuleNamesItsBudget) {
  auto rules = parseTenancyRules(json::parse(
      R"([{"namespaces": ["team-a"], "projects": ["p"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 5000}},
          {"namespaces": ["team-b"], "projects": ["p"], "locations": ["us-central1"], "name": "team-b", "budget": {"monthlyUsd": 10.5, "onExceeded": "Warn"}}])"));
  ASSERT_TRUE(rules[0].budget);
  EXPECT_EQ(rules[0].budget->onExceeded, BudgetAction::Hold);
  EXPECT_EQ(rules[1].budget->onExceeded, BudgetAction::Warn);
  EXPECT_EQ(rules[1].budget->monthlyUsd, Usd::cents(1050));
  auto refused = [](const char* text) {
    try {
      parseTenancyRules(json::parse(text));
    } catch (const DecodeError& e) {
      return e.path();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "budget": {"monthlyUsd": 1}}])"), "tenancy[0].name");
  // Its spend is read where its runs may go: an open list would leave spend nobody reads.
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "a", "budget": {"monthlyUsd": 1}}])"), "tenancy[0].projects");
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "a", "projects": ["p"], "budget": {"monthlyUsd": 1}}])"),
            "tenancy[0].locations");
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "a", "budget": {}}])"), "tenancy[0].budget.monthlyUsd");
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "a", "budget": {"monthlyUsd": -1}}])"), "tenancy[0].budget.monthlyUsd");
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "a", "budget": {"monthlyUsd": 1, "onExceeded": "Stop"}}])"),
            "tenancy[0].budget.onExceeded");
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "Team A"}])"), "tenancy[0].name");
  EXPECT_EQ(refused(R"([{"namespaces": ["a"], "name": "t"}, {"namespaces": ["b"], "name": "t"}])"), "tenancy[1].name");
}

}  // namespace
}  // namespace vto::governance
