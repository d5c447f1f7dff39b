// `vto describe` and `kubectl vto describe` as a user runs them: the built binary, the user's kubeconfig
// against a real API server, the Vertex emulator for the jobs (its metadata server as the user's Google
// credentials). It says the operator's cluster identity and, from each job's labels, whose the job is:
// this run's, an earlier run's of the same name that this one took over, or one started outside vto
// that the run adopted by name.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

const char* kClusterId = "describe-test";

// Jobs queue 1 s and train 2 steps of 1 s; the operator runs as cluster "describe-test".
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "2", "--step-time", "1s"});
  static bool started = (shared.startOperator({"--cluster-id", kClusterId}), true);
  (void)started;
  return shared;
}

std::string quote(const std::string& text) { return "'" + text + "'"; }

// The command as a user's shell runs it: the user's kubeconfig, no Google credentials but the emulator's.
CommandResult describe(const std::string& program, const std::string& args) {
  auto dir = stack().dir();
  std::filesystem::create_directories(dir + "/home");
  return runShell("env -u GOOGLE_APPLICATION_CREDENTIALS -u GCE_METADATA_HOST HOME=" + quote(dir + "/home") +
                  " KUBECONFIG=" + quote(stack().cluster().kubeconfig()) + " PATH=" + quote(binDir()) + ":\"$PATH\"" +
                  " VERTEX_EMULATOR=" + stack().emulator().url() + " " + program + " describe " + args + " 2>&1");
}
CommandResult vtoDescribe(const std::string& args) { return describe(quote(binDir() + "/vto"), args); }

std::string applyManifest(const std::string& ns, const std::string& name, const std::string& extraSpec = "") {
  std::string path = stack().dir() + "/" + ns + "-" + name + ".yaml";
  std::ofstream(path) << simpleRunManifest(ns, name, extraSpec);
  stack().kubectlOk("apply -f '" + path + "'");
  return path;
}

TEST(VtoDescribe, SaysTheClusterIdentityAndThatTheJobIsThisRunsOwn) {
  const std::string ns = "describe-own";
  stack().createNamespace(ns);
  applyManifest(ns, "mine");
  ASSERT_TRUE(stack().waitForPhase(ns, "mine", "Succeeded", seconds(60))) << stack().operatorLog();
  auto uid = stack().getRun(ns, "mine")["metadata"]["uid"].get<std::string>();
  auto job = stack().jobOfAttempt(ns, "mine", 1, seconds(10));

  auto said = vtoDescribe("trun/mine -n " + ns + " --cluster-id " + kClusterId);
  ASSERT_EQ(said.exitCode, 0) << said.output;
  EXPECT_NE(said.output.find("UID:               " + uid + "\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("Cluster Identity:  describe-test (--cluster-id)\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("Run UIDs:          " + uid + " (this run)\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find(" " + job + "\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("State:  JOB_STATE_SUCCEEDED\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("  made by this cluster (describe-test) for this run\n"), std::string::npos)
      << said.output;

  // With the operator's key, the job's vto-owner tag is checked too.
  auto checked = vtoDescribe("trun/mine -n " + ns + " --cluster-id " + kClusterId + " --ownership-key-file " +
                             quote(stack().ownershipKeyFile()));
  EXPECT_NE(checked.output.find("made by this cluster (describe-test), its vto-owner tag verified, for this run\n"),
            std::string::npos)
      << checked.output;

  // Without --cluster-id it computes the operator's default, the kube-system namespace's uid: this
  // operator runs with another identity, so the job is another cluster's.
  auto kubeSystem = stack().cluster().kubectl("get namespace kube-system -o jsonpath={.metadata.uid}").output;
  auto byDefault = describe("kubectl vto", "trun/mine -n " + ns);
  ASSERT_EQ(byDefault.exitCode, 0) << byDefault.output;
  EXPECT_NE(byDefault.output.find("Cluster Identity:  " + kubeSystem + " (the kube-system namespace's uid"), std::string::npos)
      << byDefault.output;
  EXPECT_NE(byDefault.output.find("  another cluster's (describe-test): not this run's\n"), std::string::npos)
      << byDefault.output;

  auto missing = vtoDescribe("trun/nope -n " + ns);
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_NE(missing.output.find("vto describe: trainingrun nope not found in namespace " + ns), std::string::npos) << missing.output;
}

// A run deleted with deletionPolicy Orphan while its job waits for capacity, the operator restarted and
// the manifest applied again: the new run took the job over, and describe says so with its Event.
TEST(VtoDescribe, SaysARunTookOverItsNamesakesJob) {
  const std::string ns = "describe-adopt";
  stack().createNamespace(ns);
  auto hold = runShell("curl -sf -X POST -H 'Content-Type: application/json' --data-binary "
                       "'[{\"location\": \"us-central1\", \"available\": false, \"mode\": \"hold\"}]' " +
                       stack().emulator().url() + "/emulator/v1/capacity");
  ASSERT_EQ(hold.exitCode, 0) << hold.output;
  auto path = applyManifest(ns, "phoenix", "  deletionPolicy: Orphan\n");
  auto job = stack().jobOfAttempt(ns, "phoenix", 1, seconds(30));
  ASSERT_FALSE(job.empty()) << stack().getRun(ns, "phoenix").dump(2);
  auto firstUid = stack().getRun(ns, "phoenix")["metadata"]["uid"].get<std::string>();
  stack().kubectlOk("-n " + ns + " delete trun phoenix --wait=true --timeout=60s");
  stack().stopOperator(SIGTERM);
  stack().startOperator({"--cluster-id", kClusterId});
  stack().kubectlOk("apply -f '" + path + "'");
  ASSERT_TRUE(waitFor([&] { return stack().eventsOf(ns, "phoenix").find("JobAdopted") != std::string::npos; }, seconds(30)))
      << stack().eventsOf(ns, "phoenix") << stack().operatorLog();

  auto said = vtoDescribe("trun/phoenix -n " + ns + " --cluster-id " + kClusterId);
  ASSERT_EQ(said.exitCode, 0) << said.output;
  EXPECT_NE(said.output.find(" " + job + "\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("  made by this cluster (describe-test) for an earlier run of this name (uid " +
                             firstUid + ", attempt 1): taken over (re-applied"),
            std::string::npos)
      << said.output;
  EXPECT_NE(said.output.find("  Normal  JobAdopted  "), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("which a run of the same name (uid " + firstUid), std::string::npos) << said.output;
}

// A job started by hand, handed to a run by spec.adoptJob, and a second run refused the same job: the
// first run's job is started outside vto and its own; the second run's Event says who holds it.
TEST(VtoDescribe, SaysAJobStartedOutsideVtoIsTheRunsThatAdoptedIt) {
  const std::string ns = "describe-by-name";
  stack().createNamespace(ns);
  nlohmann::json body = {
      {"displayName", "started-by-hand"},
      {"labels", {{"owner", "alice"}}},
      {"jobSpec",
       {{"workerPoolSpecs", nlohmann::json::array({{{"machineSpec", {{"machineType", "n1-standard-4"}}},
                                                    {"replicaCount", "1"},
                                                    {"containerSpec", {{"imageUri", "us-central1-docker.pkg.dev/test-project/train/model:1"}}}}})}}}};
  auto byHand = stack().vertex().createJob({kTestProject, kTestLocation}, vertex::JobKind::Custom, body).name;
  applyManifest(ns, "adopter", "  adoptJob: " + byHand + "\n");
  applyManifest(ns, "second", "  adoptJob: " + byHand + "\n");
  ASSERT_TRUE(waitFor([&] { return stack().eventsOf(ns, "adopter").find("JobAdopted") != std::string::npos; }, seconds(30)))
      << stack().eventsOf(ns, "adopter") << stack().getRun(ns, "adopter").dump(2);
  ASSERT_TRUE(waitFor([&] { return stack().eventsOf(ns, "second").find("AdoptionRefused") != std::string::npos; }, seconds(30)))
      << stack().eventsOf(ns, "second") << stack().getRun(ns, "second").dump(2);

  auto said = vtoDescribe("trun/adopter -n " + ns + " --cluster-id " + kClusterId);
  ASSERT_EQ(said.exitCode, 0) << said.output;
  EXPECT_NE(said.output.find("Adopt Job:         " + byHand + " (spec.adoptJob)\n"), std::string::npos) << said.output;
  EXPECT_NE(said.output.find("  started outside vto (no vto labels), adopted by this run (spec.adoptJob)\n"),
            std::string::npos)
      << said.output;
  auto refused = vtoDescribe("trun/second -n " + ns + " --cluster-id " + kClusterId);
  ASSERT_EQ(refused.exitCode, 0) << refused.output;
  EXPECT_NE(refused.output.find("Phase:             Invalid\n"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("  Warning  AdoptionRefused  "), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find(ns + "/adopter"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace vto::testing
