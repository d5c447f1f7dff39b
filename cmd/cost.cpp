// vto cost: a month's spend by namespace, policy, run, accelerator or team, from the jobs vto labelled
// that Vertex holds (the budgets' reading and pricing, reconcilers/tenancy/job_spend.h), read with the
// user's Google credentials; the cluster's runs, read with the user's kubeconfig, name them (list
// prices; docs/cost.md).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "base/gcp_names.h"
#include "base/utf8.h"
#include "cmd/cluster_identity.h"
#include "cmd/commands.h"
#include "cmd/cost_report.h"
#include "cmd/flags.h"
#include "cmd/price_file.h"
#include "cmd/user_access.h"
#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "crd/labels.h"
#include "crd/render.h"
#include "crd/retraining_policy.h"
#include "governance/budget.h"
#include "reconcilers/tenancy/job_spend.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "vertex/api_error.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {
namespace {

std::string labelOr(const std::map<std::string, std::string>& labels, const char* key, const std::string& otherwise) {
  auto found = labels.find(key);
  return found == labels.end() || found->second.empty() ? otherwise : found->second;
}

// The run a job is of, as the cluster knows it: by the job's name in a run's attempts (a job a run
// took over), else by its vto-run-uid.
struct ClusterRuns {
  std::map<std::string, const crd::TrainingRun*> byJob, byUid;
  explicit ClusterRuns(const std::vector<crd::TrainingRun>& runs) {
    for (const auto& run : runs) {
      byUid[crd::sanitizeLabelValue(run.metadata.uid)] = &run;
      for (const auto& attempt : run.status.history.attempts)
        if (!attempt.jobName.empty()) byJob[attempt.jobName] = &run;
    }
  }
  const crd::TrainingRun* of(const CostedJob& job) const {
    if (auto found = byJob.find(job.name); found != byJob.end()) return found->second;
    auto uid = byUid.find(labelOr(job.labels, crd::kRunUidLabel, ""));
    return uid == byUid.end() ? nullptr : uid->second;
  }
};

}  // namespace

CostReport costReport(const std::vector<CostedJob>& jobs, const std::vector<crd::TrainingRun>& runs,
                      const std::string& month, CostGrouping by) {
  ClusterRuns cluster(runs);
  std::map<std::string, CostRow> rows;
  std::map<std::string, std::set<std::string>> runsOf;
  std::set<std::string> counted, deleted, listed;
  CostReport report;
  for (const auto& job : jobs) {
    listed.insert(job.name);
    if (!job.cost) {
      ++report.unpricedJobs;
      continue;
    }
    const auto* run = cluster.of(job);
    auto ns = run != nullptr ? run->metadata.namespace_ : labelOr(job.labels, crd::kNamespaceLabel, "-");
    // A deleted run is named from its job's labels (label values: possibly cut to 63 characters).
    auto id = run != nullptr ? ns + "/" + run->metadata.name
                             : ns + "/" + labelOr(job.labels, crd::kNameLabel, "-") + " (deleted)";
    auto identity = labelOr(job.labels, crd::kRunUidLabel, job.name);
    if (run == nullptr) deleted.insert(identity);
    std::string key;
    switch (by) {
      case CostGrouping::Namespace: key = ns; break;
      case CostGrouping::Run: key = id; break;
      case CostGrouping::Policy: {
        std::string policy;
        if (run != nullptr) {
          auto label = run->metadata.labels.find(crd::kRetrainingPolicyLabel);
          if (label != run->metadata.labels.end()) policy = label->second;
        } else {
          policy = labelOr(job.labels, crd::kPolicyLabel, "");
        }
        key = policy.empty() ? "-" : ns + "/" + policy;
        break;
      }
      case CostGrouping::Accelerator: key = job.acceleratorType.empty() ? "none" : job.acceleratorType; break;
      case CostGrouping::Team: key = labelOr(job.labels, crd::kTeamLabel, "-"); break;
    }
    auto& row = rows[key];
    row.key = key;
    row.usd += job.cost->spent;
    row.acceleratorHours += job.cost->acceleratorHours;
    runsOf[key].insert(identity);
    report.total.usd += job.cost->spent;
    report.total.acceleratorHours += job.cost->acceleratorHours;
    counted.insert(identity);
  }
  for (auto& [key, row] : rows) {
    row.runs = static_cast<int>(runsOf[key].size());
    report.rows.push_back(row);
  }
  std::sort(report.rows.begin(), report.rows.end(),
            [](const CostRow& a, const CostRow& b) { return a.usd != b.usd ? a.usd > b.usd : a.key < b.key; });
  report.total.key = "TOTAL";
  report.total.runs = static_cast<int>(counted.size());
  report.deletedRuns = static_cast<int>(deleted.size());
  for (const auto& run : runs) {
    for (const auto& attempt : run.status.history.attempts) {
      if (attempt.jobName.empty() || !attempt.startTime || governance::budgetMonth(*attempt.startTime) != month) continue;
      if (listed.count(attempt.jobName) > 0) continue;
      report.notListed.push_back(run.metadata.namespace_ + "/" + run.metadata.name);
      break;
    }
  }
  return report;
}

namespace {

Flags costFlags() {
  return Flags(
      "cost",
      "vto cost [-n NAMESPACE | -A] [flags]: a month's estimated spend (list prices; docs/cost.md) as a table,\n"
      "most first, read from the jobs vto labelled that Vertex AI holds: the same jobs, priced by the same\n"
      "function, as a team budget's spend (vto_budget_spent_usd), so runs deleted from the cluster (by\n"
      "ttlSecondsAfterFinished, or by hand) still count. Each job counts in the month Vertex created it (UTC),\n"
      "a running one up to now. The cluster's runs name the jobs where they still exist; a deleted run is\n"
      "named from its job's labels and marked (deleted).\n\n"
      "The runs are read with your kubeconfig, the jobs with your Google credentials\n"
      "(GOOGLE_APPLICATION_CREDENTIALS, then `gcloud auth application-default login`'s file, then the\n"
      "metadata server): roles/aiplatform.viewer on each project read. The projects and locations read are\n"
      "those of the jobs the cluster's runs name, unless --project / --location say (name the places of\n"
      "deleted runs that no remaining run names). Only this cluster's jobs count (their vto-cluster label;\n"
      "--ownership-key-file checks their vto-owner tags too, as the operator's budgets do).\n\n"
      "Exit status 2: a bad flag, no Google credentials, or nothing to read; 1: Vertex AI or the cluster\n"
      "did not answer (nothing is printed then: a partial sum would be wrong).",
      {{"namespace", 'n', "", "the namespace (default: the kubeconfig context's)"},
       {"all-namespaces", 'A', "false", "every namespace", true},
       {"month", 0, "", "the month as YYYY-MM (default: this month, UTC)"},
       {"by", 0, "namespace", "group by namespace, policy, run, accelerator or team (the budget rule)"},
       {"project", 0, "", "Google Cloud projects to read, comma-separated (default: those of the runs' jobs)"},
       {"location", 0, "", "Vertex AI regions to read, comma-separated (default: those of the runs' jobs)"},
       {"price-catalog", 0, "", "the operator's price file, when it runs with one (default: the built-in table)"},
       {"cluster-id", 0, "", "the operator's cluster identity (the chart's clusterId); default: the kube-system namespace's uid"},
       {"ownership-key-file", 0, "", "the operator's ownership key file (ownership.yaml of its Secret): check the jobs' vto-owner tags"},
       {"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then ~/.kube/config"},
       {"vertex-endpoint", 0, "", "Vertex AI base URL (default $VERTEX_EMULATOR, else https://LOCATION-aiplatform.googleapis.com)"},
       {"allow-insecure-endpoints", 0, "false", "allow plain http (credentials in the clear) to a non-loopback endpoint", true}});
}

std::vector<std::string> commaList(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream in(value);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<crd::TrainingRun> listRuns(controller::KubeClient& kube, const std::string& ns) {
  std::vector<crd::TrainingRun> runs;
  controller::ListOptions options;
  options.limit = 500;
  do {
    auto page = kube.list(reconcilers::trainingRunResource(), ns, options);
    for (const auto& item : page.items) {
      try {
        runs.push_back(crd::decodeTrainingRun(item));
      } catch (const std::exception&) {
        // A run that does not decode names nothing; its jobs still count, named from their labels.
      }
    }
    options.continueToken = page.continueToken;
  } while (!options.continueToken.empty());
  return runs;
}

// The projects x locations to read: the flags, else the places of the jobs the runs name.
std::vector<Location> placesToRead(const Flags& flags, const std::vector<crd::TrainingRun>& runs) {
  std::set<std::string> projects, locations;
  for (const auto& run : runs) {
    for (const auto& attempt : run.status.history.attempts) {
      if (auto name = vertex::parseResourceName(attempt.jobName)) {
        projects.insert(name->where.project);
        locations.insert(name->where.location);
      }
    }
  }
  if (auto given = commaList(flags.get("project")); !given.empty()) projects = {given.begin(), given.end()};
  if (auto given = commaList(flags.get("location")); !given.empty()) locations = {given.begin(), given.end()};
  if (projects.empty() || locations.empty())
    throw UsageError("no place to read: no run in the cluster names a Vertex job; say where with --project P --location L");
  std::vector<Location> places;
  for (const auto& project : projects) {
    for (const auto& location : locations) {
      Location place{project, location};
      try {
        vertex::checkLocation(place);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--project/--location: ") + e.what());
      }
      places.push_back(place);
    }
  }
  return places;
}

std::string placesInWords(const std::vector<Location>& places) {
  std::string out;
  for (const auto& place : places) out += (out.empty() ? "" : ", ") + place.project + "/" + place.location;
  return out;
}

}  // namespace

int cost(const Args& args) {
  auto flags = costFlags();
  if (!flags.parse(args)) return 0;
  static const std::map<std::string, CostGrouping> groupings = {
      {"namespace", CostGrouping::Namespace}, {"policy", CostGrouping::Policy}, {"run", CostGrouping::Run},
      {"accelerator", CostGrouping::Accelerator}, {"team", CostGrouping::Team}};
  auto by = groupings.find(flags.get("by"));
  if (by == groupings.end()) throw UsageError("--by must be namespace, policy, run, accelerator or team");
  RealClock clock;
  auto now = clock.now();
  auto month = flags.get("month").empty() ? governance::budgetMonth(now) : flags.get("month");
  std::string createdIn;
  try {
    createdIn = reconcilers::createdInMonth(month, /*bounded=*/true);
  } catch (const std::invalid_argument&) {
    throw UsageError("--month must be YYYY-MM, e.g. 2026-12");
  }
  bool allowInsecure = flags.getBool("allow-insecure-endpoints");
  auto vertexEndpoint = userVertexEndpoint(flags.get("vertex-endpoint"), allowInsecure);
  const auto& priceFile = flags.get("price-catalog");
  auto prices = priceFile.empty() ? governance::PriceCatalog::builtIn() : readPriceCatalog(priceFile);

  // The runs, as the user may read them: they name the jobs and say where to look.
  auto restConfig = controller::resolveRestConfig(kubeconfigPath(flags.get("kubeconfig")), allowInsecure);
  bool all = flags.getBool("all-namespaces");
  auto ns = all ? "" : (flags.get("namespace").empty() ? restConfig.defaultNamespace : flags.get("namespace"));
  if (!ns.empty() && !isValidGcpLabelValue(ns)) throw UsageError("-n \"" + ns.substr(0, 64) + "\" is not a namespace name");
  controller::RestKubeClient kube(restConfig);
  auto runs = listRuns(kube, ns);
  auto places = placesToRead(flags, runs);

  // Whose jobs count: this cluster's, as the operator tells them apart (one try at the API server).
  std::stop_source stopped;
  stopped.request_stop();
  std::string clusterId;
  try {
    clusterId = resolveClusterId(kube, flags.get("cluster-id"), stopped.get_token());
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(std::string("cannot read the kube-system namespace for the cluster identity (") + e.what() +
                     "): pass --cluster-id (the chart's clusterId)");
  }
  std::unique_ptr<reconcilers::JobOwnership> ownership;
  if (auto keyFile = flags.get("ownership-key-file"); !keyFile.empty()) {
    ownership = jobOwnership(clusterId, keyFile);
  } else {
    ownership = std::make_unique<reconcilers::JobOwnership>(clusterId, reconcilers::OwnershipKeys{});
  }

  // The jobs, with the user's own Google credentials.
  vertex::PooledHttpTransport http;
  auto tokens = userTokensOrSignIn(http, clock, vertexEndpoint, "vto cost reads the jobs from Vertex AI as you: to sign in");
  vertex::VertexClientOptions options;
  options.endpoint = vertexEndpoint;
  options.allowInsecure = allowInsecure;
  options.timeout = std::chrono::seconds(30);
  vertex::RestVertexClient vertexClient(http, *tokens, clock, options);
  auto filter = (ns.empty() ? reconcilers::hasLabel(crd::kRunUidLabel) : reconcilers::labelIs(crd::kNamespaceLabel, ns)) +
                " AND " + createdIn;
  std::vector<CostedJob> jobs;
  for (const auto& place : places) {
    for (auto kind : {vertex::JobKind::Custom, vertex::JobKind::HyperparameterTuning}) {
      try {
        reconcilers::readJobSpend(vertexClient, place, kind, filter, ownership.get(), prices, now,
                                  [&](const vertex::Job& job, const governance::JobPricing& pricing) {
                                    if (job.createTime && governance::budgetMonth(*job.createTime) != month) return;
                                    CostedJob costed{job.name, job.labels, pricing.cost, ""};
                                    for (const auto& pool : governance::shapeOfJob(job.raw, place.location).pools) {
                                      if (pool.acceleratorType.empty()) continue;
                                      costed.acceleratorType = pool.acceleratorType;
                                      break;
                                    }
                                    jobs.push_back(std::move(costed));
                                  });
      } catch (const std::exception& error) {
        auto forbidden = dynamic_cast<const vertex::ApiError*>(&error);
        std::string what = forbidden != nullptr && forbidden->httpStatus() == 403
                               ? "permission denied: listing jobs takes roles/aiplatform.viewer on " + place.project
                               : std::string(error.what()).substr(0, 300);
        throw std::runtime_error(
            "cannot read the jobs in " + place.project + "/" + place.location + " from Vertex AI (" + what +
            "); vto cost counts what Vertex holds, so it prints nothing rather than a partial sum. Check "
            "--vertex-endpoint, your credentials and --project/--location; meanwhile `kubectl get trun -A -o wide` "
            "shows each run still in the cluster with its own estimate (Cost)");
      }
    }
  }

  auto report = costReport(jobs, runs, month, by->second);
  const char* header = by->second == CostGrouping::Namespace ? "NAMESPACE"
                       : by->second == CostGrouping::Policy  ? "POLICY"
                       : by->second == CostGrouping::Run     ? "RUN"
                       : by->second == CostGrouping::Team    ? "TEAM"
                                                             : "ACCELERATOR";
  std::printf("%-48s %6s %12s %12s\n", header, "RUNS", "ACCEL-HOURS", "COST-USD");
  // Keys come from jobs' labels and resources, which anyone who may create a job in the project writes.
  for (const auto& row : report.rows)
    std::printf("%-48s %6d %12.2f %12s\n", escapeControls(row.key).c_str(), row.runs, row.acceleratorHours,
                row.usd.plain().c_str());
  std::printf("%-48s %6d %12.2f %12s\n", ("TOTAL " + month).c_str(), report.total.runs, report.total.acceleratorHours,
              report.total.usd.plain().c_str());
  std::printf("# the jobs Vertex AI holds in %s created in %s (UTC), price table %s\n", placesInWords(places).c_str(),
              month.c_str(), prices.id().c_str());
  if (report.deletedRuns > 0)
    std::printf("# %d run(s) no longer in the cluster, counted from their jobs (--by run marks them (deleted))\n",
                report.deletedRuns);
  if (report.unpricedJobs > 0)
    std::printf("# %d job(s) without a cost estimate (the price table lacks a price): not counted\n", report.unpricedJobs);
  if (!report.notListed.empty()) {
    std::printf("# %zu run(s) in the cluster name jobs of %s that Vertex AI did not list here (in a project or location "
                "not read, or deleted from Vertex): not counted, e.g. %s\n",
                report.notListed.size(), month.c_str(), report.notListed.front().c_str());
  }
  return 0;
}

}  // namespace vto::cmd
