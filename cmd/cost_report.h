#pragma once
// `vto cost`: a month's spend of TrainingRuns, grouped, from their status (docs/cost.md). Pure, so
// the grouping is tested without a cluster.
#include <string>
#include <vector>

#include "base/clock.h"
#include "crd/training_run.h"

namespace vto::cmd {

enum class CostGrouping { Namespace, Policy, Run, Accelerator };

struct CostRow {
  std::string key;  // the namespace, policy ("-" for runs of none), namespace/run, or accelerator ("none")
  int runs = 0;
  double acceleratorHours = 0;
  crd::Usd usd;  // whole cents: the attempts' figures as status shows them
};

// Each attempt counts in the month (UTC) its job started in; the running attempt up to `now`
// (status.cost.hourlyUsd since status.cost.updateTime). Runs without a cost are counted in `unpriced`.
struct CostReport {
  std::vector<CostRow> rows;  // most spent first
  CostRow total;
  int unpriced = 0;
};
CostReport costReport(const std::vector<crd::TrainingRun>& runs, const std::string& month, CostGrouping by,
                      Clock::time_point now);

}  // namespace vto::cmd
