// Upgrading from the release before with runs in flight (docs/upgrading.md, "This path is tested"):
// the release before (commit 2488f56: v1alpha1 only, CRDs in the chart's crds/ folder, jobs without
// vto-cluster or vto-owner) is installed by its own chart and its own operator leaves runs Running,
// Succeeded and Suspended (one before its job, one after) and a scheduled policy that has fired for a
// slot. Its operator stops (SIGTERM), the CRDs are adopted once, `helm upgrade` brings this chart, and
// this build's operator starts as the chart's ServiceAccount with the key of the chart's Secret. No run
// gets a second job, the running job is followed to its end, the policy does not fire its slot again,
// the suspended runs stay suspended and resume through v1beta1, and the objects migrate to v1beta1.
//
// The release before is built once by scripts/release-before.sh (`make test` runs it before CTest)
// into a cache outside the checkout; this test only finds it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/rfc3339.h"
#include "tests/support/operator_stack.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/wait.h"
#include "vertex/json_codec.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const char* kNamespace = "team-upgrade";
// The release before, as `vto version` names it (scripts/release-before.sh pins the same commit).
const char* kReleaseBefore = "2488f564be7f";

std::string trimmed(std::string text) {
  auto end = text.find_last_not_of(" \n\r\t");
  return end == std::string::npos ? "" : text.substr(0, end + 1);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Where scripts/release-before.sh caches the release before ($VTO_RELEASE_BEFORE_DIR overrides);
// `--dir` only prints it, it never builds.
std::string releaseBeforeDir() {
  const char* override = std::getenv("VTO_RELEASE_BEFORE_DIR");
  if (override != nullptr && *override != '\0') return override;
  auto asked = runShell("'" + sourceDir() + "/scripts/release-before.sh' --dir 2>&1");
  return asked.exitCode == 0 ? trimmed(asked.output) : "";
}

// A TrainingRun as the release before's users wrote it: v1alpha1.
std::string runManifest(const std::string& name, const std::string& extraSpec = "") {
  return "apiVersion: vto.dev/v1alpha1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + kNamespace +
         "\nspec:\n  framework: pytorch\n  trainer:\n    container:\n"
         "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
         "  resources:\n    machineType: n1-standard-4\n"
         "  baseOutputDirectory: gs://" + std::string(kTestBucket) + "/" + kNamespace + "/" + name + "\n" + extraSpec;
}

// The slot's run, named as the policy names it.
std::string runNameOf(const std::string& policy, Clock::time_point slot) {
  return policy + "-" + std::to_string(std::chrono::duration_cast<seconds>(slot.time_since_epoch()).count());
}

class UpgradeFromTheReleaseBefore : public ::testing::Test {
 protected:
  // Jobs queue 1 s and train 15 steps of 2 s: the running run's job is still training when the new
  // operator starts (its 30 s cover the stop, the refused upgrade, the adoption and the upgrade).
  UpgradeFromTheReleaseBefore()
      : stack({"--queue-time", "1s", "--steps", "15", "--step-time", "2s", "--cancel-time", "300ms"},
              OperatorStack::Crds::None),
        clock(stack.dir() + "/clock-offset") {}

  std::string helm(const std::string& args) {
    return "'" + binDir() + "/helm' --kubeconfig '" + stack.cluster().kubeconfig() + "' --namespace vto-system " + args +
           " 2>&1 | grep -v 'symbolic link'";
  }
  void apply(const std::string& name, const std::string& yaml) {
    std::string path = stack.dir() + "/" + name + ".yaml";
    std::ofstream(path) << yaml;
    stack.kubectlOk("apply -f '" + path + "'");
  }
  std::string storedVersions(const std::string& crd) {
    return stack.cluster().kubectl("get crd " + crd + " -o jsonpath={.status.storedVersions}").output;
  }
  // Every job Vertex holds for a run name (each attempt's, whichever run uid made it).
  std::vector<vertex::Job> jobsNamed(const std::string& name) {
    return stack.listJobs("labels.vto-name=\"" + name + "\"");
  }
  std::set<std::string> jobNamesOf(const std::string& name) {
    std::set<std::string> names;
    for (const auto& job : jobsNamed(name)) names.insert(job.name);
    return names;
  }
  json trace(const std::string& job) {
    auto out = runShell("curl -sf '" + stack.emulator().url() + "/emulator/v1/" + job + ":trace'");
    auto parsed = out.exitCode == 0 ? json::parse(out.output, nullptr, false) : json();
    return parsed.is_object() ? parsed : json::object();
  }
  // Objects read whatever version kubectl prefers; its warnings (v1alpha1 is deprecated after the
  // upgrade, and kubectl's cached discovery may still prefer it) go to stderr, left out here.
  json policy(const std::string& name) {
    auto out = stack.cluster().kubectl(std::string("-n ") + kNamespace + " get retrainingpolicy " + name + " -o json 2>/dev/null");
    auto parsed = json::parse(out.output, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
  }
  std::string lastScheduleTime(const std::string& name) {
    return policy(name).value("status", json::object()).value("lastScheduleTime", "");
  }
  std::set<std::string> runsOfPolicy(const std::string& name) {
    auto out = stack.cluster().kubectl(std::string("-n ") + kNamespace + " get trainingruns -l vto.dev/retraining-policy=" +
                                       name + " -o jsonpath='{.items[*].metadata.name}' 2>/dev/null");
    std::set<std::string> names;
    std::stringstream words(out.output);
    for (std::string word; words >> word;) names.insert(word);
    return names;
  }
  double metric(const std::string& exposition, const std::string& name, const Labels& wanted) {
    return sampleSum(exposition, name, [&](const Labels& labels) {
      for (const auto& [key, value] : wanted) {
        auto it = labels.find(key);
        if (it == labels.end() || it->second != value) return false;
      }
      return true;
    });
  }
  std::string diagnose() {
    return stack.cluster().kubectl(std::string("-n ") + kNamespace + " get trainingruns,retrainingpolicies -o yaml").output +
           stack.cluster().kubectl(std::string("-n ") + kNamespace + " get events").output + "\n--- operator log\n" +
           stack.operatorLog();
  }

  OperatorStack stack;
  SimulatedClock clock;
};

TEST_F(UpgradeFromTheReleaseBefore, RunsInFlightKeepTheirJobsSuspendedRunsStaySuspendedAndThePolicyItsSlot) {
  const std::string before = releaseBeforeDir();
  ASSERT_TRUE(!before.empty() && exists(before + "/vto") && exists(before + "/chart/Chart.yaml"))
      << "the release before is not built (looked in '" << before << "'): run scripts/release-before.sh "
      << "(`make test` and `make integration-test` run it before CTest)";
  auto version = runShell("'" + before + "/vto' version");
  ASSERT_NE(version.output.find(kReleaseBefore), std::string::npos)
      << before << "/vto is not the release before: " << version.output << " (run scripts/release-before.sh)";
  auto& cluster = stack.cluster();
  const std::string ns = kNamespace;
  const std::string clockFlag = stack.dir() + "/clock-offset";
  auto started = std::chrono::steady_clock::now();

  // 1. The release before, by its own chart: the CRDs from its crds/ folder (v1alpha1 only), its RBAC,
  // and its operator as that chart's ServiceAccount.
  auto installed = runShell(helm("install vto '" + before + "/chart' --create-namespace --set defaultProject=" +
                                 std::string(kTestProject)));
  ASSERT_NE(installed.output.find("STATUS: deployed"), std::string::npos) << installed.output;
  ASSERT_EQ(cluster.kubectl("wait --for=condition=Established crd/trainingruns.vto.dev crd/retrainingpolicies.vto.dev "
                            "--timeout=60s").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("get crd trainingruns.vto.dev -o jsonpath={.spec.versions[*].name}").output, "v1alpha1");
  stack.useServiceAccountOfInstalledChart();
  stack.useOperatorBinary(before + "/vto", /*releaseBefore=*/true);
  stack.createNamespace(ns);
  clock.startClearOfAMinuteBoundary();
  stack.startOperator({"--clock-offset-file", clockFlag});

  // Its users' objects, at v1alpha1: a run that will succeed, one suspended before its job, one that
  // will be suspended while training, and a policy whose daily slot is the operator's next minute.
  auto slot = clock.nextMinute();
  std::time_t slotTime = std::chrono::system_clock::to_time_t(slot);
  std::tm utc{};
  gmtime_r(&slotTime, &utc);
  const std::string cron = std::to_string(utc.tm_min) + " " + std::to_string(utc.tm_hour) + " * * *";
  apply("before",
        runManifest("done") + "---\n" + runManifest("paused-early", "  suspend: true\n") + "---\n" +
            runManifest("paused-mid") + "---\n" +
            "apiVersion: vto.dev/v1alpha1\nkind: RetrainingPolicy\nmetadata:\n  name: nightly\n  namespace: " + ns +
            "\nspec:\n  concurrencyPolicy: Allow\n  maxActiveRuns: 5\n  template:\n    spec:\n      framework: pytorch\n"
            "      trainer:\n        container:\n          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
            "      resources: {machineType: n1-standard-4}\n      baseOutputDirectory: gs://" + kTestBucket + "/" + ns +
            "/nightly\n  triggers:\n    schedule: {cron: \"" + cron + "\"}\n");
  stack.kubectlOk("-n " + ns + " wait --for=condition=Valid rtp/nightly --timeout=60s");

  // The slot comes (on the operator's clock) and the old operator fires it.
  clock.jumpTo(slot + seconds(2));
  const std::string slotRun = runNameOf("nightly", slot);
  ASSERT_TRUE(waitFor([&] { return runsOfPolicy("nightly").count(slotRun) == 1; }, seconds(60))) << diagnose();
  ASSERT_TRUE(waitFor([&] { return lastScheduleTime("nightly") == rfc3339Exact(slot); }, seconds(60))) << diagnose();

  // paused-mid trains a few steps (checkpoints to resume from), then is suspended through v1alpha1:
  // the old operator cancels its job.
  const std::string midJob = stack.jobOfAttempt(ns, "paused-mid", 1);
  ASSERT_FALSE(midJob.empty()) << diagnose();
  ASSERT_TRUE(waitFor([&] { return trace(midJob).value("stepsRun", json::array()).size() >= 2; }, seconds(60)))
      << trace(midJob).dump() << diagnose();
  stack.kubectlOk("-n " + ns + " patch trainingruns.v1alpha1.vto.dev paused-mid --type=merge "
                  "-p '{\"spec\":{\"suspend\":true}}'");
  ASSERT_TRUE(stack.waitForPhase(ns, "paused-mid", "Suspended", seconds(60))) << diagnose();
  ASSERT_TRUE(stack.waitForPhase(ns, "paused-early", "Suspended", seconds(60))) << diagnose();
  ASSERT_TRUE(stack.waitForPhase(ns, "done", "Succeeded", seconds(120))) << diagnose();

  // Only now the run that will be training across the upgrade.
  apply("live", runManifest("live"));
  ASSERT_TRUE(stack.waitForPhase(ns, "live", "Running", seconds(60))) << diagnose();
  const std::string liveJob = stack.jobOfAttempt(ns, "live", 1);
  const std::string doneJob = stack.jobOfAttempt(ns, "done", 1);
  const std::string slotJob = stack.jobOfAttempt(ns, slotRun, 1);
  ASSERT_FALSE(liveJob.empty() || doneJob.empty() || slotJob.empty()) << diagnose();

  // What the release before left on Vertex: one job per run that has had one, none labelled with a
  // cluster or tagged.
  std::map<std::string, std::set<std::string>> jobsBefore = {
      {"done", {doneJob}}, {"live", {liveJob}}, {"paused-mid", {midJob}}, {"paused-early", {}}, {slotRun, {slotJob}}};
  std::optional<Clock::time_point> newestOldJob;
  for (const auto& [name, jobs] : jobsBefore) {
    ASSERT_EQ(jobNamesOf(name), jobs) << name;
    for (const auto& job : jobsNamed(name)) {
      EXPECT_EQ(job.labels.count("vto-cluster") + job.labels.count("vto-owner"), 0u) << job.name;
      if (job.createTime && (!newestOldJob || *job.createTime > *newestOldJob)) newestOldJob = job.createTime;
    }
  }
  ASSERT_TRUE(newestOldJob.has_value());

  // 2. The old operator stops as a Deployment's pod is stopped.
  EXPECT_EQ(stack.stopOperator(SIGTERM), 0) << stack.operatorLog();
  auto upgradeStarted = std::chrono::steady_clock::now();

  // helm upgrade refuses CRDs it did not create (docs/upgrading.md, step 2), and changes nothing.
  auto refused = runShell(helm("upgrade vto '" + sourceDir() + "/helm/vto' --reuse-values"));
  EXPECT_NE(refused.output.find("invalid ownership metadata"), std::string::npos) << refused.output;
  EXPECT_EQ(cluster.kubectl("get crd trainingruns.vto.dev -o jsonpath={.spec.versions[*].name}").output, "v1alpha1");
  // The one-time adoption, then the upgrade, as docs/upgrading.md says.
  stack.kubectlOk("label crd trainingruns.vto.dev retrainingpolicies.vto.dev app.kubernetes.io/managed-by=Helm --overwrite");
  stack.kubectlOk("annotate crd trainingruns.vto.dev retrainingpolicies.vto.dev meta.helm.sh/release-name=vto "
                  "meta.helm.sh/release-namespace=vto-system --overwrite");
  auto upgraded = runShell(helm("upgrade vto '" + sourceDir() + "/helm/vto' --reuse-values"));
  ASSERT_NE(upgraded.output.find("has been upgraded"), std::string::npos) << upgraded.output;
  ASSERT_EQ(cluster.kubectl("wait --for=condition=Established crd/trainingruns.vto.dev crd/retrainingpolicies.vto.dev "
                            "--timeout=60s").exitCode, 0);
  EXPECT_EQ(storedVersions("trainingruns.vto.dev"), "[\"v1alpha1\",\"v1beta1\"]");
  EXPECT_EQ(storedVersions("retrainingpolicies.vto.dev"), "[\"v1alpha1\",\"v1beta1\"]");

  // The new operator reads the key the chart generated on this upgrade: it trusts untagged jobs made
  // before that moment, which every job of the release before was.
  auto secret = cluster.kubectl("-n vto-system get secret vto-vto-ownership -o jsonpath='{.data.ownership\\.yaml}' | base64 -d");
  ASSERT_EQ(secret.exitCode, 0) << secret.output;
  std::ofstream(stack.ownershipKeyFile()) << secret.output;
  auto at = secret.output.find("trustUntaggedJobsCreatedBefore:");
  ASSERT_NE(at, std::string::npos) << secret.output;
  auto quoted = secret.output.find('"', at);
  auto trustUntil = parseRfc3339(secret.output.substr(quoted + 1, secret.output.find('"', quoted + 1) - quoted - 1));
  ASSERT_GT(trustUntil, *newestOldJob) << "the chart's key trusts no job of the release before: " << secret.output;

  auto liveState = stack.vertex().getJob(liveJob).state;
  std::cout << "[ figures  ] operator down for the upgrade: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - upgradeStarted).count()
            << " s; the live job is " << vertex::jobStateName(liveState) << "\n";
  EXPECT_EQ(liveState, vertex::JobState::Running) << "the live run's job ended before the new operator started: "
                                                     "the test no longer shows a running job followed across it";

  // 3. This build's operator, as the upgraded chart's ServiceAccount, on the same clock.
  stack.useServiceAccountOfInstalledChart();
  stack.useOperatorBinary("");
  stack.startOperator({"--clock-offset-file", clockFlag});

  // It migrates the stored objects and records v1beta1 alone (the chart's RBAC lets it).
  EXPECT_TRUE(waitFor([&] { return storedVersions("trainingruns.vto.dev") == "[\"v1beta1\"]"; }, seconds(60)))
      << storedVersions("trainingruns.vto.dev") << "\n" << stack.operatorLog();
  EXPECT_TRUE(waitFor([&] { return storedVersions("retrainingpolicies.vto.dev") == "[\"v1beta1\"]"; }, seconds(60)))
      << storedVersions("retrainingpolicies.vto.dev") << "\n" << stack.operatorLog();

  // The policy: the new operator has its slot as handled (the next is a day later) and fires nothing.
  auto nextSlot = std::chrono::duration_cast<seconds>((slot + std::chrono::hours(24)).time_since_epoch()).count();
  std::string metrics;
  ASSERT_TRUE(waitFor(
      [&] {
        metrics = runShell("curl -sf " + stack.metricsUrl()).output;
        return metric(metrics, "vto_retrainingpolicy_next_schedule_time_seconds", {{"namespace", ns}, {"policy", "nightly"}}) ==
               static_cast<double>(nextSlot);
      },
      seconds(60)))
      << metrics << diagnose();
  EXPECT_EQ(metric(metrics, "vto_retrainingpolicy_triggers_total", {{"namespace", ns}, {"policy", "nightly"}}), 0.0)
      << "the new operator fired the policy: " << metrics;
  EXPECT_EQ(runsOfPolicy("nightly"), std::set<std::string>{slotRun}) << diagnose();
  EXPECT_EQ(lastScheduleTime("nightly"), rfc3339Exact(slot));

  // The running run is followed to its end with its one job; nothing else got a job meanwhile.
  ASSERT_TRUE(stack.waitForPhase(ns, "live", "Succeeded", seconds(120))) << diagnose();
  for (const auto& [name, jobs] : jobsBefore) EXPECT_EQ(jobNamesOf(name), jobs) << name << "\n" << diagnose();
  auto live = stack.getRun(ns, "live");
  EXPECT_EQ(live["status"]["attempts"].size(), 1u) << live.dump(2);
  EXPECT_EQ(stack.jobOfAttempt(ns, "live", 1), liveJob);
  EXPECT_EQ(stack.phaseOf(ns, "done"), "Succeeded");
  EXPECT_EQ(stack.jobOfAttempt(ns, "done", 1), doneJob);
  EXPECT_EQ(stack.phaseOf(ns, "paused-early"), "Suspended") << diagnose();
  EXPECT_EQ(stack.phaseOf(ns, "paused-mid"), "Suspended") << diagnose();
  // The old jobs are this operator's (made by the release before), not impostors.
  auto events = stack.cluster().kubectl("-n " + ns + " get events -o jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'").output;
  EXPECT_EQ(events.find("ForeignJobIgnored"), std::string::npos) << events;
  EXPECT_EQ(events.find("RunNameConflict"), std::string::npos) << events;

  // 4. The suspended runs resume through v1beta1: paused-mid from the old job's checkpoint as attempt
  // 2, paused-early with its first job; both signed by this operator.
  for (const std::string& name : std::vector<std::string>{"paused-early", "paused-mid"}) {
    stack.kubectlOk("-n " + ns + " patch trainingruns.v1beta1.vto.dev " + name +
                    " --type=merge -p '{\"spec\":{\"suspend\":false}}'");
  }
  const std::string earlyJob = stack.jobOfAttempt(ns, "paused-early", 1);
  const std::string resumedJob = stack.jobOfAttempt(ns, "paused-mid", 2);
  ASSERT_FALSE(earlyJob.empty() || resumedJob.empty()) << diagnose();
  EXPECT_TRUE(waitFor([&] { return trace(resumedJob).value("resumedFrom", "").find("/ckpt-") != std::string::npos; },
                      seconds(30)))
      << trace(resumedJob).dump();
  for (const std::string& name : std::vector<std::string>{"paused-early", "paused-mid", slotRun}) {
    ASSERT_TRUE(stack.waitForPhase(ns, name, "Succeeded", seconds(120))) << name << "\n" << diagnose();
  }
  EXPECT_EQ(jobNamesOf("paused-early"), std::set<std::string>{earlyJob});
  EXPECT_EQ(jobNamesOf("paused-mid"), (std::set<std::string>{midJob, resumedJob}));
  for (const auto& job : {stack.vertex().getJob(earlyJob), stack.vertex().getJob(resumedJob)}) {
    EXPECT_EQ(job.labels.count("vto-cluster"), 1u) << job.name;
    EXPECT_EQ(job.labels.count("vto-owner"), 1u) << job.name;
  }
  for (const auto& [name, jobs] : jobsBefore) {
    if (name != "paused-early" && name != "paused-mid") {
      EXPECT_EQ(jobNamesOf(name), jobs) << name;
    }
  }
  EXPECT_EQ(runsOfPolicy("nightly"), std::set<std::string>{slotRun});
  std::cout << "[ figures  ] the whole upgrade scenario: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s\n";
}

}  // namespace
}  // namespace vto::testing
