// decidePolicy with spec.budget.monthlyUsd: the month's spend of the policy's runs (status.spend) and
// the triggers it skips once that reaches the budget (API.md "Cost and budgets").
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::hours;

const Clock::time_point T0 = parseRfc3339("2026-12-10T12:00:00Z");
constexpr const char* kUid = "5f0c9d7e-aaaa-bbbb-cccc-000000000003";

json policy(const std::string& budget, json status, const std::string& request = "r1") {
  json p = {{"apiVersion", "vto.dev/v1beta1"},
            {"kind", "RetrainingPolicy"},
            {"metadata", {{"name", "fraud"}, {"namespace", "risk"}, {"uid", kUid}, {"generation", 1},
                          {"creationTimestamp", "2026-11-01T00:00:00Z"},
                          {"annotations", {{"vto.dev/retrain-requested", request}}}}},
            {"spec", json::parse(R"({
              "template": {"spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                    "resources": {"machineType": "n1-standard-4"},
                                    "baseOutputDirectory": "gs://bucket/fraud/"}},
              "concurrencyPolicy": "Allow", "maxActiveRuns": 10})")}};
  if (!budget.empty()) p["spec"]["budget"] = {{"monthlyUsd", budget}};
  if (!status.empty()) p["status"] = status;
  return p;
}

// A run of the policy created at `created` whose estimate is `usd`.
json child(const std::string& name, const std::string& created, const std::string& phase, const std::string& usd,
           bool counted = false) {
  json run = {{"metadata",
               {{"name", name}, {"namespace", "risk"}, {"creationTimestamp", created},
                {"annotations", {{"vto.dev/trigger-reason", "Manual"}, {"vto.dev/trigger-time", created}}},
                {"ownerReferences", json::array({{{"uid", kUid}, {"controller", true}}})}}},
              {"spec", {{"baseOutputDirectory", "gs://bucket/fraud/" + name}}},
              {"status", {{"phase", phase}, {"cost", {{"estimatedUsd", usd}}}}}};
  if (phase == "Succeeded" || phase == "Failed") run["status"]["completionTime"] = created;
  if (counted) run["metadata"]["annotations"][kCountedAnnotation] = "true";
  return run;
}

json spent(const std::string& month, const std::string& endedUsd) {
  return {{"spend", {{"month", month}, {"endedUsd", endedUsd}, {"estimatedUsd", endedUsd}}}};
}

TEST(PolicyBudgetDecide, ATriggerCreatesARunOnlyWhileTheMonthsSpendIsBelowTheBudget) {
  struct Case {
    const char* name;
    std::string budget;
    json status;
    std::vector<json> runs;
    bool creates;
    std::string estimatedUsd;  // status.spend.estimatedUsd after the pass
    std::string endedUsd;
  };
  const std::vector<Case> cases = {
      {"no budget: runs start whatever they cost", "", spent("2026-12", "900.00"), {}, true, "900.00", "900.00"},
      {"fits: a running run's estimate counts", "50", json::object(),
       {child("fraud-1", "2026-12-09T00:00:00Z", "Running", "20.00")}, true, "20.00", "0.00"},
      {"at the limit: reaching it exactly is spent", "50", spent("2026-12", "30.00"),
       {child("fraud-1", "2026-12-09T00:00:00Z", "Running", "20.00")}, false, "50.00", "30.00"},
      {"over: a run that ended this pass is counted into endedUsd", "50", spent("2026-12", "30.00"),
       {child("fraud-1", "2026-12-09T00:00:00Z", "Succeeded", "25.50")}, false, "55.50", "55.50"},
      {"a counted run is not added twice", "50", spent("2026-12", "30.00"),
       {child("fraud-1", "2026-12-09T00:00:00Z", "Succeeded", "25.50", true)}, true, "30.00", "30.00"},
      {"deleted runs do not reset it: endedUsd is kept in status", "50", spent("2026-12", "50.00"), {}, false, "50.00",
       "50.00"},
      {"a new month starts from nothing", "50", spent("2026-11", "80.00"), {}, true, "0.00", "0.00"},
      {"a run created last month counts in last month's", "50", spent("2026-12", "10.00"),
       {child("fraud-1", "2026-11-30T23:00:00Z", "Succeeded", "70.00")}, true, "10.00", "10.00"},
  };
  for (const auto& c : cases) {
    auto in = readPolicy(policy(c.budget, c.status), c.runs, T0);
    auto plan = decidePolicy(in);
    EXPECT_EQ(plan.create.size(), c.creates ? 1u : 0u) << c.name;
    ASSERT_TRUE(plan.status.history.spend) << c.name;
    auto status = crd::encodeRetrainingPolicyStatus(plan.status);
    EXPECT_EQ(status["spend"]["month"], "2026-12") << c.name;
    EXPECT_EQ(status["spend"]["estimatedUsd"], c.estimatedUsd) << c.name;
    EXPECT_EQ(status["spend"]["endedUsd"], c.endedUsd) << c.name;
    // The request is answered either way: a skipped one is not held for next month.
    EXPECT_EQ(plan.status.history.lastHandledRetrainRequest, "r1") << c.name;
    bool skipped = std::any_of(plan.outcomes.begin(), plan.outcomes.end(), [](const auto& o) { return o.outcome == "skipped_budget"; });
    EXPECT_EQ(skipped, !c.creates) << c.name;
    EXPECT_EQ(plan.status.history.lastSkippedTrigger.has_value(), !c.creates) << c.name;
  }
}

TEST(PolicyBudgetDecide, TheSkipSaysBudgetExceededWithTheFigures) {
  auto plan = decidePolicy(readPolicy(policy("50", spent("2026-12", "62.25")), {}, T0));
  ASSERT_TRUE(plan.create.empty());
  ASSERT_TRUE(plan.status.history.lastSkippedTrigger);
  const auto& skipped = *plan.status.history.lastSkippedTrigger;
  EXPECT_EQ(skipped.skipReason, "BudgetExceeded");
  EXPECT_EQ(skipped.reason, crd::TriggerReason::Manual);
  EXPECT_EQ(skipped.time, T0);
  EXPECT_NE(skipped.message.find("$62.25 of $50"), std::string::npos) << skipped.message;
  EXPECT_NE(skipped.message.find("2026-12"), std::string::npos) << skipped.message;
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "BudgetExceeded");
  EXPECT_EQ(plan.events[0].type, controller::EventType::Warning);
  // The record survives the next pass, which has nothing to skip.
  auto next = readPolicy(policy("50", crd::encodeRetrainingPolicyStatus(plan.status)), {}, T0 + hours(1));
  EXPECT_EQ(decidePolicy(next).status.history.lastSkippedTrigger, plan.status.history.lastSkippedTrigger);
}

TEST(PolicyBudgetDecide, AScheduledSlotOverBudgetIsNotRunLate) {
  auto p = policy("50", spent("2026-12", "50.00"), "");
  p["metadata"]["annotations"] = json::object();
  p["spec"]["triggers"] = {{"schedule", {{"cron", "0 * * * *"}}}};
  p["status"]["lastScheduleTime"] = "2026-12-10T11:00:00Z";
  auto plan = decidePolicy(readPolicy(p, {}, T0 + std::chrono::seconds(5)));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.status.history.lastScheduleTime, T0);
  EXPECT_EQ(plan.status.history.missedSchedules, 1);
  ASSERT_TRUE(plan.status.history.lastSkippedTrigger);
  EXPECT_EQ(plan.status.history.lastSkippedTrigger->reason, crd::TriggerReason::Schedule);
}

TEST(PolicyBudgetDecide, TheBudgetIsValidatedAsDollars) {
  for (const char* bad : {"-5", "1.234", "lots", "1e3"}) {
    auto plan = decidePolicy(readPolicy(policy(bad, json::object()), {}, T0));
    EXPECT_TRUE(plan.invalid) << bad;
    EXPECT_TRUE(plan.create.empty()) << bad;
  }
}

}  // namespace
}  // namespace vto::reconcilers
