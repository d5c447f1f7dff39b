// Which Vertex jobs are vto's, end to end (docs/security.md, "Jobs nobody else can pass off as vto's"):
// anyone who may create a Vertex job in a project vto uses can copy vto's labels. Such jobs, made here
// through the emulator's API as another tenant would, are never counted against a team's accelerator
// cap or budget, never adopted as a run's attempt, and the run they imitate names them in a Warning.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const char* kNamespace = "own-a";

std::vector<std::string> operatorFlags(OperatorStack& stack) {
  return {"--config", stack.dir() + "/vto-config.yaml", "--budget-poll-interval", "1", "--checkpoint-poll-interval", "1"};
}

// Jobs train 6 steps of 1 s after 1 s in the queue; europe-west1 holds every job pending (a job that
// never starts still counts against a budget for all its timeout, and against a cap).
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "6", "--step-time", "1s", "--cancel-time", "300ms"});
  static bool started = [] {
    std::string config = shared.dir() + "/vto-config.yaml";
    // One rule: 8 accelerators at once and $300 a month. The victim may cost ~$104 (a T4 for Vertex's
    // 7 days), the other runs ~$37 (n1-standard-4 for 7 days); the imitations ~$30 an hour each.
    std::ofstream(config) << "tenancy:\n  - namespaces: [" << kNamespace << "]\n    name: team-own\n"
                          << "    projects: [" << kTestProject << "]\n    locations: [us-central1, europe-west1]\n"
                          << "    maxAccelerators: 8\n    budget: {monthlyUsd: 300}\n"
                          << "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n";
    auto hold = runShell("curl -sf -X POST -H 'Content-Type: application/json' --data-binary "
                         "'[{\"location\": \"europe-west1\", \"available\": false, \"mode\": \"hold\"}]' " +
                         shared.emulator().url() + "/emulator/v1/capacity");
    if (hold.exitCode != 0) throw std::runtime_error("emulator capacity: " + hold.output);
    shared.createNamespace(kNamespace);
    shared.startOperator(operatorFlags(shared));
    return true;
  }();
  (void)started;
  return shared;
}

std::string clusterId() {
  auto r = stack().cluster().kubectl("get namespace kube-system -o jsonpath={.metadata.uid}");
  return r.output;
}

// A job another tenant creates with the labels it likes: 8 x A100 (about $30 an hour).
vertex::Job foreignJob(const std::string& location, std::map<std::string, std::string> labels) {
  json body = {{"displayName", "not-vto"},
               {"labels", labels},
               {"jobSpec",
                {{"workerPoolSpecs",
                  json::array({{{"machineSpec",
                                 {{"machineType", "a2-highgpu-8g"}, {"acceleratorType", "NVIDIA_TESLA_A100"}, {"acceleratorCount", 8}}},
                                {"replicaCount", "1"},
                                {"containerSpec", {{"imageUri", "us-central1-docker.pkg.dev/test-project/train/other:1"}}}}})}}}};
  return stack().vertex().createJob({kTestProject, location}, vertex::JobKind::Custom, body);
}

// Applies run `name` in us-central1 of the test project with `resources` and `extraSpec`; returns its file.
std::string applyRun(const std::string& name, const std::string& resources, const std::string& extraSpec) {
  std::string path = stack().dir() + "/" + name + ".yaml";
  std::ofstream(path) << "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " << name << "\n  namespace: " << kNamespace
                      << "\nspec:\n  framework: pytorch\n  project: " << kTestProject << "\n  location: us-central1\n"
                      << "  trainer:\n    container:\n      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
                      << "  resources: " << resources << "\n" << extraSpec
                      << "  baseOutputDirectory: gs://" << kTestBucket << "/" << kNamespace << "/" << name << "\n";
  stack().kubectlOk("apply -f '" + path + "'");
  return path;
}

std::string eventsOf(const std::string& name) { return stack().eventsOf(kNamespace, name); }

std::string jobOfAttempt(const std::string& name, int attempt) { return stack().jobOfAttempt(kNamespace, name, attempt, seconds(90)); }

TEST(Ownership, JobsImitatingVtosAreNeverCountedAdoptedOrFollowed) {
  auto cluster = clusterId();
  ASSERT_FALSE(cluster.empty());
  // What a neighbour in the same project can make: vto's labels for team-own, unsigned; our cluster's
  // label with a made-up tag; and another cluster's job of the same namespace (legitimately not ours).
  std::map<std::string, std::string> teamLabels = {{"managed-by", "vto"},         {"vto-team", "team-own"},
                                                   {"vto-namespace", kNamespace}, {"vto-accelerators", "1000"},
                                                   {"vto-accelerator-type", "nvidia_tesla_a100"}};
  auto unsignedLabels = teamLabels;
  auto badTag = teamLabels;
  badTag["vto-cluster"] = cluster;
  badTag["vto-owner"] = std::string(40, 'f');
  auto otherCluster = teamLabels;
  otherCluster["vto-cluster"] = "staging";
  otherCluster["vto-owner"] = std::string(40, 'a');
  std::vector<std::string> foreign;
  for (const auto& labels : {unsignedLabels, badTag, otherCluster}) foreign.push_back(foreignJob("europe-west1", labels).name);

  // The team's run (1 T4, ~$104 for 7 days) starts: 3,000 accelerators and ~$90 an hour of jobs
  // labelled as the team's are nobody's it knows.
  applyRun("victim", "{machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}",
           "  checkpointing: {resumeBackoff: 1s}\n");
  auto first = jobOfAttempt("victim", 1);
  ASSERT_FALSE(first.empty()) << stack().getRun(kNamespace, "victim").dump(2) << "\n" << eventsOf("victim");
  EXPECT_EQ(eventsOf("victim").find("BudgetExceeded"), std::string::npos) << eventsOf("victim");
  EXPECT_EQ(eventsOf("victim").find("TenantQuotaExceeded"), std::string::npos) << eventsOf("victim");

  // Its real job carries this cluster's identity and a tag.
  auto real = stack().vertex().getJob(first);
  EXPECT_EQ(real.labels["vto-cluster"], cluster);
  EXPECT_EQ(real.labels["vto-owner"].size(), 40u);

  // A job with the victim's uid and next attempt, made before the victim is preempted: the resume
  // creates the victim's own attempt 2 and names the impostor in a Warning.
  auto uid = stack().getRun(kNamespace, "victim")["metadata"]["uid"].get<std::string>();
  auto impostorLabels = real.labels;
  impostorLabels.erase("vto-owner");
  impostorLabels["vto-attempt"] = "2";
  auto impostor = foreignJob("us-central1", impostorLabels).name;
  ASSERT_TRUE(waitFor([&] { return stack().vertex().getJob(first).state == vertex::JobState::Running; }, seconds(60)));
  auto failed = runShell("curl -sf -X POST -d '{\"failureClass\":\"Preemption\"}' " + stack().emulator().url() +
                         "/emulator/v1/" + first + ":fail");
  ASSERT_EQ(failed.exitCode, 0) << failed.output;
  auto second = jobOfAttempt("victim", 2);
  ASSERT_FALSE(second.empty()) << stack().getRun(kNamespace, "victim").dump(2);
  EXPECT_NE(second, impostor) << "the impostor was adopted as attempt 2";
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "victim", "Succeeded", seconds(120)))
      << stack().getRun(kNamespace, "victim").dump(2) << "\n" << eventsOf("victim");
  EXPECT_TRUE(waitFor([&] { return eventsOf("victim").find("ForeignJobIgnored") != std::string::npos; }, seconds(30)))
      << eventsOf("victim");
  auto events = eventsOf("victim");
  EXPECT_NE(events.find(impostor), std::string::npos) << "the Warning names the impostor: " << events;
  // Nothing vto did touched the foreign jobs: the held ones are still pending, none cancelled.
  for (const auto& name : foreign) {
    auto job = stack().vertex().getJob(name);
    EXPECT_NE(job.state, vertex::JobState::Cancelled) << name;
    EXPECT_NE(job.state, vertex::JobState::Cancelling) << name;
  }
  EXPECT_NE(stack().vertex().getJob(impostor).state, vertex::JobState::Cancelled);
  // The operator says which cluster it is.
  auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
  EXPECT_NE(metrics.find("cluster_id=\"" + cluster + "\""), std::string::npos) << "vto_build_info names the cluster";
}


// A CPU job started outside vto (by hand, with gcloud): no vto label at all.
std::string handMadeJob(const std::string& location) {
  json body = {{"displayName", "started-by-hand"},
               {"labels", {{"owner", "alice"}}},
               {"jobSpec",
                {{"workerPoolSpecs", json::array({{{"machineSpec", {{"machineType", "n1-standard-4"}}},
                                                   {"replicaCount", "1"},
                                                   {"containerSpec", {{"imageUri", "us-central1-docker.pkg.dev/test-project/train/model:1"}}}}})}}}};
  return stack().vertex().createJob({kTestProject, location}, vertex::JobKind::Custom, body).name;
}

std::string validCondition(const std::string& name) {
  auto run = stack().getRun(kNamespace, name);
  for (const auto& c : run["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "Valid") return c.value("status", "") + "/" + c.value("reason", "") + ": " + c.value("message", "");
  }
  return "";
}

// spec.adoptJob hands a job started elsewhere to vto, inside the run's place and rule only; a job that
// another run holds (adopted, or created by vto for it) or that is elsewhere is refused, and untouched.
TEST(Ownership, AJobStartedOutsideVtoIsAdoptedByNameAndRefusedToEveryoneElse) {
  auto byHand = handMadeJob("us-central1");
  applyRun("adopter", "{machineType: n1-standard-4}", "  adoptJob: " + byHand + "\n");
  ASSERT_TRUE(waitFor([&] { return eventsOf("adopter").find("JobAdopted") != std::string::npos; }, seconds(60)))
      << stack().getRun(kNamespace, "adopter").dump(2) << eventsOf("adopter");
  EXPECT_EQ(jobOfAttempt("adopter", 1), byHand);
  // Followed like its own, to its end.
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "adopter", "Succeeded", seconds(90)))
      << stack().getRun(kNamespace, "adopter").dump(2) << eventsOf("adopter");
  EXPECT_EQ(stack().listJobs("labels.vto-name=\"adopter\"").size(), 0u) << "no job of its own was created";

  // Another run naming the same job: refused, naming the run that holds it.
  applyRun("second", "{machineType: n1-standard-4}", "  adoptJob: " + byHand + "\n");
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "second", "Invalid", seconds(60))) << stack().getRun(kNamespace, "second").dump(2);
  EXPECT_EQ(validCondition("second").rfind("False/AdoptionRefused", 0), 0u) << validCondition("second");
  EXPECT_NE(validCondition("second").find(std::string(kNamespace) + "/adopter"), std::string::npos) << validCondition("second");
  EXPECT_NE(eventsOf("second").find("AdoptionRefused"), std::string::npos) << eventsOf("second");

  // A job vto made for another run: that run's.
  applyRun("holder", "{machineType: n1-standard-4}", "");
  auto held = jobOfAttempt("holder", 1);
  ASSERT_FALSE(held.empty());
  applyRun("grabber", "{machineType: n1-standard-4}", "  adoptJob: " + held + "\n");
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "grabber", "Invalid", seconds(60))) << stack().getRun(kNamespace, "grabber").dump(2);
  EXPECT_NE(validCondition("grabber").find("TrainingRun " + std::string(kNamespace) + "/holder"), std::string::npos)
      << validCondition("grabber");

  // A job outside the run's location (the run's place from the operator's defaults, us-central1).
  auto elsewhere = handMadeJob("europe-west1");  // held pending: it stays unfinished
  std::string path = stack().dir() + "/elsewhere.yaml";
  std::ofstream(path) << "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: elsewhere\n  namespace: " << kNamespace
                      << "\nspec:\n  framework: pytorch\n  adoptJob: " << elsewhere
                      << "\n  trainer:\n    container:\n      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
                      << "  resources: {machineType: n1-standard-4}\n  baseOutputDirectory: gs://" << kTestBucket << "/"
                      << kNamespace << "/elsewhere\n";
  stack().kubectlOk("apply -f '" + path + "'");
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "elsewhere", "Invalid", seconds(60))) << stack().getRun(kNamespace, "elsewhere").dump(2);
  EXPECT_NE(validCondition("elsewhere").find("not a CustomJob in the run's project and location"), std::string::npos)
      << validCondition("elsewhere");

  // Outside the run's tenancy rule (a project the rule does not list): refused as any run there is,
  // before the job it names is read.
  std::string outsidePath = stack().dir() + "/outside.yaml";
  std::ofstream(outsidePath) << "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: outside\n  namespace: " << kNamespace
                             << "\nspec:\n  framework: pytorch\n  project: other-project\n  location: us-central1\n"
                             << "  adoptJob: projects/other-project/locations/us-central1/customJobs/1"
                             << "\n  trainer:\n    container:\n      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
                             << "  resources: {machineType: n1-standard-4}\n  baseOutputDirectory: gs://" << kTestBucket << "/"
                             << kNamespace << "/outside\n";
  stack().kubectlOk("apply -f '" + outsidePath + "'");
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "outside", "Invalid", seconds(60))) << stack().getRun(kNamespace, "outside").dump(2);
  EXPECT_EQ(validCondition("outside").rfind("False/TenantPolicyViolation", 0), 0u) << validCondition("outside");

  // Refusals touch nothing: deleting the refused runs (deletionPolicy Cancel) cancels no job.
  for (const char* name : {"second", "grabber", "elsewhere", "outside"}) {
    stack().kubectlOk(std::string("-n ") + kNamespace + " delete trun " + name + " --wait=true --timeout=60s");
  }
  EXPECT_EQ(stack().vertex().getJob(elsewhere).state, vertex::JobState::Pending);
  EXPECT_NE(stack().vertex().getJob(held).state, vertex::JobState::Cancelled);
  EXPECT_NE(stack().vertex().getJob(held).state, vertex::JobState::Cancelling);
}

// A run deleted with deletionPolicy Orphan while its job waits for capacity, the operator restarted
// (as a rebuilt cluster's starts with nothing cached), and the same manifest applied again: the new run
// (a new uid, no status) takes the job over instead of paying for a second.
TEST(Ownership, ARunAppliedAgainWhileItsJobIsUnfinishedAdoptsItInsteadOfPayingTwice) {
  // Every job in us-central1 now waits for capacity: the job stays unfinished however long this takes.
  auto hold = runShell("curl -sf -X POST -H 'Content-Type: application/json' --data-binary "
                       "'[{\"location\": \"us-central1\", \"available\": false, \"mode\": \"hold\"}, "
                       "{\"location\": \"europe-west1\", \"available\": false, \"mode\": \"hold\"}]' " +
                       stack().emulator().url() + "/emulator/v1/capacity");
  ASSERT_EQ(hold.exitCode, 0) << hold.output;
  auto path = applyRun("phoenix", "{machineType: n1-standard-4}", "  deletionPolicy: Orphan\n");
  auto job = jobOfAttempt("phoenix", 1);
  ASSERT_FALSE(job.empty()) << stack().getRun(kNamespace, "phoenix").dump(2) << eventsOf("phoenix");
  auto firstUid = stack().getRun(kNamespace, "phoenix")["metadata"]["uid"].get<std::string>();
  stack().kubectlOk(std::string("-n ") + kNamespace + " delete trun phoenix --wait=true --timeout=60s");
  stack().stopOperator(SIGTERM);
  stack().startOperator(operatorFlags(stack()));
  stack().kubectlOk("apply -f '" + path + "'");
  ASSERT_TRUE(waitFor([&] { return eventsOf("phoenix").find("JobAdopted") != std::string::npos; }, seconds(60)))
      << stack().getRun(kNamespace, "phoenix").dump(2) << eventsOf("phoenix") << stack().operatorLog();
  auto run = stack().getRun(kNamespace, "phoenix");
  EXPECT_NE(run["metadata"]["uid"].get<std::string>(), firstUid);
  EXPECT_EQ(jobOfAttempt("phoenix", 1), job) << run.dump(2);
  EXPECT_NE(eventsOf("phoenix").find(firstUid), std::string::npos) << "the Event names the run that started it";
  // Still one job for the name, some passes later.
  ASSERT_TRUE(waitFor([&] { return stack().getRun(kNamespace, "phoenix")["status"].value("phase", "") == "Queued"; }, seconds(30)))
      << stack().getRun(kNamespace, "phoenix").dump(2);
  EXPECT_EQ(stack().listJobs("labels.vto-name=\"phoenix\"").size(), 1u);
  auto events = eventsOf("phoenix");  // both runs' (Events name the object by name)
  auto created = events.find("JobCreated");
  EXPECT_NE(created, std::string::npos) << events;
  EXPECT_EQ(events.find("JobCreated", created + 1), std::string::npos) << "one job created, by the first run: " << events;
}

}  // namespace
}  // namespace vto::testing
