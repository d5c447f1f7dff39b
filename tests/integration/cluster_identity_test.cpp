// Day two across clusters (docs/upgrading.md, "Disaster recovery"; docs/security.md): two real API
// servers, each with its own operator, on one emulator project.
// - A cluster rebuilt with the lost one's identity: runs restored from a backup without status (as
//   Velero restores them) take their history back, a finished run stays finished with its job and
//   cost, an unfinished job is followed to its end, never started twice; a manifest re-applied from
//   Git of a finished run trains again (the documented choice).
// - Two clusters of different identities sharing the project: neither counts the other's jobs against
//   its accelerator cap, adopts them, or cancels them.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using vertex::jobStateName;

const char* kNamespace = "day-two";

// Jobs train 4 steps of 1 s after 1 s in the queue. n1-standard-8 jobs are held PENDING for capacity
// until a test lets them run: an unfinished job for as long as a test needs one.
OperatorStack& lost() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "4", "--step-time", "1s", "--cancel-time", "300ms"});
  static bool started = [] {
    std::ofstream(shared.dir() + "/vto-config.yaml")
        << "tenancy:\n  - namespaces: [" << kNamespace << "]\n    name: team-dr\n"
        << "    projects: [" << kTestProject << "]\n    locations: [us-central1]\n"
        << "    maxAccelerators: 1\n    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n";
    shared.createNamespace(kNamespace);
    return true;
  }();
  (void)started;
  return shared;
}

void holdCapacity(const std::string& machineType, bool available) {
  std::string entry = std::string("{\"location\": \"us-central1\", \"machineType\": \"") + machineType +
                      "\", \"available\": " + (available ? "true" : "false") + ", \"mode\": \"hold\"}";
  auto posted = runShell("curl -sf -X POST -H 'Content-Type: application/json' --data-binary '" + entry + "' " +
                         lost().emulator().url() + "/emulator/v1/capacity");
  ASSERT_EQ(posted.exitCode, 0) << posted.output;
}

std::vector<std::string> flags(const std::string& clusterId) {
  return {"--config", lost().dir() + "/vto-config.yaml", "--cluster-id", clusterId, "--checkpoint-poll-interval", "1",
          "--budget-poll-interval", "1"};
}

std::string manifest(const std::string& name, const std::string& resources, const std::string& extraSpec = "") {
  return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + kNamespace +
         "\nspec:\n  framework: pytorch\n  project: " + kTestProject + "\n  location: us-central1\n" +
         "  trainer:\n    container:\n      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n" +
         "  resources: " + resources + "\n" + extraSpec + "  baseOutputDirectory: gs://" + kTestBucket + "/" + kNamespace +
         "/" + name + "\n";
}

void apply(OperatorStack& stack, const std::string& name, const std::string& text) {
  std::string path = stack.dir() + "/" + name + ".yaml";
  std::ofstream(path) << text;
  stack.kubectlOk("apply -f '" + path + "'");
}

size_t jobsNamed(const std::string& name) { return lost().listJobs("labels.vto-name=\"" + name + "\"").size(); }

// The lost cluster's runs, as a backup tool restores them: metadata (labels, annotations, finalizers)
// kept; uid, resourceVersion, creationTimestamp and status dropped.
std::string backupWithoutStatus(OperatorStack& stack, const std::vector<std::string>& names) {
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (const auto& name : names) {
    auto run = stack.getRun(kNamespace, name);
    EXPECT_TRUE(run.is_object()) << name;
    run.erase("status");
    for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"}) {
      run["metadata"].erase(field);
    }
    list["items"].push_back(run);
  }
  std::string path = stack.dir() + "/backup.json";
  std::ofstream(path) << list.dump();
  return path;
}

TEST(ClusterIdentity, ARebuiltClusterWithTheSameIdentityTakesBackItsRunsHistoryNeverPayingTwice) {
  auto& before = lost();
  holdCapacity("n1-standard-8", false);
  before.startOperator(flags("dr-prod"));
  apply(before, "finished", manifest("finished", "{machineType: n1-standard-4}"));
  apply(before, "from-git", manifest("from-git", "{machineType: n1-standard-4}"));
  apply(before, "unfinished", manifest("unfinished", "{machineType: n1-standard-8}"));
  ASSERT_TRUE(before.waitForPhase(kNamespace, "finished", "Succeeded", seconds(90)))
      << before.getRun(kNamespace, "finished").dump(2) << before.operatorLog();
  ASSERT_TRUE(before.waitForPhase(kNamespace, "from-git", "Succeeded", seconds(60)));
  auto unfinishedJob = before.jobOfAttempt(kNamespace, "unfinished", 1);
  ASSERT_FALSE(unfinishedJob.empty()) << before.getRun(kNamespace, "unfinished").dump(2);
  auto finished = before.getRun(kNamespace, "finished");
  auto finishedJob = finished["status"]["attempts"][0]["jobName"].get<std::string>();
  auto finishedCost = finished["status"]["cost"]["estimatedUsd"];
  auto finishedUid = finished["metadata"]["uid"].get<std::string>();
  EXPECT_EQ(finished["metadata"]["annotations"].value("vto.dev/run-uids", ""), finishedUid)
      << "what finds the run's jobs after a restore is in its metadata";
  auto backup = backupWithoutStatus(before, {"finished", "unfinished"});

  // The cluster is lost: its operator dies with it. A new API server, the same cluster id and key.
  before.stopOperator(SIGKILL);
  TestCluster rebuiltCluster;
  OperatorStack rebuilt(rebuiltCluster, before);
  rebuilt.createNamespace(kNamespace);
  rebuilt.startOperator(flags("dr-prod"));
  rebuilt.kubectlOk("create -f '" + backup + "'");
  apply(rebuilt, "from-git", manifest("from-git", "{machineType: n1-standard-4}"));

  // The finished run stays finished, with its job and its cost; no job is created for it.
  ASSERT_TRUE(rebuilt.waitForPhase(kNamespace, "finished", "Succeeded", seconds(60)))
      << rebuilt.getRun(kNamespace, "finished").dump(2) << rebuilt.operatorLog();
  auto restored = rebuilt.getRun(kNamespace, "finished");
  EXPECT_NE(restored["metadata"]["uid"].get<std::string>(), finishedUid);
  EXPECT_EQ(restored["status"]["attempts"][0]["jobName"], finishedJob) << restored.dump(2);
  EXPECT_EQ(restored["status"]["cost"]["estimatedUsd"], finishedCost) << restored.dump(2);
  EXPECT_NE(rebuilt.eventsOf(kNamespace, "finished").find("restored without status"), std::string::npos)
      << rebuilt.eventsOf(kNamespace, "finished");
  // The unfinished job is followed, and to its end once capacity returns.
  EXPECT_EQ(rebuilt.jobOfAttempt(kNamespace, "unfinished", 1, seconds(60)), unfinishedJob)
      << rebuilt.getRun(kNamespace, "unfinished").dump(2) << rebuilt.operatorLog();
  holdCapacity("n1-standard-8", true);
  ASSERT_TRUE(rebuilt.waitForPhase(kNamespace, "unfinished", "Succeeded", seconds(90)))
      << rebuilt.getRun(kNamespace, "unfinished")["status"].dump(2) << "\nthe job on Vertex: "
      << jobStateName(rebuilt.vertex().getJob(unfinishedJob).state) << "\n" << rebuilt.operatorLog();
  EXPECT_EQ(jobsNamed("finished"), 1u);
  EXPECT_EQ(jobsNamed("unfinished"), 1u);
  // A manifest from Git carries no history: a finished run of that name trains again.
  ASSERT_TRUE(rebuilt.waitForPhase(kNamespace, "from-git", "Succeeded", seconds(90)))
      << rebuilt.getRun(kNamespace, "from-git").dump(2);
  EXPECT_EQ(jobsNamed("from-git"), 2u);
  EXPECT_EQ(rebuilt.eventsOf(kNamespace, "from-git").find("JobAdopted"), std::string::npos);
  rebuilt.stopOperator(SIGTERM);
}

TEST(ClusterIdentity, TwoClustersSharingAProjectNeverCountAdoptOrCancelEachOthersJobs) {
  auto& staging = lost();
  if (staging.operatorRunning()) staging.stopOperator(SIGTERM);
  staging.startOperator(flags("staging"));
  TestCluster otherCluster;
  OperatorStack production(otherCluster, staging);
  production.createNamespace(kNamespace);
  production.startOperator(flags("production"));
  // Staging's run holds its cluster's cap of 1 accelerator with a job that waits for capacity.
  holdCapacity("n1-standard-8", false);
  std::string gpu = "{machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}";
  apply(staging, "shared-name", manifest("shared-name", gpu, "  deletionPolicy: Cancel\n"));
  auto stagingJob = staging.jobOfAttempt(kNamespace, "shared-name", 1);
  ASSERT_FALSE(stagingJob.empty()) << staging.getRun(kNamespace, "shared-name").dump(2) << staging.operatorLog();
  // Production's run of the same namespace and name: its cap is its own, and staging's unfinished job
  // of that name is not its namesake to adopt.
  apply(production, "shared-name", manifest("shared-name", gpu, "  deletionPolicy: Cancel\n"));
  auto productionJob = production.jobOfAttempt(kNamespace, "shared-name", 1, seconds(60));
  ASSERT_FALSE(productionJob.empty()) << production.getRun(kNamespace, "shared-name").dump(2) << production.operatorLog();
  EXPECT_NE(productionJob, stagingJob);
  EXPECT_EQ(production.eventsOf(kNamespace, "shared-name").find("JobAdopted"), std::string::npos);
  EXPECT_EQ(production.getRun(kNamespace, "shared-name")["status"].value("phase", ""), "Queued")
      << production.getRun(kNamespace, "shared-name").dump(2);
  // Deleting production's run cancels production's job only.
  production.kubectlOk(std::string("-n ") + kNamespace + " delete trun shared-name --wait=true --timeout=60s");
  ASSERT_TRUE(waitFor([&] { return vertex::isTerminal(staging.vertex().getJob(productionJob).state); }, seconds(30)));
  EXPECT_EQ(staging.vertex().getJob(productionJob).state, vertex::JobState::Cancelled);
  EXPECT_FALSE(vertex::isTerminal(staging.vertex().getJob(stagingJob).state)) << "staging's job goes on";
  EXPECT_EQ(staging.phaseOf(kNamespace, "shared-name"), "Queued");
  staging.kubectlOk(std::string("-n ") + kNamespace + " delete trun shared-name --wait=true --timeout=60s");
  holdCapacity("n1-standard-8", true);
}

}  // namespace
}  // namespace vto::testing
