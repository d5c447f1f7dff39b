// A budget rule's month-to-date spend, read from the jobs Vertex holds (reconcilers/tenancy/budget_ledger.h).
#include "reconcilers/tenancy/budget_ledger.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_fake_client.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::hours;

const crd::PriceCatalog& prices() {
  static const auto catalog = crd::PriceCatalog::parse(R"(
date: "2026-11-01"
source: test
locations:
  us-central1:
    machines: {n1-standard-8: {standard: 0.50, spot: 0.10}}
    accelerators: {NVIDIA_TESLA_T4: {standard: 0.25}}
)",
                                                       "t");
  return catalog;
}

json jobBody(const std::string& team, const std::string& strategy = "STANDARD") {
  return {{"displayName", "j"},
          {"labels", {{"vto-team", team}, {"managed-by", "vto"}}},
          {"jobSpec",
           {{"workerPoolSpecs",
             {{{"machineSpec", {{"machineType", "n1-standard-8"}, {"acceleratorType", "NVIDIA_TESLA_T4"}, {"acceleratorCount", 2}}},
               {"replicaCount", "2"}}}},
            {"scheduling", {{"strategy", strategy}}}}}};
}

TEST(BudgetLedger, SpendIsThisMonthsLabelledJobsPricedFromTheirOwnResources) {
  testing::FakeClock clock(parseRfc3339("2026-12-10T12:00:00Z"));
  testing::FakeVertexClient vertex;
  crd::TenancyRules rules = crd::parseTenancyRules(json::parse(
      R"([{"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["b"], "projects": ["test-project"], "locations": ["us-central1"], "maxAccelerators": 4}])"));
  Location where{"test-project", "us-central1"};
  // Ended: 2 replicas x (0.50 + 2 x 0.25) = 2.00/h for 3 h.
  auto ended = vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(ended.name, {{"createTime", "2026-12-01T00:00:00Z"}, {"startTime", "2026-12-01T01:00:00Z"},
                               {"endTime", "2026-12-01T04:00:00Z"}, {"state", "JOB_STATE_SUCCEEDED"}});
  // Running for 1 h at 2.00/h.
  auto running = vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(running.name, {{"createTime", "2026-12-10T10:00:00Z"}, {"startTime", "2026-12-10T11:00:00Z"},
                                 {"state", "JOB_STATE_RUNNING"}});
  // Last month's, another team's, and one the table cannot price (no Spot T4 price).
  auto old = vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(old.name, {{"createTime", "2026-11-30T23:00:00Z"}, {"startTime", "2026-11-30T23:00:00Z"},
                             {"endTime", "2026-12-01T01:00:00Z"}, {"state", "JOB_STATE_SUCCEEDED"}});
  vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-b"));
  auto spot = vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-a", "SPOT"));
  vertex.patchJob(spot.name, {{"createTime", "2026-12-02T00:00:00Z"}, {"startTime", "2026-12-02T00:00:00Z"}});

  BudgetLedger ledger(vertex, clock, rules, prices(), {"us-central1"});
  EXPECT_FALSE(ledger.spendOf(0).has_value()) << "nothing is known before the first read";
  ledger.refresh();
  auto spend = ledger.spendOf(0);
  ASSERT_TRUE(spend.has_value());
  EXPECT_EQ(spend->month, "2026-12");
  EXPECT_NEAR(spend->spentUsd, 6 + 2, 1e-9);
  EXPECT_NEAR(spend->runningHourlyUsd, 2, 1e-9);
  EXPECT_EQ(spend->unpriced, std::vector<std::string>{spot.name});
  EXPECT_FALSE(ledger.spendOf(1).has_value()) << "no budget, nothing read";

  // A job just created counts at its reservation until a read lists it; then at its own figures.
  ledger.noteCreated(0, "uid-0", "projects/test-project/locations/us-central1/customJobs/99", 24, 3);
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 8 + 24, 1e-9);
  EXPECT_NEAR(ledger.spendOf(0)->runningHourlyUsd, 2 + 3, 1e-9) << "and runs, at its price per hour";

  // Two runs checked against the same figures at once: the first to reserve takes the room; the
  // second's figures are stale, so it decides again (seeing the first's hold) instead of spending it too.
  auto seen = ledger.spendOf(0)->generation;
  EXPECT_TRUE(ledger.reserve(0, seen, "uid-1", 10, 1, false));
  EXPECT_FALSE(ledger.reserve(0, seen, "uid-2", 10, 1, false));
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 8 + 24 + 10, 1e-9) << "a hold counts while its job is created";
  EXPECT_TRUE(ledger.reserve(0, seen, "uid-3", 5, 1, true)) << "a Warn budget creates anyway";
  ledger.release(0, "uid-3");
  ledger.noteCreated(0, "uid-1", "projects/test-project/locations/us-central1/customJobs/100", 10, 1);
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 8 + 24 + 10, 1e-9) << "the hold became the job's, counted once";
  EXPECT_TRUE(ledger.reserve(0, ledger.spendOf(0)->generation, "uid-2", 10, 1, false)) << "decided again, on fresh figures";
  ledger.release(0, "uid-2");

  // A ledger made afresh (a restart, a new leader) reads the same spend: nothing is remembered.
  BudgetLedger restarted(vertex, clock, rules, prices(), {"us-central1"});
  restarted.refresh();
  EXPECT_NEAR(restarted.spendOf(0)->spentUsd, 8, 1e-9);

  // The month rolls over: last month's jobs no longer count.
  clock.advance(hours(24 * 22));
  restarted.refresh();
  EXPECT_EQ(restarted.spendOf(0)->month, "2027-01");
  EXPECT_NEAR(restarted.spendOf(0)->spentUsd, 0, 1e-9);
}

// A create whose answer was lost keeps its hold: the job may exist and spend. The hold follows the
// job (a read that shows it makes it the job's), is replaced when the run creates again (a retry, or
// a fallback at its own price, under whichever rule governs it), and is freed when the run will
// create nothing more. The run's own hold never holds the run itself back.
TEST(BudgetLedger, AHoldFollowsItsJobAfterALostCreateAnswer) {
  testing::FakeClock clock(parseRfc3339("2026-12-10T12:00:00Z"));
  testing::FakeVertexClient vertex;
  crd::TenancyRules rules = crd::parseTenancyRules(json::parse(
      R"([{"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a-gpu", "budget": {"monthlyUsd": 100}}])"));
  BudgetLedger ledger(vertex, clock, rules, prices(), {"us-central1"});
  ledger.refresh();
  ASSERT_TRUE(ledger.reserve(0, ledger.spendOf(0)->generation, "uid-1", 30, 2, false));
  // The create's answer is lost: nothing releases the hold.
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 30, 1e-9) << "others see it";
  EXPECT_NEAR(ledger.spendOf(0, "uid-1")->spentUsd, 0, 1e-9) << "the run itself does not";
  // Deciding again, it takes the room again: replaced, not added.
  ASSERT_TRUE(ledger.reserve(0, ledger.spendOf(0, "uid-1")->generation, "uid-1", 30, 2, false));
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 30, 1e-9);
  // A fallback under another rule at another price: the first rule's hold is gone.
  ASSERT_TRUE(ledger.reserve(1, ledger.spendOf(1, "uid-1")->generation, "uid-1", 45, 3, false));
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 0, 1e-9);
  EXPECT_NEAR(ledger.spendOf(1)->spentUsd, 45, 1e-9);
  // A read shows the job: the hold is the job's now, counted until a refresh lists it.
  ledger.jobSeen("uid-1", "projects/test-project/locations/us-central1/customJobs/7");
  EXPECT_NEAR(ledger.spendOf(1)->spentUsd, 45, 1e-9);
  EXPECT_NEAR(ledger.spendOf(1, "uid-1")->spentUsd, 45, 1e-9) << "a job's, no longer the run's hold";
  ledger.jobSeen("uid-1", "projects/test-project/locations/us-central1/customJobs/8");
  EXPECT_NEAR(ledger.spendOf(1)->spentUsd, 45, 1e-9) << "counted once";
  // A run that will create nothing more frees what it held.
  ASSERT_TRUE(ledger.reserve(0, ledger.spendOf(0)->generation, "uid-2", 20, 1, false));
  auto before = ledger.spendOf(0)->generation;
  ledger.forgetRun("uid-2");
  EXPECT_NEAR(ledger.spendOf(0)->spentUsd, 0, 1e-9);
  EXPECT_GT(ledger.spendOf(0)->generation, before) << "a run that saw the hold decides again";
}

}  // namespace
}  // namespace vto::reconcilers

namespace vto::reconcilers {
namespace {

TEST(CostOfJob, AJobNotStartedYetCostsNothingSoFarButCountsAsRunningForTheNextHour) {
  testing::FakeClock clock(parseRfc3339("2026-12-10T12:00:00Z"));
  testing::FakeVertexClient vertex;
  auto queued = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(queued.name, {{"createTime", "2026-12-10T11:00:00Z"}, {"state", "JOB_STATE_QUEUED"}});
  auto reading = costOfJob(vertex.getJob(queued.name), prices(), clock.now());
  ASSERT_TRUE(reading.usd.has_value());
  EXPECT_DOUBLE_EQ(*reading.usd, 0);
  EXPECT_DOUBLE_EQ(reading.hourlyUsd, 2.0) << "2 replicas x (0.50 + 2 x 0.25): the room it will take";
  vertex.patchJob(queued.name, {{"state", "JOB_STATE_CANCELLED"}, {"endTime", "2026-12-10T11:30:00Z"}});
  EXPECT_DOUBLE_EQ(costOfJob(vertex.getJob(queued.name), prices(), clock.now()).hourlyUsd, 0) << "ended without running";
}

}  // namespace
}  // namespace vto::reconcilers
