// RetrainingPolicies end to end: kubectl -> real API server -> vto run (as the chart's ServiceAccount)
// -> Vertex emulator and fake-gcs-server. Schedules run on a simulated clock: `vto run
// --clock-offset-file` adds the seconds the test writes to real time, so a test jumps the operator to
// the next minute instead of waiting for it. Each test starts its own operator on a fresh clock that
// reads at most 30 s into a minute, so no real minute boundary passes between creating a policy and the
// test's first jump.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <set>

#include "base/rfc3339.h"
#include "crd/timestamp.h"
#include "tests/support/operator_stack.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/ports.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

// Jobs queue 1 s and train 20 steps of 500 ms: long enough to be active while the clock jumps.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "20", "--step-time", "500ms", "--cancel-time", "300ms"});
  static bool installed = (shared.useChartServiceAccount(), true);
  (void)installed;
  return shared;
}

// One operator per test, on a fresh simulated clock; its policies are deleted at the end so that later
// jumps of later tests' clocks do not wake them.
class RetrainingPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(ns.begin(), ns.end(), ns.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
    ns = "rtp-" + ns.substr(0, 40);
    stack().createNamespace(ns);
    clock = std::make_unique<SimulatedClock>(stack().dir() + "/clock-offset");
    clock->startClearOfAMinuteBoundary();
    startOperator();
  }
  void startOperator() {
    // The metrics port is the operator's own choice (port 0): a port picked here beforehand could be
    // taken by a neighbouring test before the operator binds it, and the operator would exit.
    stack().startOperator({"--clock-offset-file", stack().dir() + "/clock-offset", "--log-level", "debug"});
  }
  // What a failing test prints: the policies, their runs, the Events and the operator's log.
  std::string diagnose() {
    return stack().cluster().kubectl("-n " + ns + " get rtp -o yaml").output +
           stack().cluster().kubectl("-n " + ns + " get trainingruns").output +
           stack().cluster().kubectl("-n " + ns + " get events").output + stack().operatorLog();
  }
  std::string scrapeMetrics() {
    return runShell("curl -sf " + stack().metricsUrl()).output;
  }
  void TearDown() override {
    stack().cluster().kubectl("-n " + ns + " delete retrainingpolicies --all --wait=false");
    stack().stopOperator(SIGTERM);
  }

  void apply(const std::string& yaml) {
    std::string path = stack().dir() + "/" + ns + "-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
    std::ofstream(path) << yaml;
    stack().kubectlOk("apply -f '" + path + "'");
  }
  // A policy named `name` whose runs train on a small CPU machine; `spec` is YAML under spec: (indented 2).
  void applyPolicy(const std::string& name, const std::string& spec, const std::string& runSpec = "") {
    applyPolicyUnchecked(name, spec, runSpec);
    // The operator has seen it (Valid) before the test moves the clock.
    stack().kubectlOk("-n " + ns + " wait --for=condition=Valid rtp/" + name + " --timeout=60s");
  }
  void applyPolicyUnchecked(const std::string& name, const std::string& spec, const std::string& runSpec = "") {
    apply("apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
          "\nspec:\n  template:\n    spec:\n      trainer:\n        container:\n"
          "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
          "      resources:\n        machineType: n1-standard-4\n"
          "      baseOutputDirectory: gs://test-bucket/" + ns + "/" + name + "\n" + runSpec + spec);
  }
  json policy(const std::string& name) {
    return json::parse(stack().kubectlOk("-n " + ns + " get rtp " + name + " -o json"));
  }
  // The policy's runs by name.
  std::map<std::string, json> runs(const std::string& name) {
    auto out = stack().cluster().kubectl("-n " + ns + " get trainingruns -l vto.dev/retraining-policy=" + name + " -o json");
    std::map<std::string, json> byName;
    if (out.exitCode != 0) return byName;
    json list = json::parse(out.output);
    for (const auto& run : list["items"]) byName[run["metadata"]["name"].get<std::string>()] = run;
    return byName;
  }
  static std::string runName(const std::string& policy, Clock::time_point slot) {
    return policy + "-" + std::to_string(std::chrono::duration_cast<seconds>(slot.time_since_epoch()).count());
  }
  bool waitForRun(const std::string& policy, const std::string& name, seconds timeout = seconds(60)) {
    return waitFor([&] { return runs(policy).count(name) > 0; }, timeout, std::chrono::milliseconds(200));
  }
  // Status has caught up with the slot: the operator has decided about it.
  bool waitForLastSchedule(const std::string& name, Clock::time_point slot) {
    return waitFor([&] {
      auto status = policy(name).value("status", json::object());
      return status.value("lastScheduleTime", "") == rfc3339Exact(slot);
    }, seconds(60), std::chrono::milliseconds(200));
  }
  std::string envOfJob(const vertex::Job& job, const std::string& variable) {
    for (const auto& pool : job.raw["jobSpec"]["workerPoolSpecs"]) {
      for (const auto& e : pool["containerSpec"].value("env", json::array())) {
        if (e.value("name", "") == variable) return e.value("value", "");
      }
    }
    return "";
  }
  std::vector<vertex::Job> jobsOf(const json& run) { return stack().jobsOfRun(run["metadata"]["uid"]); }

  std::string ns;
  std::unique_ptr<SimulatedClock> clock;
};

TEST_F(RetrainingPolicyTest, EveryMinuteCreatesOneRunPerSlotNamedBySlot) {
  applyPolicy("minutely", "  triggers:\n    schedule: {cron: \"* * * * *\"}\n  concurrencyPolicy: Allow\n  maxActiveRuns: 10\n");
  std::set<std::string> expected;
  for (int i = 0; i < 3; ++i) {
    auto slot = clock->jumpPastNextMinute();
    expected.insert(runName("minutely", slot));
    ASSERT_TRUE(waitForRun("minutely", runName("minutely", slot))) << diagnose();
    ASSERT_TRUE(waitForLastSchedule("minutely", slot));
  }
  auto all = runs("minutely");
  std::set<std::string> names;
  for (const auto& [name, run] : all) names.insert(name);
  EXPECT_EQ(names, expected);
  for (const auto& [name, run] : all) {
    EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-reason"], "Schedule");
    EXPECT_EQ(run["metadata"]["ownerReferences"][0]["kind"], "RetrainingPolicy");
    EXPECT_EQ(run["spec"]["baseOutputDirectory"], "gs://test-bucket/" + ns + "/minutely/" + name);
  }
  // The runs' jobs carry the trigger.
  const auto& first = all.begin()->second;
  ASSERT_TRUE(waitFor([&] { return !jobsOf(first).empty(); }, seconds(60)));
  auto job = jobsOf(first).front();
  EXPECT_EQ(envOfJob(job, "VTO_TRIGGER_REASON"), "Schedule");
  EXPECT_EQ(envOfJob(job, "VTO_TRIGGER_TIME"), first["metadata"]["annotations"]["vto.dev/trigger-time"]);
  auto status = policy("minutely")["status"];
  EXPECT_EQ(status["nextScheduleTime"], rfc3339Exact(clock->nextMinute()));
  stack().kubectlOk("-n " + ns + " wait --for=condition=Ready rtp/minutely --timeout=10s");
  // The trigger counts and schedule gauges, in a form Prometheus accepts.
  auto metrics = scrapeMetrics();
  const std::string labels = "{namespace=\"" + ns + "\",outcome=\"created\",policy=\"minutely\",reason=\"Schedule\"}";
  EXPECT_NE(metrics.find("vto_retrainingpolicy_triggers_total" + labels + " 3"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("vto_retrainingpolicy_next_schedule_time_seconds{namespace=\"" + ns + "\",policy=\"minutely\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("vto_retrainingpolicy_schedule_skew_seconds_count 3"), std::string::npos) << metrics;
  std::string path = stack().dir() + "/rtp-metrics.txt";
  std::ofstream(path) << metrics;
  auto check = runShell("promtool check metrics < '" + path + "'");
  EXPECT_EQ(check.exitCode, 0) << check.output;
}

TEST_F(RetrainingPolicyTest, ForbidSkipsASlotWhileARunIsActiveAndDoesNotRunItLate) {
  // Runs are created suspended, so the first stays active until the test lets it go.
  applyPolicy("forbid", "  triggers:\n    schedule: {cron: \"* * * * *\"}\n", "      suspend: true\n");
  auto first = clock->jumpPastNextMinute();
  ASSERT_TRUE(waitForRun("forbid", runName("forbid", first))) << diagnose();
  ASSERT_TRUE(stack().waitForPhase(ns, runName("forbid", first), "Suspended"));
  auto skipped = clock->jumpPastNextMinute();
  ASSERT_TRUE(waitForLastSchedule("forbid", skipped)) << diagnose();
  EXPECT_EQ(runs("forbid").count(runName("forbid", skipped)), 0u);
  EXPECT_EQ(policy("forbid")["status"].value("missedSchedules", 0), 1);
  auto events = stack().kubectlOk("-n " + ns + " get events --field-selector reason=RunAlreadyActive -o name");
  EXPECT_FALSE(events.empty());
  // The active run ends; the skipped slot does not start late, the next one starts on time.
  stack().kubectlOk("-n " + ns + " patch trainingrun " + runName("forbid", first) +
                    " --type=merge -p '{\"spec\":{\"suspend\":false}}'");
  ASSERT_TRUE(stack().waitForPhase(ns, runName("forbid", first), "Succeeded", seconds(120)));
  auto third = clock->jumpPastNextMinute();
  ASSERT_TRUE(waitForRun("forbid", runName("forbid", third))) << diagnose();
  EXPECT_EQ(runs("forbid").size(), 2u);
}

TEST_F(RetrainingPolicyTest, ReplaceCancelsTheOldJob) {
  applyPolicy("replace", "  triggers:\n    schedule: {cron: \"* * * * *\"}\n  concurrencyPolicy: Replace\n");
  auto first = clock->jumpPastNextMinute();
  const std::string oldName = runName("replace", first);
  ASSERT_TRUE(waitForRun("replace", oldName)) << diagnose();
  ASSERT_TRUE(stack().waitForPhase(ns, oldName, "Running")) << diagnose();
  auto old = runs("replace").at(oldName);
  auto second = clock->jumpPastNextMinute();
  ASSERT_TRUE(waitForRun("replace", runName("replace", second))) << diagnose();
  // The old run's finalizer cancelled its job before the run went away.
  ASSERT_TRUE(waitFor([&] { return runs("replace").count(oldName) == 0; }, seconds(60))) << diagnose();
  auto jobs = jobsOf(old);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, vertex::JobState::Cancelled);
}

TEST_F(RetrainingPolicyTest, SigkillDuringABurstLeavesOneRunPerTriggerAndOneJobPerRun) {
  applyPolicy("burst",
              "  triggers:\n    schedule: {cron: \"* * * * *\"}\n  missedRuns: All\n  maxCatchUpRuns: 20\n"
              "  concurrencyPolicy: Allow\n  maxActiveRuns: 50\n  successfulRunsHistoryLimit: 50\n");
  std::set<std::string> expected;
  int kills = 0;
  for (int burst = 0; burst < 5; ++burst) {
    // Three slots at once: the operator creates three runs in one pass, and is killed while at it.
    auto before = runs("burst").size();
    for (int i = 0; i < 3; ++i) {
      auto slot = clock->nextMinute() + minutes(i);
      expected.insert(runName("burst", slot));
    }
    clock->jumpTo(clock->nextMinute() + minutes(2) + seconds(2));
    ASSERT_TRUE(waitFor([&] { return runs("burst").size() > before; }, seconds(60), std::chrono::milliseconds(20)))
        << diagnose();
    EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
    ++kills;
    startOperator();
  }
  ASSERT_TRUE(waitFor([&] { return runs("burst").size() >= expected.size(); }, seconds(120))) << diagnose();
  auto all = runs("burst");
  std::set<std::string> names;
  for (const auto& [name, run] : all) names.insert(name);
  EXPECT_EQ(names, expected);
  size_t jobs = 0;
  for (const auto& [name, run] : all) {
    ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(180))) << name << "\n" << diagnose();
    auto runJobs = jobsOf(run);
    EXPECT_EQ(runJobs.size(), 1u) << name;
    jobs += runJobs.size();
  }
  std::cout << "[ figures  ] " << kills << " SIGKILLs, " << expected.size() << " triggers, " << all.size() << " runs, "
            << jobs << " jobs\n";
}

TEST_F(RetrainingPolicyTest, AManualRequestCreatesOneRun) {
  applyPolicy("button", "  triggers: {}\n");
  stack().kubectlOk("-n " + ns + " annotate rtp/button vto.dev/retrain-requested=first --overwrite");
  ASSERT_TRUE(waitFor([&] { return policy("button")["status"].value("lastHandledRetrainRequest", "") == "first"; },
                      seconds(60)))
      << diagnose();
  auto all = runs("button");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all.begin()->second["metadata"]["annotations"]["vto.dev/trigger-reason"], "Manual");
  // Any new value is one more request.
  stack().kubectlOk("-n " + ns + " annotate rtp/button vto.dev/retrain-requested=second --overwrite");
  ASSERT_TRUE(waitFor([&] { return policy("button")["status"].value("lastHandledRetrainRequest", "") == "second"; },
                      seconds(60)))
      << diagnose();
  EXPECT_EQ(runs("button").size(), 2u);
}

TEST_F(RetrainingPolicyTest, TheSecondRunWarmStartsFromTheFirstRunsModel) {
  applyPolicy("warm", "  triggers: {}\n  warmStart: true\n");
  stack().kubectlOk("-n " + ns + " annotate rtp/warm vto.dev/retrain-requested=1 --overwrite");
  ASSERT_TRUE(waitFor([&] { return runs("warm").size() == 1; }, seconds(60))) << diagnose();
  auto first = runs("warm").begin()->second;
  const std::string firstName = first["metadata"]["name"];
  ASSERT_TRUE(stack().waitForPhase(ns, firstName, "Succeeded", seconds(120)));
  const std::string model = "gs://test-bucket/" + ns + "/warm/" + firstName + "/model/";
  ASSERT_TRUE(waitFor([&] {
    auto status = policy("warm").value("status", json::object());
    return status.contains("lastSuccessfulRun") && status["lastSuccessfulRun"].value("modelUri", "") == model;
  }, seconds(60)));
  EXPECT_EQ(envOfJob(jobsOf(first).front(), "VTO_WARM_START_FROM"), "");
  stack().kubectlOk("-n " + ns + " annotate rtp/warm vto.dev/retrain-requested=2 --overwrite");
  ASSERT_TRUE(waitFor([&] { return runs("warm").size() == 2; }, seconds(60))) << diagnose();
  json second;
  for (const auto& [name, run] : runs("warm"))
    if (name != firstName) second = run;
  ASSERT_TRUE(waitFor([&] { return !jobsOf(second).empty(); }, seconds(60))) << diagnose();
  EXPECT_EQ(envOfJob(jobsOf(second).front(), "VTO_WARM_START_FROM"), model);
  EXPECT_EQ(envOfJob(jobsOf(second).front(), "VTO_TRIGGER_REASON"), "Manual");
}

TEST_F(RetrainingPolicyTest, HistoryLimitsHold) {
  applyPolicy("history",
              "  triggers:\n    schedule: {cron: \"* * * * *\"}\n  missedRuns: All\n  concurrencyPolicy: Allow\n"
              "  maxActiveRuns: 10\n  successfulRunsHistoryLimit: 2\n");
  clock->jumpTo(clock->nextMinute() + minutes(3) + seconds(2));  // four slots at once
  ASSERT_TRUE(waitFor([&] {
    auto status = policy("history").value("status", json::object());
    return status.value("counts", json::object()).value("succeeded", 0) == 4;
  }, seconds(180))) << diagnose();
  ASSERT_TRUE(waitFor([&] { return runs("history").size() == 2; }, seconds(60))) << diagnose();
  for (const auto& [name, run] : runs("history")) EXPECT_EQ(run["status"].value("phase", ""), "Succeeded") << name;
  EXPECT_FALSE(stack().kubectlOk("-n " + ns + " get events --field-selector reason=SuccessfulDelete -o name").empty());
}

TEST_F(RetrainingPolicyTest, SuspendAndUnsuspendFireNothingMissed) {
  applyPolicy("pausable", "  triggers:\n    schedule: {cron: \"* * * * *\"}\n  concurrencyPolicy: Allow\n  maxActiveRuns: 10\n");
  auto first = clock->jumpPastNextMinute();
  ASSERT_TRUE(waitForRun("pausable", runName("pausable", first))) << diagnose();
  stack().kubectlOk("-n " + ns + " patch rtp pausable --type=merge -p '{\"spec\":{\"suspend\":true}}'");
  stack().kubectlOk("-n " + ns + " wait --for=condition=Suspended rtp/pausable --timeout=60s");
  clock->jumpTo(clock->nextMinute() + minutes(10));  // ten slots pass while suspended
  stack().kubectlOk("-n " + ns + " patch rtp pausable --type=merge -p '{\"spec\":{\"suspend\":false}}'");
  stack().kubectlOk("-n " + ns + " wait --for=condition=Suspended=false rtp/pausable --timeout=60s");
  auto next = clock->nextMinute();
  ASSERT_TRUE(waitFor([&] {
    return policy("pausable").value("status", json::object()).value("nextScheduleTime", "") == rfc3339Exact(next);
  }, seconds(60))) << diagnose();
  EXPECT_EQ(runs("pausable").size(), 1u) << "a slot missed while suspended was fired";
  auto after = clock->jumpPastNextMinute();
  ASSERT_TRUE(waitForRun("pausable", runName("pausable", after))) << diagnose();
  EXPECT_EQ(runs("pausable").size(), 2u);
}

TEST_F(RetrainingPolicyTest, AnInvalidPolicyIsReportedAndCreatesNoRun) {
  // Time zones are checked by the operator (the API server has no tzdata): Valid=False and a Warning.
  applyPolicyUnchecked("broken", "  triggers:\n    schedule: {cron: \"* * * * *\", timeZone: Mars/Olympus}\n");
  stack().kubectlOk("-n " + ns + " wait --for=condition=Valid=false rtp/broken --timeout=60s");
  EXPECT_NE(policy("broken")["status"]["conditions"].dump().find("Mars/Olympus"), std::string::npos);
  auto eventCount = [&] {
    auto out = stack().cluster().kubectl("-n " + ns +
                                         " get events --field-selector reason=UnknownTimeZone -o jsonpath='{.items[0].count}'");
    return out.exitCode == 0 && !out.output.empty() ? std::stoi(out.output) : 0;
  };
  ASSERT_GE(eventCount(), 1);
  // A due slot and a manual request: the operator looks again (the Warning repeats) and starts nothing.
  clock->jumpPastNextMinute();
  stack().kubectlOk("-n " + ns + " annotate rtp/broken vto.dev/retrain-requested=1 --overwrite");
  ASSERT_TRUE(waitFor([&] { return eventCount() >= 2; }, seconds(60))) << diagnose();
  EXPECT_TRUE(runs("broken").empty());
}

TEST_F(RetrainingPolicyTest, TheChartGrantsWhatThePolicyReconcilerNeeds) {
  auto canI = [](const std::string& what) {
    return stack().cluster().kubectl("auth can-i " + what + " --as=system:serviceaccount:vto-system:vto").exitCode == 0;
  };
  EXPECT_TRUE(canI("watch retrainingpolicies.vto.dev --all-namespaces"));
  EXPECT_TRUE(canI("update retrainingpolicies.vto.dev --subresource=status -n default"));
  EXPECT_TRUE(canI("create trainingruns.vto.dev -n default"));
  EXPECT_TRUE(canI("delete trainingruns.vto.dev -n default"));
  EXPECT_FALSE(canI("update retrainingpolicies.vto.dev -n default")) << "the spec is the user's";
  EXPECT_FALSE(canI("delete retrainingpolicies.vto.dev -n default"));
}

}  // namespace
}  // namespace vto::testing
