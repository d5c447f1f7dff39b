#pragma once
// `vto cost`: a month's spend grouped, from the jobs vto labelled that Vertex holds (the budget's
// reading, reconcilers/tenancy/job_spend.h), named after the cluster's runs where they still exist
// (docs/cost.md). Pure, so the grouping is tested without a cluster or Vertex.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crd/training_run.h"
#include "governance/cost.h"

namespace vto::cmd {

enum class CostGrouping { Namespace, Policy, Run, Accelerator, Team };

// One job Vertex listed, created in the month, with what it cost up to the reading.
struct CostedJob {
  std::string name;
  std::map<std::string, std::string> labels;
  std::optional<governance::JobCost> cost;  // nullopt: the price table cannot price it
  std::string acceleratorType;       // its first pool's that has accelerators; "" for none
};

struct CostRow {
  std::string key;  // the namespace, policy ("-" for runs of none), namespace/run, accelerator ("none") or team ("-")
  int runs = 0;
  double acceleratorHours = 0;
  Usd usd;  // whole cents: the jobs' figures, each rounded once, as a budget adds them
};

struct CostReport {
  std::vector<CostRow> rows;  // most spent first
  CostRow total;
  int unpricedJobs = 0;  // listed but not priced: not counted
  int deletedRuns = 0;   // counted runs no longer in the cluster (named from their jobs' labels)
  // Runs in the cluster whose attempts of the month name jobs Vertex did not list: not counted.
  std::vector<std::string> notListed;
};

// Vertex's figures are the truth: every listed job counts (a deleted run's too), and the cluster's
// runs only name them (namespace/name, policy) where a run's uid or attempts match the job. A run
// whose attempt started in `month` names a job that is not among `jobs` is reported in notListed.
CostReport costReport(const std::vector<CostedJob>& jobs, const std::vector<crd::TrainingRun>& runs,
                      const std::string& month, CostGrouping by);

}  // namespace vto::cmd
