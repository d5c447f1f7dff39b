// One cost model, two readers: a run's status.cost (decide, from the run's spec and the job it read)
// and a budget's spend (the ledger, from the job as Vertex lists it) price the same job to the same
// cent, for plain, multi-pool, tuning (between trials too) and TPU-slice runs, running and ended.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/render.h"
#include "reconcilers/tenancy/budget_ledger.h"
#include "reconcilers/trainingrun/decide.h"
#include "tests/fakes/vertex_fake_client.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;
using Seconds = std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-14T09:30:00Z");  // when both read the job

// Prices with four decimals, so that rounding to the cent matters.
const governance::PriceCatalog& prices() {
  static const auto catalog = governance::PriceCatalog::parse(R"(
date: "2026-12-01"
locations:
  us-central1:
    machines: {n1-standard-8: {standard: 0.4370}, n1-highcpu-16: {standard: 0.6523}, ct5lp-hightpu-4t: {standard: 1.1}}
    accelerators: {NVIDIA_TESLA_T4: {standard: 0.4025}, TPU_V5_LITEPOD: {standard: 1.2}}
)",
                                                       "t");
  return catalog;
}

const char* kTuning = R"({"hyperparameterTuning": {"maxTrialCount": 6, "parallelTrialCount": 2,
    "metrics": [{"metricId": "acc", "goal": "Maximize"}], "parameters": [{"parameterId": "lr", "double": {"min": 0.001, "max": 0.1}}]}})";

crd::TrainingRun runWith(const std::string& extraSpec) {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1, "resourceVersion": "5"},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
             "scheduling": {"timeout": "5h"}, "baseOutputDirectory": "gs://bucket/r"}})");
  object["spec"].merge_patch(json::parse(extraSpec));
  return crd::decodeTrainingRun(object);
}

struct Trial {
  Clock::duration start;
  std::optional<Clock::duration> end;  // before T0
};

// The job Vertex holds for `run`, started 2 h 7 min 13 s before T0, with `trials`, ended 11 s ago when `ended`.
vertex::Job jobOf(testing::FakeVertexClient& vertex, const crd::TrainingRun& run, const std::vector<Trial>& trials, bool ended) {
  auto kind = crd::jobKindOf(run.spec);
  auto job = vertex.createJob({"test-project", "us-central1"}, kind, crd::renderJob(run, 1, ""));
  json patch = {{"createTime", rfc3339Exact(T0 - hours(3))},
                {"startTime", rfc3339Exact(T0 - hours(2) - minutes(7) - Seconds(13))},
                {"state", ended ? "JOB_STATE_SUCCEEDED" : "JOB_STATE_RUNNING"}};
  if (ended) patch["endTime"] = rfc3339Exact(T0 - Seconds(11));
  json listed = json::array();
  int id = 0;
  for (const auto& trial : trials) {
    json t = {{"id", std::to_string(++id)}, {"startTime", rfc3339Exact(T0 - trial.start)}};
    if (trial.end) t["endTime"] = rfc3339Exact(T0 - *trial.end);
    listed.push_back(t);
  }
  if (!trials.empty()) patch["trials"] = listed;
  vertex.patchJob(job.name, patch);
  return vertex.getJob(job.name);
}

// status.cost as decide writes it for the run whose attempt 1 is `job`, read this pass.
Usd statusCost(const crd::TrainingRun& run, const vertex::Job& job) {
  Observed o;
  o.now = T0;
  o.run = run;
  o.metadata = run.metadata;
  o.defaults = {"test-project", "us-central1"};
  o.hasFinalizer = true;
  o.statusStored = true;
  o.status.observedGeneration = 1;
  o.status.phase = crd::Phase::Queued;
  crd::Attempt first;
  first.attempt = 1;
  first.jobName = job.name;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  o.prices = &prices();
  o.vertex.job = cachedJobOf(job, T0);
  o.checkpoints.listed = true;
  auto plan = decide(o);
  EXPECT_TRUE(plan.status && plan.status->cost) << (plan.status ? plan.status->message : "no status");
  return plan.status && plan.status->cost ? plan.status->cost->estimatedUsd : Usd::max();
}

TEST(CostAgreement, StatusAndTheBudgetLedgerPriceEveryJobTheSame) {
  struct Case {
    std::string name, spec;
    std::vector<Trial> trials;
    Usd expected;  // at T0, running
  };
  const std::vector<Case> cases = {
      // 0.4370 + 2 x 0.4025 = 1.2420/h for 2:07:13
      {"plain", "{}", {}, Usd::cents(263)},
      // 3 x 1.2420 + 2 x 0.6523 = 5.0306/h
      {"multi-pool",
       R"({"distribution": {"strategy": "PyTorchDDP", "workerCount": 3, "reductionServer": {"replicaCount": 2, "machineType": "n1-highcpu-16"}}})",
       {},
       Usd::cents(1067)},
      // 1:30 + 1:30 + 0:40 + 0:25 trial time at 1.2420/h
      {"tuning, trials running", kTuning, {{hours(2), minutes(30)}, {hours(2), minutes(30)}, {minutes(40), std::nullopt},
                                            {minutes(25), std::nullopt}}, Usd::cents(507)},
      {"tuning, between trials", kTuning, {{hours(2), hours(1)}, {hours(2), minutes(50)}}, Usd::cents(269)},
      // 4 hosts x 1.1 + 16 chips x 1.2 = 23.6/h
      {"TPU slice",
       R"({"resources": {"machineType": "ct5lp-hightpu-4t", "acceleratorType": "TPU_V5_LITEPOD", "acceleratorCount": 4, "tpuTopology": "4x4"}})",
       {},
       Usd::cents(5004)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto run = runWith(c.spec);
    for (bool ended : {false, true}) {
      SCOPED_TRACE(ended ? "ended" : "running");
      testing::FakeVertexClient vertex;
      auto job = jobOf(vertex, run, c.trials, ended);
      auto ledger = costOfJob(job, prices(), T0).cost;
      ASSERT_TRUE(ledger.has_value());
      EXPECT_EQ(statusCost(run, job), ledger->spent);
      if (!ended) {
        EXPECT_EQ(ledger->spent, c.expected);
      }
    }
  }
}

}  // namespace
}  // namespace vto::reconcilers
