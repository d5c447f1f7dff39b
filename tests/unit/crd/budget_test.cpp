// A tenancy rule's budget (crd/budget.h) as a table, and its configuration (crd/tenancy.h).
#include "crd/budget.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/strict_json.h"

namespace vto::crd {
namespace {

using nlohmann::json;

BudgetInput input(double spent, double hourly, BudgetAction action = BudgetAction::Hold) {
  BudgetInput in;
  in.rule = "team-a";
  in.budget = Budget{5000, action};
  in.month = "2026-12";
  in.spentUsd = spent;
  in.hourlyUsd = hourly;
  in.timeoutSeconds = 3600;  // a 1 h job
  return in;
}

TEST(Budget, DecidesBeforeAJobIsCreated) {
  struct Row {
    std::string name;
    BudgetInput in;
    bool create, warn;
    std::string message;
  };
  auto running = input(4900, 50);
  running.runningHourlyUsd = 60;
  auto longJob = input(0, 300);
  longJob.timeoutSeconds.reset();  // Vertex's 7 days, counted as 24 h
  auto unpriced = input(100, 0);
  unpriced.hourlyUsd.reset();
  unpriced.missingPrice = "the spot price of NVIDIA_TESLA_A100 in us-east4 (price table 2026-12-05)";
  auto unpricedWarn = unpriced;
  unpricedWarn.budget.onExceeded = BudgetAction::Warn;
  std::vector<Row> rows = {
      {"fits", input(1000, 98.40), true, false, ""},
      {"exactly at the limit fits", input(4900, 100), true, false, ""},
      {"over, Hold: the run waits with the figures", input(4980.12, 98.40), false, true,
       "team-a spent $4,980.12 of $5,000 in 2026-12; this run needs ~$98.40/h for up to 1 h: $5,078.52 > $5,000; it "
       "starts by itself when the budget allows (next month, or a raised budget)"},
      {"over, Warn: created with a warning", input(4980.12, 98.40, BudgetAction::Warn), true, true,
       "team-a spent $4,980.12 of $5,000 in 2026-12; this run needs ~$98.40/h for up to 1 h: $5,078.52 > $5,000 "
       "(onExceeded: Warn: created anyway)"},
      {"the running jobs' next hour counts", running, false, true,
       "team-a spent $4,900 of $5,000 in 2026-12; this run needs ~$50/h for up to 1 h, running jobs ~$60/h: $5,010 > "
       "$5,000; it starts by itself when the budget allows (next month, or a raised budget)"},
      {"no timeout counts 24 h", longJob, false, true, ""},
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

TEST(Budget, AMonthCountsTheJobsCreatedInItUtc) {
  std::vector<JobSpend> jobs = {{parseRfc3339("2026-11-30T23:59:59Z"), 400},
                                {parseRfc3339("2026-12-01T00:00:00Z"), 100},
                                {parseRfc3339("2026-12-31T23:00:00Z"), 50}};
  EXPECT_EQ(budgetMonth(parseRfc3339("2026-12-05T10:00:00Z")), "2026-12");
  EXPECT_DOUBLE_EQ(spendIn(jobs, "2026-12"), 150);
  EXPECT_DOUBLE_EQ(spendIn(jobs, "2026-11"), 400);
  EXPECT_DOUBLE_EQ(spendIn(jobs, "2027-01"), 0);  // the rollover starts from nothing
}

TEST(Budget, TheRuleNamesItsBudget) {
  auto rules = parseTenancyRules(json::parse(
      R"([{"namespaces": ["team-a"], "projects": ["p"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 5000}},
          {"namespaces": ["team-b"], "projects": ["p"], "locations": ["us-central1"], "name": "team-b", "budget": {"monthlyUsd": 10.5, "onExceeded": "Warn"}}])"));
  ASSERT_TRUE(rules[0].budget);
  EXPECT_EQ(rules[0].budget->onExceeded, BudgetAction::Hold);
  EXPECT_EQ(rules[1].budget->onExceeded, BudgetAction::Warn);
  EXPECT_DOUBLE_EQ(rules[1].budget->monthlyUsd, 10.5);
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
}  // namespace vto::crd
