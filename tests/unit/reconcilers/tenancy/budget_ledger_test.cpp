// A budget rule's month-to-date spend and what its unfinished jobs may still spend, read from the jobs
// Vertex holds (reconcilers/tenancy/budget_ledger.h).
#include "reconcilers/tenancy/budget_ledger.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_fake_client.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::hours;

const governance::PriceCatalog& prices() {
  static const auto catalog = governance::PriceCatalog::parse(R"(
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


// 2 replicas x (0.50 + 2 x 0.25) = 2.00/h; a 10 h timeout unless said.
json jobBody(const std::string& team, const std::string& strategy = "STANDARD", const std::string& timeout = "36000s") {
  return {{"displayName", "j"},
          {"labels", {{"vto-team", team}, {"managed-by", "vto"}}},
          {"jobSpec",
           {{"workerPoolSpecs",
             {{{"machineSpec", {{"machineType", "n1-standard-8"}, {"acceleratorType", "NVIDIA_TESLA_T4"}, {"acceleratorCount", 2}}},
               {"replicaCount", "2"}}}},
            {"scheduling", {{"strategy", strategy}, {"timeout", timeout}}}}}};
}

// team-a with a $100 budget, team-b with none.
governance::TenancyRules teamRules() {
  return governance::parseTenancyRules(json::parse(
      R"([{"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["b"], "projects": ["test-project"], "locations": ["us-central1"], "maxAccelerators": 4}])"));
}

// A team-a job that ended this month: 2.00/h for 3 h.
vertex::Job endedJob(testing::FakeVertexClient& vertex) {
  auto ended = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(ended.name, {{"createTime", "2026-12-01T00:00:00Z"}, {"startTime", "2026-12-01T01:00:00Z"},
                               {"endTime", "2026-12-01T04:00:00Z"}, {"state", "JOB_STATE_SUCCEEDED"}});
  return ended;
}

// The refresh is a source on the injected clock: at once, then every interval, each refresh telling
// the observer (the metrics) the figures it set.
TEST(BudgetLedger, RefreshesOnTheClockAndTellsTheObserverTheFiguresItSets) {
  testing::FakeClock clock(parseRfc3339("2026-12-02T12:00:00Z"));
  testing::FakeVertexClient vertex;
  governance::TenancyRules rules = teamRules();
  endedJob(vertex);
  std::vector<std::string> told;
  BudgetLedger ledger(vertex, clock, rules, prices(), {"us-central1"}, nullptr,
                      [&](const governance::TenancyRule& rule, const RuleSpend& spend) {
                        told.push_back(rule.name + " " + spend.spent.plain());
                      });
  auto source = budgetRefreshSource(ledger, clock, std::chrono::seconds(30));
  source->pollDue();
  EXPECT_EQ(told, std::vector<std::string>{"team-a 6.00"}) << "at once, for the budget rule alone";
  clock.advance(std::chrono::seconds(29));
  source->pollDue();
  EXPECT_EQ(told.size(), 1u) << "not before the interval";
  clock.advance(std::chrono::seconds(1));
  source->pollDue();
  EXPECT_EQ(told.size(), 2u);
}

TEST(BudgetLedger, SpendIsThisMonthsLabelledJobsAndTheWorstCaseEveryUnfinishedOnes) {
  testing::FakeClock clock(parseRfc3339("2026-12-02T12:00:00Z"));
  testing::FakeVertexClient vertex;
  governance::TenancyRules rules = teamRules();
  Location where{"test-project", "us-central1"};
  endedJob(vertex);  // 2.00/h for 3 h
  // Running for 1 h at 2.00/h, 9 h of its 10 h timeout left.
  auto running = vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(running.name, {{"createTime", "2026-12-02T10:00:00Z"}, {"startTime", "2026-12-02T11:00:00Z"},
                                 {"state", "JOB_STATE_RUNNING"}});
  // Last month's, still running: 37 h of a 48 h timeout gone, 11 h left. Its spend is last month's.
  auto lastMonth = vertex.createJob(where, vertex::JobKind::Custom, jobBody("team-a", "STANDARD", "172800s"));
  vertex.patchJob(lastMonth.name, {{"createTime", "2026-11-30T23:00:00Z"}, {"startTime", "2026-11-30T23:00:00Z"},
                                   {"state", "JOB_STATE_RUNNING"}});
  // Last month's ended, another team's, and one the table cannot price (no Spot T4 price).
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
  EXPECT_EQ(spend->spent, Usd::dollars(6 + 2));
  EXPECT_EQ(spend->committed, Usd::dollars(18 + 22)) << "each unfinished job until its timeout, last month's included";
  EXPECT_EQ(spend->unfinishedJobs, 2);
  EXPECT_EQ(spend->unpriced, std::vector<std::string>{spot.name});
  EXPECT_FALSE(ledger.spendOf(1).has_value()) << "no budget, nothing read";

  // A job just created counts at its reservation until a read lists it; then at its own figures.
  ledger.noteCreated(0, "uid-0", "projects/test-project/locations/us-central1/customJobs/99", Usd::dollars(24));
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd::dollars(40 + 24));
  EXPECT_EQ(ledger.spendOf(0)->unfinishedJobs, 3);
  EXPECT_EQ(ledger.spendOf(0)->spent, Usd::dollars(8));

  // Two runs checked against the same figures at once: the first to reserve takes the room; the
  // second's figures are stale, so it decides again (seeing the first's hold) instead of spending it too.
  auto seen = ledger.spendOf(0)->generation;
  EXPECT_TRUE(ledger.reserve(0, seen, "uid-1", Usd::dollars(10), false));
  EXPECT_FALSE(ledger.reserve(0, seen, "uid-2", Usd::dollars(10), false));
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd::dollars(40 + 24 + 10)) << "a hold counts while its job is created";
  EXPECT_TRUE(ledger.reserve(0, seen, "uid-3", Usd::dollars(5), true)) << "a Warn budget creates anyway";
  ledger.release(0, "uid-3");
  ledger.noteCreated(0, "uid-1", "projects/test-project/locations/us-central1/customJobs/100", Usd::dollars(10));
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd::dollars(40 + 24 + 10)) << "the hold became the job's, counted once";
  EXPECT_TRUE(ledger.reserve(0, ledger.spendOf(0)->generation, "uid-2", Usd::dollars(10), false))
      << "decided again, on fresh figures";
  ledger.release(0, "uid-2");

  // A ledger made afresh (a restart, a new leader) reads the same figures: nothing is remembered.
  BudgetLedger restarted(vertex, clock, rules, prices(), {"us-central1"});
  restarted.refresh();
  EXPECT_EQ(restarted.spendOf(0)->spent, Usd::dollars(8));
  EXPECT_EQ(restarted.spendOf(0)->committed, Usd::dollars(40));

  // The month rolls over: last month's jobs no longer count as spent; the unfinished ones still do,
  // for what is left of their timeouts (nothing, by now).
  clock.advance(hours(24 * 31));
  restarted.refresh();
  EXPECT_EQ(restarted.spendOf(0)->month, "2027-01");
  EXPECT_EQ(restarted.spendOf(0)->spent, Usd());
  EXPECT_EQ(restarted.spendOf(0)->unfinishedJobs, 2);
  EXPECT_EQ(restarted.spendOf(0)->committed, Usd());
}

// Jobs of earlier months can only end: they are listed at the month's first read, and again only
// while one of them is unfinished (a list more per read for no one's good otherwise).
TEST(BudgetLedger, EarlierMonthsAreListedWhileOneOfTheirJobsIsUnfinished) {
  testing::FakeClock clock(parseRfc3339("2026-12-02T12:00:00Z"));
  testing::FakeVertexClient vertex;
  governance::TenancyRules rules = governance::parseTenancyRules(json::parse(
      R"([{"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 100}}])"));
  auto lastMonth = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, jobBody("team-a", "STANDARD", "172800s"));
  vertex.patchJob(lastMonth.name, {{"createTime", "2026-11-30T23:00:00Z"}, {"startTime", "2026-11-30T23:00:00Z"},
                                   {"state", "JOB_STATE_RUNNING"}});
  BudgetLedger ledger(vertex, clock, rules, prices(), {"us-central1"});
  auto listsOf = [&] {
    int before = vertex.listCalls();
    ledger.refresh();
    return vertex.listCalls() - before;
  };
  EXPECT_EQ(listsOf(), 4) << "this month's jobs and earlier months' unfinished ones, for both kinds";
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd::dollars(22));
  vertex.patchJob(lastMonth.name, {{"state", "JOB_STATE_SUCCEEDED"}, {"endTime", "2026-12-02T11:00:00Z"}});
  EXPECT_EQ(listsOf(), 4) << "one was unfinished at the last read";
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd());
  EXPECT_EQ(listsOf(), 2) << "none is any more, and none can be";
  clock.advance(hours(24 * 30));
  EXPECT_EQ(listsOf(), 4) << "a new month: December's jobs are an earlier month's now";
}

// Rules that share a place are read by one list per kind (Vertex's list quota is the project's, not
// the rule's), each job counted for the rule its vto-team names; a failed place keeps the last figures
// of every rule reading it, and a rule elsewhere is read as usual.
TEST(BudgetLedger, RulesSharingAPlaceAreReadByOneListAndEachCountsItsOwnJobs) {
  testing::FakeClock clock(parseRfc3339("2026-12-02T12:00:00Z"));
  testing::FakeVertexClient vertex;
  governance::TenancyRules rules = governance::parseTenancyRules(json::parse(
      R"([{"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["b"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-b", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["c"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-c", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["d"], "projects": ["other-project"], "locations": ["us-central1"], "name": "team-d", "budget": {"monthlyUsd": 100}}])"));
  endedJob(vertex);  // team-a's, $6
  auto teamB = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, jobBody("team-b"));
  vertex.patchJob(teamB.name, {{"createTime", "2026-12-01T00:00:00Z"}, {"startTime", "2026-12-01T01:00:00Z"},
                               {"endTime", "2026-12-01T02:00:00Z"}, {"state", "JOB_STATE_SUCCEEDED"}});
  vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, jobBody("team-x"));  // no budget here
  BudgetLedger ledger(vertex, clock, rules, prices(), {"us-central1"});
  int before = vertex.listCalls();
  ledger.refresh();
  EXPECT_EQ(vertex.listCalls() - before, 8) << "2 places x 2 kinds x (this month, earlier months), not 4 rules' worth";
  EXPECT_EQ(ledger.spendOf(0)->spent, Usd::dollars(6));
  EXPECT_EQ(ledger.spendOf(1)->spent, Usd::dollars(2));
  EXPECT_EQ(ledger.spendOf(2)->spent, Usd());
  EXPECT_EQ(ledger.spendOf(3)->spent, Usd());

  vertex.failLocation("projects/other-project/locations/us-central1", vertex::ApiError(503, "UNAVAILABLE", "down"));
  ledger.refresh();
  EXPECT_TRUE(ledger.spendOf(3)->error.has_value()) << "its place failed: the last figures, said so";
  EXPECT_FALSE(ledger.spendOf(0)->error.has_value());
  EXPECT_EQ(ledger.spendOf(0)->spent, Usd::dollars(6));
}

// A create whose answer was lost keeps its hold: the job may exist and spend. The hold follows the
// job (a read that shows it makes it the job's), is replaced when the run creates again (a retry, or
// a fallback at its own price, under whichever rule governs it), and is freed when the run will
// create nothing more. The run's own hold never holds the run itself back.
TEST(BudgetLedger, AHoldFollowsItsJobAfterALostCreateAnswer) {
  testing::FakeClock clock(parseRfc3339("2026-12-10T12:00:00Z"));
  testing::FakeVertexClient vertex;
  governance::TenancyRules rules = governance::parseTenancyRules(json::parse(
      R"([{"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a", "budget": {"monthlyUsd": 100}},
          {"namespaces": ["a"], "projects": ["test-project"], "locations": ["us-central1"], "name": "team-a-gpu", "budget": {"monthlyUsd": 100}}])"));
  BudgetLedger ledger(vertex, clock, rules, prices(), {"us-central1"});
  ledger.refresh();
  ASSERT_TRUE(ledger.reserve(0, ledger.spendOf(0)->generation, "uid-1", Usd::dollars(30), false));
  // The create's answer is lost: nothing releases the hold.
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd::dollars(30)) << "others see it";
  EXPECT_EQ(ledger.spendOf(0, "uid-1")->committed, Usd()) << "the run itself does not";
  // Deciding again, it takes the room again: replaced, not added.
  ASSERT_TRUE(ledger.reserve(0, ledger.spendOf(0, "uid-1")->generation, "uid-1", Usd::dollars(30), false));
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd::dollars(30));
  // A fallback under another rule at another price: the first rule's hold is gone.
  ASSERT_TRUE(ledger.reserve(1, ledger.spendOf(1, "uid-1")->generation, "uid-1", Usd::dollars(45), false));
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd());
  EXPECT_EQ(ledger.spendOf(1)->committed, Usd::dollars(45));
  // A read shows the job: the hold is the job's now, counted until a refresh lists it.
  ledger.jobSeen("uid-1", "projects/test-project/locations/us-central1/customJobs/7");
  EXPECT_EQ(ledger.spendOf(1)->committed, Usd::dollars(45));
  EXPECT_EQ(ledger.spendOf(1, "uid-1")->committed, Usd::dollars(45)) << "a job's, no longer the run's hold";
  ledger.jobSeen("uid-1", "projects/test-project/locations/us-central1/customJobs/8");
  EXPECT_EQ(ledger.spendOf(1)->committed, Usd::dollars(45)) << "counted once";
  // A run that will create nothing more frees what it held.
  ASSERT_TRUE(ledger.reserve(0, ledger.spendOf(0)->generation, "uid-2", Usd::dollars(20), false));
  auto before = ledger.spendOf(0)->generation;
  ledger.forgetRun("uid-2");
  EXPECT_EQ(ledger.spendOf(0)->committed, Usd());
  EXPECT_GT(ledger.spendOf(0)->generation, before) << "a run that saw the hold decides again";
}

}  // namespace
}  // namespace vto::reconcilers

namespace vto::reconcilers {
namespace {

TEST(CostOfJob, AJobNotStartedYetCostsNothingSoFarButMaySpendItsWholeTimeout) {
  testing::FakeClock clock(parseRfc3339("2026-12-10T12:00:00Z"));
  testing::FakeVertexClient vertex;
  auto queued = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, jobBody("team-a"));
  vertex.patchJob(queued.name, {{"createTime", "2026-12-10T11:00:00Z"}, {"state", "JOB_STATE_QUEUED"}});
  auto cost = costOfJob(vertex.getJob(queued.name), prices(), clock.now()).cost;
  ASSERT_TRUE(cost.has_value());
  EXPECT_EQ(cost->spent, Usd());
  EXPECT_EQ(cost->hourly, Usd()) << "nothing runs yet";
  EXPECT_EQ(cost->worstRemaining, Usd::dollars(20)) << "2.00/h for all its 10 h timeout";
  auto unbounded = jobBody("team-a");
  unbounded["jobSpec"]["scheduling"].erase("timeout");
  auto week = vertex.createJob({"test-project", "us-central1"}, vertex::JobKind::Custom, unbounded);
  EXPECT_EQ(costOfJob(vertex.getJob(week.name), prices(), clock.now()).cost->worstRemaining, Usd::dollars(2 * 24 * 7))
      << "no timeout: Vertex's 7 days";
  vertex.patchJob(queued.name, {{"state", "JOB_STATE_CANCELLED"}, {"endTime", "2026-12-10T11:30:00Z"}});
  EXPECT_EQ(costOfJob(vertex.getJob(queued.name), prices(), clock.now()).cost->worstRemaining, Usd()) << "ended without running";
}

}  // namespace
}  // namespace vto::reconcilers
