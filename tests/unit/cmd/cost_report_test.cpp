// `vto cost`'s table from the jobs Vertex listed, named by the cluster's runs (cmd/cost_report.h).
#include "cmd/cost_report.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"

namespace vto::cmd {
namespace {

CostedJob job(const std::string& id, const std::string& uid, const std::string& ns, const std::string& name,
              const std::string& usd, const std::string& accelerator = "",
              std::map<std::string, std::string> extra = {}) {
  CostedJob j;
  j.name = "projects/p/locations/us-central1/customJobs/" + id;
  j.labels = {{"vto-run-uid", uid}, {"vto-namespace", ns}, {"vto-name", name}};
  j.labels.insert(extra.begin(), extra.end());
  if (!usd.empty()) {
    j.cost = governance::JobCost{};
    j.cost->spent = *Usd::parse(usd);
    j.cost->acceleratorHours = accelerator.empty() ? 0 : 1;
  }
  j.acceleratorType = accelerator;
  return j;
}

crd::TrainingRun run(const std::string& ns, const std::string& name, const std::string& uid,
                     std::vector<std::pair<std::string, std::string>> attempts /* job id, startTime */ = {}) {
  crd::TrainingRun r;
  r.metadata.namespace_ = ns;
  r.metadata.name = name;
  r.metadata.uid = uid;
  int n = 0;
  for (const auto& [id, start] : attempts) {
    crd::Attempt a;
    a.attempt = ++n;
    a.jobName = "projects/p/locations/us-central1/customJobs/" + id;
    a.startTime = parseRfc3339(start);
    r.status.history.attempts.push_back(a);
  }
  return r;
}

// Every listed job counts, a deleted run's too; the cluster's runs only name them.
TEST(CostReport, EveryJobVertexListedCountsAndTheClusterNamesThoseItStillHas) {
  std::vector<CostedJob> jobs = {
      job("1", "uid-big", "team-a", "big", "100.00", "NVIDIA_TESLA_A100", {{"vto-team", "team-a"}}),
      job("2", "uid-big", "team-a", "big", "10.00", "NVIDIA_TESLA_A100", {{"vto-team", "team-a"}}),
      job("3", "uid-gone", "team-a", "gone", "1.50", "NVIDIA_TESLA_T4", {{"vto-team", "team-a"}}),
      job("4", "uid-weekly", "team-b", "weekly-1", "3.00", "", {{"vto-policy", "weekly"}}),
      job("5", "uid-unpriced", "team-b", "u", ""),
  };
  auto policyRun = run("team-b", "weekly-1", "uid-weekly");
  policyRun.metadata.labels["vto.dev/retraining-policy"] = "weekly";
  // A run that took its job over (another run's uid on the job): named by its attempt.
  std::vector<crd::TrainingRun> runs = {run("team-a", "big", "uid-big-2", {{"1", "2026-12-01T00:00:00Z"}}),
                                        run("team-a", "big-again", "uid-big"), policyRun,
                                        run("team-c", "elsewhere", "uid-e", {{"9", "2026-12-03T00:00:00Z"}})};

  struct Case {
    CostGrouping by;
    std::vector<std::pair<std::string, std::string>> rows;  // key, usd (most first)
  };
  const std::vector<Case> cases = {
      {CostGrouping::Namespace, {{"team-a", "111.50"}, {"team-b", "3.00"}}},
      {CostGrouping::Run, {{"team-a/big", "100.00"}, {"team-a/big-again", "10.00"}, {"team-b/weekly-1", "3.00"},
                           {"team-a/gone (deleted)", "1.50"}}},
      {CostGrouping::Policy, {{"-", "111.50"}, {"team-b/weekly", "3.00"}}},
      {CostGrouping::Accelerator, {{"NVIDIA_TESLA_A100", "110.00"}, {"none", "3.00"}, {"NVIDIA_TESLA_T4", "1.50"}}},
      {CostGrouping::Team, {{"team-a", "111.50"}, {"-", "3.00"}}},
  };
  for (const auto& c : cases) {
    auto report = costReport(jobs, runs, "2026-12", c.by);
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& row : report.rows) rows.emplace_back(row.key, row.usd.plain());
    EXPECT_EQ(rows, c.rows) << static_cast<int>(c.by);
    EXPECT_EQ(report.total.usd, Usd::cents(11450)) << "the same total whatever the grouping";
    EXPECT_EQ(report.unpricedJobs, 1);
    EXPECT_EQ(report.deletedRuns, 1) << "gone";
    EXPECT_EQ(report.notListed, std::vector<std::string>{"team-c/elsewhere"}) << "its job was not listed: not counted";
  }
  auto byNamespace = costReport(jobs, runs, "2026-12", CostGrouping::Namespace);
  EXPECT_EQ(byNamespace.rows[0].runs, 2) << "big's two jobs are one run (its uid), and gone";
  EXPECT_EQ(byNamespace.total.runs, 3);
  EXPECT_EQ(costReport(jobs, runs, "2026-11", CostGrouping::Namespace).notListed.size(), 0u)
      << "an attempt of another month is not this month's to list";
}

}  // namespace
}  // namespace vto::cmd
