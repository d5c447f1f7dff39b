// vto cost: a month's spend of the cluster's TrainingRuns by namespace, policy, run or accelerator,
// read with the user's kubeconfig from the runs' status (list prices; docs/cost.md).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "cmd/commands.h"
#include "cmd/cost_report.h"
#include "cmd/flags.h"
#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "crd/budget.h"
#include "crd/retraining_policy.h"
#include "reconcilers/trainingrun/reconciler.h"

namespace vto::cmd {

CostReport costReport(const std::vector<crd::TrainingRun>& runs, const std::string& month, CostGrouping by,
                      Clock::time_point now) {
  std::map<std::string, CostRow> rows;
  std::map<std::string, std::set<std::string>> runsOf;
  CostReport report;
  std::set<std::string> counted;
  for (const auto& run : runs) {
    std::string id = run.metadata.namespace_ + "/" + run.metadata.name;
    const auto& cost = run.status.cost;
    if (!cost) {
      if (!run.status.history.attempts.empty() && run.status.history.attempts.front().startTime) ++report.unpriced;
      continue;
    }
    std::string key;
    switch (by) {
      case CostGrouping::Namespace: key = run.metadata.namespace_; break;
      case CostGrouping::Run: key = id; break;
      case CostGrouping::Policy: {
        auto policy = run.metadata.labels.find(crd::kRetrainingPolicyLabel);
        key = policy == run.metadata.labels.end() ? "-" : run.metadata.namespace_ + "/" + policy->second;
        break;
      }
      case CostGrouping::Accelerator:
        key = run.spec.resources && !run.spec.resources->acceleratorType.empty() ? run.spec.resources->acceleratorType : "none";
        break;
    }
    const auto& attempts = run.status.history.attempts;
    for (size_t i = 0; i < attempts.size(); ++i) {
      const auto& attempt = attempts[i];
      if (!attempt.startTime || crd::budgetMonth(*attempt.startTime) != month || !attempt.costUsd) continue;
      crd::Usd usd = *attempt.costUsd;
      double hours = attempt.acceleratorHours;
      // The attempt still running: what it has cost since status was last written.
      if (i + 1 == attempts.size() && !attempt.endTime && cost->hourlyUsd && cost->updateTime && now > *cost->updateTime) {
        usd += cost->hourlyUsd->forDuration(now - *cost->updateTime).roundedToCents();
      }
      auto& row = rows[key];
      row.key = key;
      row.usd += usd;
      row.acceleratorHours += hours;
      runsOf[key].insert(id);
      report.total.usd += usd;
      report.total.acceleratorHours += hours;
      counted.insert(id);
    }
  }
  for (auto& [key, row] : rows) {
    row.runs = static_cast<int>(runsOf[key].size());
    report.rows.push_back(row);
  }
  std::sort(report.rows.begin(), report.rows.end(),
            [](const CostRow& a, const CostRow& b) { return a.usd != b.usd ? a.usd > b.usd : a.key < b.key; });
  report.total.key = "TOTAL";
  report.total.runs = static_cast<int>(counted.size());
  return report;
}

int cost(const Args& args) {
  Flags flags("cost",
              "Prints a month's estimated spend (list prices, from status.cost; docs/cost.md) of the cluster's\n"
              "TrainingRuns as a table, most first. Each attempt counts in the month its job started (UTC);\n"
              "a running one up to now. Deleted runs are not in the cluster any more: a budget's spend\n"
              "(vto_budget_spent_usd) is read from Vertex AI instead and still counts them.",
              {{"namespace", 'n', "", "the namespace (default: the kubeconfig context's)"},
               {"all-namespaces", 'A', "false", "every namespace", true},
               {"month", 0, "", "the month as YYYY-MM (default: this month, UTC)"},
               {"by", 0, "namespace", "group by namespace, policy, run or accelerator"},
               {"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then ~/.kube/config"},
               {"allow-insecure-endpoints", 0, "false", "allow plain http to a non-loopback Kubernetes endpoint", true}});
  if (!flags.parse(args)) return 0;
  static const std::map<std::string, CostGrouping> groupings = {{"namespace", CostGrouping::Namespace},
                                                                {"policy", CostGrouping::Policy},
                                                                {"run", CostGrouping::Run},
                                                                {"accelerator", CostGrouping::Accelerator}};
  auto by = groupings.find(flags.get("by"));
  if (by == groupings.end()) throw UsageError("--by must be namespace, policy, run or accelerator");
  auto now = RealClock().now();
  auto month = flags.get("month").empty() ? crd::budgetMonth(now) : flags.get("month");
  if (month.size() != 7 || month[4] != '-' || !std::all_of(month.begin(), month.end(), [](char c) { return c == '-' || std::isdigit(static_cast<unsigned char>(c)); }))
    throw UsageError("--month must be YYYY-MM, e.g. 2026-12");
  auto restConfig = controller::resolveRestConfig(kubeconfigPath(flags.get("kubeconfig")), flags.getBool("allow-insecure-endpoints"));
  bool all = flags.getBool("all-namespaces");
  auto ns = all ? "" : (flags.get("namespace").empty() ? restConfig.defaultNamespace : flags.get("namespace"));
  controller::RestKubeClient kube(restConfig);
  std::vector<crd::TrainingRun> runs;
  controller::ListOptions options;
  options.limit = 500;
  do {
    auto page = kube.list(reconcilers::trainingRunResource(), ns, options);
    for (const auto& item : page.items) {
      try {
        runs.push_back(crd::decodeTrainingRun(item));
      } catch (const std::exception&) {
        // A run that does not decode has no figures vto wrote.
      }
    }
    options.continueToken = page.continueToken;
  } while (!options.continueToken.empty());
  auto report = costReport(runs, month, by->second, now);
  const char* header = by->second == CostGrouping::Namespace ? "NAMESPACE"
                       : by->second == CostGrouping::Policy  ? "POLICY"
                       : by->second == CostGrouping::Run     ? "RUN"
                                                             : "ACCELERATOR";
  std::printf("%-48s %6s %12s %12s\n", header, "RUNS", "ACCEL-HOURS", "COST-USD");
  for (const auto& row : report.rows)
    std::printf("%-48s %6d %12.2f %12s\n", row.key.c_str(), row.runs, row.acceleratorHours, row.usd.plain().c_str());
  std::printf("%-48s %6d %12.2f %12s\n", ("TOTAL " + month).c_str(), report.total.runs, report.total.acceleratorHours,
              report.total.usd.plain().c_str());
  if (report.unpriced > 0)
    std::printf("# %d run(s) without a cost estimate (a price is missing: see their CostEstimated condition)\n", report.unpriced);
  return 0;
}

}  // namespace vto::cmd
