// `vto cost`'s table from runs' status (cmd/cost_report.h).
#include "cmd/cost_report.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"

namespace vto::cmd {
namespace {

crd::TrainingRun run(const std::string& ns, const std::string& name, const std::string& accelerator,
                     std::vector<std::pair<std::string, std::string>> attempts /* startTime, costUsd */) {
  crd::TrainingRun r;
  r.metadata.namespace_ = ns;
  r.metadata.name = name;
  r.spec.resources = crd::Resources{};
  r.spec.resources->acceleratorType = accelerator;
  int n = 0;
  for (const auto& [start, usd] : attempts) {
    crd::Attempt a;
    a.attempt = ++n;
    a.startTime = parseRfc3339(start);
    a.endTime = *a.startTime + std::chrono::hours(1);
    a.costUsd = crd::Usd::parse(usd);
    a.acceleratorHours = 1;
    r.status.history.attempts.push_back(a);
  }
  r.status.cost = crd::RunCost{crd::Usd(), 0, 0, std::nullopt, "t", std::nullopt};
  return r;
}

TEST(CostReport, GroupsTheMonthsAttemptsMostFirst) {
  auto policyRun = run("team-b", "weekly-1", "", {{"2026-12-02T00:00:00Z", "3.00"}});
  policyRun.metadata.labels["vto.dev/retraining-policy"] = "weekly";
  std::vector<crd::TrainingRun> runs = {
      run("team-a", "big", "NVIDIA_TESLA_A100", {{"2026-11-30T23:00:00Z", "100.00"}, {"2026-12-01T01:00:00Z", "10.00"}}),
      run("team-a", "small", "NVIDIA_TESLA_T4", {{"2026-12-03T00:00:00Z", "1.50"}}),
      policyRun,
  };
  crd::TrainingRun unpriced;
  unpriced.metadata.name = "u";
  crd::Attempt started;
  started.attempt = 1;
  started.startTime = parseRfc3339("2026-12-03T00:00:00Z");
  unpriced.status.history.attempts = {started};
  runs.push_back(unpriced);
  auto now = parseRfc3339("2026-12-10T00:00:00Z");

  auto byNamespace = costReport(runs, "2026-12", CostGrouping::Namespace, now);
  ASSERT_EQ(byNamespace.rows.size(), 2u);
  EXPECT_EQ(byNamespace.rows[0].key, "team-a");
  EXPECT_EQ(byNamespace.rows[0].usd, crd::Usd::cents(1150));  // November's attempt is November's
  EXPECT_EQ(byNamespace.rows[0].runs, 2);
  EXPECT_EQ(byNamespace.total.usd, crd::Usd::cents(1450));
  EXPECT_EQ(byNamespace.unpriced, 1);

  auto byPolicy = costReport(runs, "2026-12", CostGrouping::Policy, now);
  EXPECT_EQ(byPolicy.rows[0].key, "-");
  EXPECT_EQ(byPolicy.rows[1].key, "team-b/weekly");
  auto byAccelerator = costReport(runs, "2026-12", CostGrouping::Accelerator, now);
  EXPECT_EQ(byAccelerator.rows[0].key, "NVIDIA_TESLA_A100");
  EXPECT_EQ(byAccelerator.rows[1].key, "none");  // the policy's CPU run, $3
  EXPECT_EQ(byAccelerator.rows[2].key, "NVIDIA_TESLA_T4");
  auto november = costReport(runs, "2026-11", CostGrouping::Run, now);
  ASSERT_EQ(november.rows.size(), 1u);
  EXPECT_EQ(november.rows[0].key, "team-a/big");
  EXPECT_EQ(november.total.usd, crd::Usd::dollars(100));
}

TEST(CostReport, ARunningAttemptCountsUpToNow) {
  auto r = run("team-a", "live", "", {{"2026-12-09T00:00:00Z", "2.00"}});
  r.status.history.attempts[0].endTime.reset();
  r.status.cost->hourlyUsd = crd::Usd::dollars(1);
  r.status.cost->updateTime = parseRfc3339("2026-12-09T02:00:00Z");
  auto report = costReport({r}, "2026-12", CostGrouping::Run, parseRfc3339("2026-12-09T05:00:00Z"));
  EXPECT_EQ(report.total.usd, crd::Usd::dollars(5));
}

}  // namespace
}  // namespace vto::cmd
