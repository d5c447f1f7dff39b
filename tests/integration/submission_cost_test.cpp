// What submitting TrainingRuns costs the API server, counted by the API server itself
// (apiserver_request_total): issue 14's "API server requests per run at submit". The bench measures the
// same figure on thousands of runs whose jobs start while others are still being submitted (their
// state changes add writes of their own); here the jobs stay queued, so the count is exact.
#include <gtest/gtest.h>

#include <sstream>

#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "crd/yaml_json.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "tests/support/operator_stack.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

TEST(SubmissionCost, EachNewRunCostsOneFinalizerWriteOneStatusWriteAndOneEventAndNothingMore) {
  // An hour in the queue: no job changes state while the test looks.
  OperatorStack stack({"--queue-time", "3600s"});
  const std::string ns = "submission-cost";
  const int runs = 40;
  stack.createNamespace(ns);
  // Stored before the operator starts, as the bench does, so the runs are all there at its first list.
  controller::RestKubeClient kube(controller::loadKubeconfig(stack.cluster().kubeconfig()));
  for (int i = 0; i < runs; ++i) {
    kube.create(reconcilers::trainingRunResource(), ns,
                crd::parseYamlDocuments(simpleRunManifest(ns, "run-" + std::to_string(i))).at(0));
  }
  const auto before = apiServerRequests(stack.cluster());
  stack.startOperator({"--namespace", ns});

  auto cost = [&] { return apiServerRequests(stack.cluster()) - before; };
  ASSERT_TRUE(waitFor(
      [&] {
        auto c = cost();
        return c.runUpdates >= runs && c.statusWrites >= runs && c.eventWrites >= runs;
      },
      seconds(90)))
      << stack.operatorLog();
  // Then until the operator has nothing left to do: a pass that wrote again (its own status write
  // seen as a change, a second Event) would have been queued by now.
  ASSERT_TRUE(waitFor(
      [&] {
        auto metrics = runShell("curl -sf " + stack.metricsUrl()).output;
        return !metrics.empty() && sampleSum(metrics, "workqueue_depth") == 0 &&
               sampleSum(metrics, "controller_runtime_active_workers") == 0;
      },
      seconds(30)));

  auto counted = cost();
  // On a failure: what the API server served, by verb and code (a 409 is a write made twice).
  std::string served;
  std::istringstream metrics(stack.cluster().kubectl("get --raw /metrics").output);
  for (std::string line; std::getline(metrics, line);) {
    bool ours = line.find("resource=\"trainingruns\"") != std::string::npos || line.find("resource=\"events\"") != std::string::npos;
    if (line.rfind("apiserver_request_total{", 0) == 0 && ours) served += line + "\n";
  }
  auto diagnosis = served + stack.operatorLog();
  EXPECT_EQ(counted.runUpdates, runs) << "one finalizer patch per run\n" << diagnosis;
  EXPECT_EQ(counted.statusWrites, runs) << "one status write per run, naming its job\n" << diagnosis;
  EXPECT_EQ(counted.eventWrites, runs) << "one Event per run\n" << diagnosis;
  EXPECT_EQ(counted.runCreates + counted.runDeletes, 0);
  // No list: the informer synced through its watch (streamed initial events), and the API server
  // counts a watch when it ends.
  EXPECT_EQ(counted.reads, 0) << diagnosis;
  EXPECT_EQ(counted.all, 3 * runs);

  auto reasons = stack.kubectlOk("-n " + ns + " get events -o jsonpath='{range .items[*]}{.reason}{\"\\n\"}{end}'");
  int lines = 0, created = 0;
  std::istringstream in(reasons);
  for (std::string reason; std::getline(in, reason); ++lines) created += reason == "JobCreated";
  EXPECT_EQ(lines, runs) << reasons;
  EXPECT_EQ(created, runs) << reasons;
  EXPECT_EQ(stack.listJobs("labels.managed-by=\"vto\"").size(), static_cast<size_t>(runs));
}

}  // namespace
}  // namespace vto::testing
