// The budget gate before every job (reconcilers/trainingrun/budget.cpp), as decide sees it: the
// rule's spend as observed, the job priced at the placement it is about to be created on.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/trainingrun/decide.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;
using vertex::JobState;

const Clock::time_point T0 = parseRfc3339("2026-12-10T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";

const governance::PriceCatalog& prices() {
  static const auto catalog = governance::PriceCatalog::parse(R"(
date: "2026-11-01"
source: test
locations:
  us-central1:
    machines: {n1-standard-8: {standard: 0.50, spot: 0.10}}
    accelerators: {NVIDIA_TESLA_T4: {standard: 0.25, spot: 0.05}}
)",
                                                       "t");
  return catalog;
}

governance::TenancyRules rules(const std::string& onExceeded = "Hold") {
  return governance::parseTenancyRules(json::parse(R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a",
      "budget": {"monthlyUsd": 100, "onExceeded": ")" + onExceeded + R"("}}])"));
}

// A new run (1.00/h: n1-standard-8 + 2 x T4, timeout 1 h) whose rule has spent `spent` this month.
Observed fresh(const governance::TenancyRules& r, std::optional<double> spent, const std::string& extraSpec = "{}") {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1, "resourceVersion": "5",
                 "creationTimestamp": "2026-12-10T11:00:00Z"},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
             "scheduling": {"timeout": "1h"},
             "baseOutputDirectory": "gs://bucket/r"}})");
  object["spec"].merge_patch(json::parse(extraSpec));
  Observed o;
  o.now = T0;
  o.run = crd::decodeTrainingRun(object);
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.hasFinalizer = true;
  o.prices = &prices();
  o.tenancy.rules = &r;
  o.tenancy.ns = {"ns", std::map<std::string, std::string>{}};
  if (spent) o.tenancy.budgets[0] = RuleSpend{"2026-12", *Usd::fromDollars(*spent), {}, 0, {}, std::nullopt};
  return o;
}

std::vector<std::string> reasons(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& e : plan.events) out.push_back(e.reason);
  return out;
}

std::string ready(const crd::TrainingRunStatus& status) {
  for (const auto& c : status.conditions)
    if (c.type == "Ready") return c.status + "/" + c.reason;
  return "";
}

TEST(BudgetDecide, ARunThatFitsIsCreatedAndReservesItsWholeCostToItsTimeout) {
  auto r = rules();
  auto plan = decide(fresh(r, 99));  // exactly at the limit: 99 + 1.00/h x 1 h = 100
  ASSERT_TRUE(plan.createJob.has_value());
  ASSERT_TRUE(plan.budgetReservation.has_value());
  EXPECT_EQ(plan.budgetReservation->rule, 0u);
  EXPECT_EQ(plan.budgetReservation->usd, Usd::dollars(1));
  EXPECT_EQ(plan.budgetReservation->timeout, hours(1)) << "a Hold budget's job carries the timeout it was reserved for";
  EXPECT_TRUE(reasons(plan).empty());
}

// What the rule's unfinished jobs may still spend counts, not the next hour of their price: eight
// jobs of $1 each to their timeout fit a $10 budget together, whatever their price per hour.
TEST(BudgetDecide, UnfinishedJobsCountWhatTheyMayStillSpend) {
  auto r = rules();
  auto o = fresh(r, 0);
  o.tenancy.budgets[0].committed = Usd::dollars(98);
  o.tenancy.budgets[0].unfinishedJobs = 7;
  EXPECT_TRUE(decide(o).createJob.has_value()) << "0 + 98 + 1 fits 100";
  o.tenancy.budgets[0].spent = Usd::cents(101);
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_EQ(plan.status->message,
            "team-a spent $1.01 of $100 in 2026-12; its 7 unfinished jobs may still spend up to $98 before their "
            "timeouts; this run may cost up to $1 (1 h at $1/h): $100.01 in all, over $100; it starts by itself when "
            "the budget allows (running jobs end, next month, a raised budget or a shorter scheduling.timeout)");
}

// No timeout: Vertex lets the job run 7 days, so the check counts 7 days and the job carries them.
// spec.maxCostUsd below that bounds the reservation, and the job's timeout with it.
TEST(BudgetDecide, NoTimeoutCountsVertexsSevenDaysAndMaxCostUsdCutsIt) {
  auto r = rules();
  auto week = decide(fresh(r, 0, R"({"scheduling": {"timeout": null}})"));
  EXPECT_FALSE(week.createJob.has_value()) << "1.00/h for 168 h is over $100";
  EXPECT_NE(week.status->message.find("this run may cost up to $168 (7 days at $1/h)"), std::string::npos)
      << week.status->message;
  auto capped = decide(fresh(r, 0, R"({"scheduling": {"timeout": null}, "maxCostUsd": "50"})"));
  ASSERT_TRUE(capped.createJob.has_value()) << (capped.status ? capped.status->message : "");
  EXPECT_EQ(capped.budgetReservation->timeout, minutes(50 * 60 + 1)) << "50 h, plus a minute for the cost limit to act first";
  EXPECT_EQ(capped.budgetReservation->usd, Usd::micros(50'016'667));
  auto warned = decide(fresh(rules("Warn"), 0, R"({"scheduling": {"timeout": null}})"));
  ASSERT_TRUE(warned.createJob.has_value());
  EXPECT_FALSE(warned.budgetReservation->timeout.has_value()) << "a Warn budget changes nothing of the job";
}

// A tuning job may run every trial to its timeout: 100 trials of 1 h at $1/h is $100.
TEST(BudgetDecide, ATuningRunIsCheckedForAllItsTrials) {
  auto r = rules();
  auto plan = decide(fresh(r, 1, R"({"hyperparameterTuning": {"maxTrialCount": 100, "parallelTrialCount": 5,
      "metrics": [{"metricId": "acc", "goal": "Maximize"}], "parameters": [{"parameterId": "lr", "double": {"min": 0.001, "max": 0.1}}]}})"));
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_NE(plan.status->message.find("this run may cost up to $100 (100 trials of up to 1 h at $1/h): $101 in all"),
            std::string::npos)
      << plan.status->message;
}

TEST(BudgetDecide, OverTheBudgetHoldWaitsWithTheFiguresAndOneEvent) {
  auto r = rules();
  auto o = fresh(r, 99.5);
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value());
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->phase, crd::Phase::Queued);
  EXPECT_EQ(ready(*plan.status), "False/BudgetExceeded");
  EXPECT_EQ(plan.status->message,
            "team-a spent $99.50 of $100 in 2026-12; this run may cost up to $1 (1 h at $1/h): $100.50 in all, over "
            "$100; it starts by itself when the budget allows (running jobs end, next month, a raised budget or a "
            "shorter scheduling.timeout)");
  EXPECT_EQ(reasons(plan), std::vector<std::string>{"BudgetExceeded"});
  EXPECT_GT(plan.requeueAfter, Clock::duration::zero());
  // The next pass, nothing changed: no Event, no write.
  o.status = *plan.status;
  o.statusStored = true;
  o.now += minutes(1);
  auto again = decide(o);
  EXPECT_FALSE(again.createJob.has_value());
  EXPECT_TRUE(again.events.empty());
  EXPECT_FALSE(again.status.has_value());
  // A raised budget (a new configuration) lets it start.
  auto raised = governance::parseTenancyRules(json::parse(
      R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 200}}])"));
  o.tenancy.rules = &raised;
  EXPECT_TRUE(decide(o).createJob.has_value());
}

TEST(BudgetDecide, OverTheBudgetWarnCreatesWithAWarning) {
  auto r = rules("Warn");
  auto plan = decide(fresh(r, 99.5));
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(reasons(plan), std::vector<std::string>{"BudgetExceeded"});
  EXPECT_EQ(plan.events[0].type, controller::EventType::Warning);
}

TEST(BudgetDecide, NoReadingOfThisMonthYetHolds) {
  auto r = rules();
  auto unread = fresh(r, std::nullopt);
  EXPECT_FALSE(decide(unread).createJob.has_value());
  auto lastMonth = fresh(r, 1);
  lastMonth.tenancy.budgets[0].month = "2026-11";  // read before the month rolled over
  auto plan = decide(lastMonth);
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_NE(plan.status->message.find("2026-12 has not been read"), std::string::npos) << plan.status->message;
}

TEST(BudgetDecide, AMissingPriceHolds) {
  auto r = rules();
  // The built-in table has no Spot price for a2-highgpu-1g.
  auto plan = decide(fresh(r, 0, R"({"resources": {"machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100",
                                    "acceleratorCount": 1}, "scheduling": {"strategy": "Spot"}})"));
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_NE(plan.status->message.find("cannot be priced (no the spot price of a2-highgpu-1g"), std::string::npos)
      << plan.status->message;
}

TEST(BudgetDecide, AResumeIsCheckedAgain) {
  auto r = rules();
  auto o = fresh(r, 99.5);
  o.status.observedGeneration = 1;
  o.status.phase = crd::Phase::Running;
  o.statusStored = true;
  crd::Attempt first;
  first.attempt = 1;
  first.jobName = kJob;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  CachedJob job;
  job.name = kJob;
  job.state = JobState::Failed;
  job.error = vertex::RpcStatus{14, "The replica workerpool0-0 was preempted"};
  job.createTime = T0 - hours(3);
  job.startTime = T0 - hours(2);
  job.endTime = T0 - hours(1);
  job.readAt = T0;
  o.vertex.job = job;
  o.checkpoints.listed = true;
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value()) << "attempt 2 is held like attempt 1";
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(ready(*plan.status), "False/BudgetExceeded");
}

TEST(BudgetDecide, AFailoverIsPricedAtItsOwnPlacement) {
  auto r = rules();
  // Placement 0 (Standard, 1.00/h) does not fit 99.5 of 100; its Spot fallback (0.20/h) does.
  auto o = fresh(r, 99.5, R"({"capacity": {"fallbacks": [{"scheduling": {"strategy": "Spot"}}]}})");
  o.vertex.createQuotaExceeded = "quota";  // placement 0 has no capacity: the attempt moves to placement 1
  crd::Attempt first;
  first.attempt = 1;
  first.placement = 0;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  o.statusStored = true;
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value()) << (plan.status ? plan.status->message : "");
  EXPECT_EQ(plan.createJob->placement, 1u);
  EXPECT_EQ(plan.budgetReservation->usd, Usd::cents(20));
}

}  // namespace
}  // namespace vto::reconcilers
