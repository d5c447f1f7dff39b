// Checkpoint-resume end to end: the emulator fails a running job the way Vertex reports a preemption,
// a stockout or a crash of the training code; vto resumes from the newest checkpoint, or does not.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

// Jobs train 6 steps of 2 s and write ckpt-<step> after each; the operator looks at checkpoints every second.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "6", "--step-time", "2s", "--cancel-time", "300ms"});
  static bool started = (shared.startOperator({"--checkpoint-poll-interval", "1"}), true);
  (void)started;
  return shared;
}

std::string scrapeMetrics() {
  return runShell("curl -sf " + stack().metricsUrl()).output;
}

const char* kNamespace = "resume";

void apply(const std::string& name, const std::string& checkpointing, const std::string& strategy = "Spot") {
  stack().createNamespace(kNamespace);
  std::string path = stack().dir() + "/" + name + ".yaml";
  std::ofstream(path) << simpleRunManifest(kNamespace, name, "  scheduling: {strategy: " + strategy + "}\n  checkpointing:\n" + checkpointing);
  stack().kubectlOk("apply -f '" + path + "'");
}

nlohmann::json emulatorControl(const std::string& method, const std::string& jobName, const std::string& verb,
                               const std::string& body = "") {
  auto out = runShell("curl -sf -X " + method + " -H 'Content-Type: application/json' " +
                      (body.empty() ? "" : "-d '" + body + "' ") + stack().emulator().url() + "/emulator/v1/" +
                      jobName + ":" + verb);
  return nlohmann::json::parse(out.output, nullptr, false);
}

// The job of the run's newest attempt, once it exists.
std::string currentJob(const std::string& name, int attempt) {
  std::string job;
  waitFor(
      [&] {
        auto run = stack().getRun(kNamespace, name);
        if (!run.is_object() || !run.contains("status")) return false;
        for (const auto& a : run["status"].value("attempts", nlohmann::json::array())) {
          if (a.value("attempt", 0) == attempt && !a.value("jobName", "").empty()) job = a["jobName"];
        }
        return !job.empty();
      },
      seconds(60), std::chrono::milliseconds(100));
  return job;
}

// Fails the job once it has run `steps` steps (or as soon as it runs, for steps == 0).
void failAfter(const std::string& job, int steps, const std::string& failureClass) {
  ASSERT_TRUE(waitFor(
      [&] {
        auto trace = emulatorControl("GET", job, "trace");
        if (!trace.is_object()) return false;
        auto run = trace.value("stepsRun", nlohmann::json::array());
        if (steps == 0) return stack().vertex().getJob(job).state == vertex::JobState::Running;
        return !run.empty() && run.back().get<int>() >= steps;
      },
      seconds(60), std::chrono::milliseconds(50)))
      << job;
  auto answer = emulatorControl("POST", job, "fail", "{\"failureClass\": \"" + failureClass + "\"}");
  ASSERT_TRUE(answer.is_object()) << "the emulator refused to fail " << job;
}

// What kstatus (the library Flux and kubectl wait's conventions follow) makes of the run as the API
// server holds it: Current, InProgress, Failed, ... (tests/health's helper runs the real library).
std::string kstatusOf(const std::string& name) {
  std::string path = stack().dir() + "/" + name + "-kstatus.json";
  std::ofstream(path) << stack().getRun(kNamespace, name).dump();
  auto r = runShell(binDir() + "/vto-health-check kstatus '" + path + "'");
  return r.output.substr(0, r.output.find('\t'));
}

// `kubectl get trun NAME` as a person sees it: the Progress and ETA columns.
struct Columns {
  std::string progress, eta;
};
Columns printed(const std::string& name) {
  auto r = stack().cluster().kubectl("-n " + std::string(kNamespace) + " get trun " + name + " --no-headers");
  std::istringstream in(r.output);
  std::string runName, phase, job, attempts;
  Columns c;
  in >> runName >> phase >> job >> attempts >> c.progress >> c.eta;
  return c;
}

TEST(Resume, APreemptedSpotRunContinuesFromItsLatestCheckpoint) {
  apply("spot", "    resumeBackoff: 1s\n    totalSteps: 6\n");
  std::string first = currentJob("spot", 1);
  ASSERT_FALSE(first.empty()) << stack().operatorLog();
  // While attempt 1 trains, `kubectl get trun` shows its progress move (a checkpoint every 2 s) and an ETA.
  std::set<std::string> seen;
  std::string eta;
  ASSERT_TRUE(waitFor(
      [&] {
        auto c = printed("spot");
        if (c.progress.empty() || c.progress == "<none>") return false;
        seen.insert(c.progress);
        if (c.eta.size() == 20 && c.eta.back() == 'Z') eta = c.eta;  // RFC 3339, whole seconds
        return seen.size() >= 2 && !eta.empty();
      },
      seconds(30), std::chrono::milliseconds(100)))
      << "progress seen: " << seen.size() << ", eta: " << eta << "\n" << stack().operatorLog();
  EXPECT_EQ(kstatusOf("spot"), "InProgress");
  failAfter(first, 3, "Preemption");
  // Attempt 2 resumed from ckpt-3: its progress starts there (50%), never from zero.
  ASSERT_FALSE(currentJob("spot", 2).empty()) << stack().operatorLog();
  auto resumed = stack().getRun(kNamespace, "spot")["status"];
  EXPECT_GE(resumed["progress"].value("step", 0), 3) << resumed.dump();
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "spot", "Succeeded", seconds(120))) << stack().operatorLog();
  // kstatus reads a Succeeded run as Current, and `kubectl wait --for=condition=Ready` returns at once.
  EXPECT_EQ(kstatusOf("spot"), "Current");
  auto waited = stack().cluster().kubectl("-n " + std::string(kNamespace) +
                                          " wait --for=condition=Ready trun/spot --timeout=20s");
  EXPECT_EQ(waited.exitCode, 0) << waited.output;

  auto run = stack().getRun(kNamespace, "spot");
  const auto& status = run["status"];
  EXPECT_EQ(status["resumes"], 1);
  ASSERT_EQ(status["attempts"].size(), 2u);
  EXPECT_EQ(status["attempts"][0]["failureClass"], "Preemption");
  std::string resumedFrom = status["attempts"][1]["resumedFrom"];
  EXPECT_EQ(resumedFrom, "gs://test-bucket/resume/spot/checkpoints/ckpt-3");
  // What the second job really did: steps 4..6 only, from ckpt-3.
  auto trace = emulatorControl("GET", status["attempts"][1]["jobName"], "trace");
  EXPECT_EQ(trace["stepsRun"], nlohmann::json::array({4, 5, 6}));
  EXPECT_EQ(trace["resumedFrom"], resumedFrom);
  EXPECT_EQ(status["lastCheckpoint"]["uri"], "gs://test-bucket/resume/spot/checkpoints/ckpt-6");
  EXPECT_EQ(status["progress"]["step"], 6);
  EXPECT_EQ(status["progress"]["percent"], 100);
  EXPECT_FALSE(status["progress"].contains("eta")) << "no ETA once the run has ended";
  auto events = stack().cluster().kubectl("-n resume get events --field-selector involvedObject.name=spot "
                                          "-o jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'");
  EXPECT_NE(events.output.find("Resumed: attempt 1 failed (Preemption): attempt 2 resumes from " + resumedFrom),
            std::string::npos)
      << events.output;
  // Dashboards see it too, in a form Prometheus accepts.
  auto metrics = scrapeMetrics();
  EXPECT_NE(metrics.find("vto_trainingrun_resumes_total{failure_class=\"Preemption\"}"), std::string::npos) << metrics;
  std::string path = stack().dir() + "/metrics.txt";
  std::ofstream(path) << metrics;
  auto check = runShell("promtool check metrics < '" + path + "'");
  EXPECT_EQ(check.exitCode, 0) << check.output;
}

TEST(Resume, ThreePreemptionsWithTwoResumesAllowedFailWithTheBudgetSpent) {
  apply("fragile", "    resumeBackoff: 1s\n    maxResumes: 2\n");
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::string job = currentJob("fragile", attempt);
    ASSERT_FALSE(job.empty()) << "attempt " << attempt << "\n" << stack().operatorLog();
    failAfter(job, 0, "Preemption");
  }
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "fragile", "Failed", seconds(60))) << stack().operatorLog();
  auto status = stack().getRun(kNamespace, "fragile")["status"];
  EXPECT_EQ(status["resumes"], 2);
  EXPECT_EQ(status["attempts"].size(), 3u);
  std::string message = status["message"];
  EXPECT_NE(message.find("resume budget is spent (checkpointing.maxResumes: 2)"), std::string::npos) << message;
  EXPECT_EQ(kstatusOf("fragile"), "Failed");  // Stalled: nothing moves without a change
}

TEST(Resume, AUserErrorFailsTheRunWithoutResuming) {
  apply("buggy", "    resumeBackoff: 1s\n");
  std::string job = currentJob("buggy", 1);
  failAfter(job, 0, "UserError");
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "buggy", "Failed", seconds(60))) << stack().operatorLog();
  auto status = stack().getRun(kNamespace, "buggy")["status"];
  EXPECT_EQ(status["resumes"], 0);
  ASSERT_EQ(status["attempts"].size(), 1u);
  EXPECT_EQ(status["attempts"][0]["failureClass"], "UserError");
  EXPECT_NE(status["message"].get<std::string>().find("UserError is not in checkpointing.resumeOn"), std::string::npos);
  EXPECT_EQ(kstatusOf("buggy"), "Failed");
}

// Standard, not Spot: a started Spot job that ends with a stockout was preempted (Google says so), and
// resumes as a preemption does.
TEST(Resume, AStockoutResumesAfterTheBackoff) {
  apply("starved", "    resumeBackoff: 3s\n", "Standard");
  std::string first = currentJob("starved", 1);
  failAfter(first, 0, "Stockout");
  // While the backoff runs the run says so.
  EXPECT_TRUE(stack().waitForPhase(kNamespace, "starved", "Resuming", seconds(30))) << stack().operatorLog();
  EXPECT_EQ(kstatusOf("starved"), "InProgress");  // Reconciling: the resume is under way
  std::string second = currentJob("starved", 2);
  ASSERT_FALSE(second.empty()) << stack().operatorLog();
  auto failed = stack().vertex().getJob(first), resumed = stack().vertex().getJob(second);
  ASSERT_TRUE(failed.endTime && resumed.createTime);
  EXPECT_GE(*resumed.createTime - *failed.endTime, seconds(3));
  auto status = stack().getRun(kNamespace, "starved")["status"];
  EXPECT_EQ(status["attempts"][0]["failureClass"], "Stockout");
  EXPECT_EQ(status["resumes"], 1);
}

// A tenant writes a checkpoint named ckpt-100000000000000000 into its run's directory (its own
// bucket: nothing stops it). Progress used to overflow (percent -84), and the operator could then
// not read its own status back; now the step is shown as it is, the percent stays within 0..100, the
// ETA past ten years is left out, and the run goes on to its end with a status the operator reads.
TEST(Resume, ACheckpointStepNear1e17LeavesASaneStatus) {
  apply("huge-step", "    totalSteps: 6\n", "Standard");
  ASSERT_FALSE(currentJob("huge-step", 1).empty()) << stack().operatorLog();
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "huge-step", "Running", seconds(60))) << stack().operatorLog();
  const std::string object = std::string(kNamespace) + "%2Fhuge-step%2Fcheckpoints%2Fckpt-100000000000000000";
  auto upload = runShell("curl -sf -X POST --data-binary x '" + stack().gcs().url() + "/upload/storage/v1/b/" + kTestBucket +
                         "/o?uploadType=media&name=" + object + "'");
  ASSERT_EQ(upload.exitCode, 0) << upload.output;
  nlohmann::json progress;
  ASSERT_TRUE(waitFor(
      [&] {
        progress = stack().getRun(kNamespace, "huge-step").value(nlohmann::json::json_pointer("/status/progress"),
                                                                nlohmann::json());
        return progress.is_object() && progress.value("step", int64_t{0}) == 100000000000000000;
      },
      seconds(30)))
      << progress.dump() << "\n" << stack().operatorLog();
  EXPECT_EQ(progress.value("percent", -1), 100) << progress.dump();
  EXPECT_FALSE(progress.contains("eta")) << progress.dump();
  ASSERT_TRUE(stack().waitForPhase(kNamespace, "huge-step", "Succeeded", seconds(60))) << stack().operatorLog();
  auto status = stack().getRun(kNamespace, "huge-step")["status"];
  EXPECT_EQ(status["attempts"].size(), 1u) << "read back, not rebuilt from nothing: " << status.dump();
}

}  // namespace
}  // namespace vto::testing
