// An upgrade of the API version on a real API server (docs/upgrading.md): objects stored by the
// release before as vto.dev/v1alpha1 stay readable when v1beta1 becomes the storage version, `vto
// migrate` rewrites each once and records that only v1beta1 is stored, and the new operator follows
// the runs the old API created.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>

#include "crd/yaml_json.h"
#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const char* kNamespace = "upgrade";

// The CRDs as the release before installed them: v1alpha1 alone, stored (today's schema, which v1beta1
// shares: the versions differ in name only).
void applyTheReleaseBeforesCrds(TestCluster& cluster, const std::string& dir) {
  auto crds = runShell("'" + binDir() + "/vto' crd");
  ASSERT_EQ(crds.exitCode, 0) << crds.output;
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (auto crd : crd::parseYamlDocuments(crds.output)) {
    json old;
    for (auto version : crd["spec"]["versions"]) {
      if (version["name"] != "v1alpha1") continue;
      version["storage"] = true;
      version.erase("deprecated");
      version.erase("deprecationWarning");
      old = version;
    }
    ASSERT_TRUE(old.is_object()) << "vto crd serves v1alpha1";
    crd["spec"]["versions"] = json::array({old});
    list["items"].push_back(crd);
  }
  std::ofstream(dir + "/old-crds.json") << list.dump();
  auto applied = cluster.kubectl("apply --server-side -f '" + dir + "/old-crds.json'");
  ASSERT_EQ(applied.exitCode, 0) << applied.output;
  ASSERT_EQ(cluster.kubectl("wait --for=condition=Established crd/trainingruns.vto.dev crd/retrainingpolicies.vto.dev --timeout=60s")
                .exitCode,
            0);
}

std::string storedVersions(TestCluster& cluster, const std::string& crd) {
  return cluster.kubectl("get crd " + crd + " -o jsonpath={.status.storedVersions}").output;
}

std::string runManifest(int i) {
  return "apiVersion: vto.dev/v1alpha1\nkind: TrainingRun\nmetadata:\n  name: before-" + std::to_string(i) +
         "\n  namespace: " + kNamespace +
         "\nspec:\n  framework: pytorch\n  trainer:\n    container:\n"
         "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
         "  resources:\n    machineType: n1-standard-4\n"
         "  baseOutputDirectory: gs://" + std::string(kTestBucket) + "/" + kNamespace + "/before-" + std::to_string(i) + "\n";
}

TEST(Upgrade, ObjectsStoredAsV1alpha1AreMigratedOnceAndTheNewOperatorFollowsThem) {
  auto& cluster = sharedCluster();
  std::string dir = makeTempDir("vto-upgrade");
  applyTheReleaseBeforesCrds(cluster, dir);
  // What the release before left: runs and a suspended policy, stored as v1alpha1. VTO_MIGRATION_RUNS
  // (not in CI) measures the migration of a larger fleet.
  const char* wanted = std::getenv("VTO_MIGRATION_RUNS");
  int runs = wanted != nullptr ? std::max(1, std::atoi(wanted)) : 20;
  ASSERT_EQ(cluster.kubectl(std::string("create namespace ") + kNamespace).exitCode, 0);
  std::string manifests;
  for (int i = 0; i < runs; ++i) manifests += runManifest(i) + "---\n";
  manifests += "apiVersion: vto.dev/v1alpha1\nkind: RetrainingPolicy\nmetadata:\n  name: nightly\n  namespace: " +
               std::string(kNamespace) +
               "\nspec:\n  suspend: true\n  template:\n    spec:\n      framework: pytorch\n      trainer:\n        container:\n"
               "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
               "      resources: {machineType: n1-standard-4}\n      baseOutputDirectory: gs://" +
               std::string(kTestBucket) + "/nightly\n  triggers:\n    schedule: {cron: \"0 3 * * *\"}\n";
  std::ofstream(dir + "/before.yaml") << manifests;
  auto created = cluster.kubectl("apply -f '" + dir + "/before.yaml'");
  ASSERT_EQ(created.exitCode, 0) << created.output;
  EXPECT_EQ(storedVersions(cluster, "trainingruns.vto.dev"), "[\"v1alpha1\"]");

  // The upgrade: the new CRDs (the stack applies `vto crd`), both versions served, v1beta1 stored.
  OperatorStack stack({"--queue-time", "1s", "--steps", "2", "--step-time", "1s"});
  EXPECT_EQ(storedVersions(cluster, "trainingruns.vto.dev"), "[\"v1alpha1\",\"v1beta1\"]");
  auto old = cluster.kubectl(std::string("-n ") + kNamespace + " get trainingruns.v1alpha1.vto.dev before-0 -o name 2>&1");
  EXPECT_NE(old.output.find("deprecated"), std::string::npos) << "v1alpha1 still served, with a warning: " << old.output;

  auto started = std::chrono::steady_clock::now();
  auto migrated = runShell("'" + binDir() + "/vto' migrate --kubeconfig '" + cluster.kubeconfig() + "'");
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(migrated.exitCode, 0) << migrated.output;
  std::cout << "vto migrate of " << runs << " runs and 1 policy: " << took << " s\n" << migrated.output;
  EXPECT_NE(migrated.output.find("trainingruns.vto.dev: stored versions were v1alpha1,v1beta1; rewrote " + std::to_string(runs)),
            std::string::npos)
      << migrated.output;
  EXPECT_EQ(storedVersions(cluster, "trainingruns.vto.dev"), "[\"v1beta1\"]");
  EXPECT_EQ(storedVersions(cluster, "retrainingpolicies.vto.dev"), "[\"v1beta1\"]");
  auto again = runShell("'" + binDir() + "/vto' migrate --kubeconfig '" + cluster.kubeconfig() + "'");
  // The CRDs fit client-side apply too (its annotation holds 256 KiB), as the Go peer's bench and many
  // users apply them.
  auto clientSide = runShell("'" + binDir() + "/vto' crd | kubectl --kubeconfig='" + cluster.kubeconfig() + "' apply -f -");
  EXPECT_EQ(clientSide.exitCode, 0) << clientSide.output;
  EXPECT_NE(again.output.find("nothing to migrate"), std::string::npos) << again.output;

  // The operator does the same at start, on its own: told again that v1alpha1 objects are stored, it
  // rewrites them and records v1beta1 alone.
  auto reset = cluster.kubectl("patch crd trainingruns.vto.dev --subresource=status --type=merge "
                               "-p '{\"status\":{\"storedVersions\":[\"v1alpha1\",\"v1beta1\"]}}'");
  ASSERT_EQ(reset.exitCode, 0) << reset.output;
  // The new operator follows what the old API created: one job per run, each to its end; the
  // suspended policy stays suspended and creates nothing.
  stack.startOperator();
  EXPECT_TRUE(waitFor([&] { return storedVersions(cluster, "trainingruns.vto.dev") == "[\"v1beta1\"]"; }, seconds(60)))
      << stack.operatorLog();
  // Each object is written once, by the migration or by a reconciler's own write (its finalizer) that
  // came first: the two counts add up to the runs.
  std::smatch counts;
  auto log = stack.operatorLog();
  ASSERT_TRUE(std::regex_search(log, counts, std::regex(R"(trainingruns\.vto\.dev: rewrote (\d+) objects stored at an older version \((\d+) written meanwhile\))")))
      << log;
  EXPECT_EQ(std::stoi(counts[1]) + std::stoi(counts[2]), runs) << counts[0];
  // Jobs are created at the operator's create pace (60 a minute by default): a fleet larger than the
  // test's default of 20 waits its turn.
  auto allowed = seconds(180 + runs);  // a second per run at 60 creates a minute
  for (int i = 0; i < std::min(runs, 20); ++i) {
    std::string name = "before-" + std::to_string(i);
    ASSERT_TRUE(stack.waitForPhase(kNamespace, name, "Succeeded", allowed)) << stack.getRun(kNamespace, name).dump(2);
    auto uid = stack.getRun(kNamespace, name)["metadata"]["uid"].get<std::string>();
    vertex::ListOptions options;
    options.filter = "labels.vto-run-uid=\"" + uid + "\"";
    EXPECT_EQ(stack.vertex().listJobs({kTestProject, kTestLocation}, vertex::JobKind::Custom, options).jobs.size(), 1u) << name;
  }
  auto policyRuns = cluster.kubectl(std::string("-n ") + kNamespace + " get trainingruns.v1beta1.vto.dev -l vto.dev/retraining-policy=nightly -o name");
  EXPECT_EQ(policyRuns.output, "") << "a suspended policy fired";
}

}  // namespace
}  // namespace vto::testing
