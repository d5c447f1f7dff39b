// Admission by Kueue end to end (API.md "Admission by Kueue"): the real Kueue v0.17.0 manager
// (tests/support/kueue_process.h) and `vto run --kueue` as the Helm chart's ServiceAccount with
// kueue.enabled, against the test API server and the Vertex emulator.
//   - A ClusterQueue of 2 vto.dev/nvidia-l4 and three runs of one L4 each: two jobs, the third waits
//     (Queued, WaitingForKueue with Kueue's own message) and gets its job once a run ends and its
//     Workload is Finished (quota back); one job per run.
//   - A higher priority preempts a running low one: its job cancelled, its admission released, the
//     run resumed from its checkpoint once admitted again; no duplicate job.
//   - A missing LocalQueue is said in the run's status, no job; the run's priority is its
//     WorkloadPriorityClass's; deleting the run deletes its Workload.
//   - A run without the label is untouched: its job at once, no Workload.
//   - What a labelled run costs the API server beyond an unlabelled one; the chart's RBAC.
//   - A RetrainingPolicy's run waits for Kueue's admission before its job, as a TrainingRun does.
//   - A capacity failover to other accelerators (a quota refusal) replaces the Workload and waits for
//     Kueue's admission of the new placement.
//   - The operator killed with SIGKILL inside the two windows admission opens: after Kueue admitted
//     and Vertex created the job but before the run's status names it; after Kueue evicted and Vertex
//     took the cancel but before the run's status says so. The emulator loses that call's answer and
//     then answers nothing (its faults "after" a create or a cancel), so the operator is provably in the
//     window when killed. After a restart: one job per attempt, the admission released, the run resumed.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "reconcilers/trainingrun/kueue.h"
#include "tests/support/kueue_process.h"
#include "tests/support/operator_stack.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Jobs queue 1 s and train 8 steps of 1 s: long enough to see two run while the third waits.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "8", "--step-time", "1s", "--cancel-time", "300ms"});
  return shared;
}

KueueProcess& kueue() {
  static KueueProcess process(stack().cluster());
  return process;
}

class Kueue : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = std::chrono::steady_clock::now();
    stack();
    kueue();
    // The chart's RBAC with kueue.enabled (its configmap says kueue: "true"; the stack passes flags).
    stack().useChartServiceAccount({"kueue.enabled=true"});
    stack().startOperator({"--kueue"});
    // Only waited for by its test: it trains beside the others.
    stack().createNamespace("kueue-plain");
    apply(l4Run("kueue-plain", "plain", ""));
    std::cout << "stack, Kueue " << kKueueVersion << " and the operator ready in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count()
              << " ms\n";
  }
  void TearDown() override {
    if (HasFailure()) {
      std::cout << "operator log:\n" << stack().operatorLog().substr(0, 20000) << "\nKueue's log ends with:\n"
                << kueue().logTail() << "\n";
    }
  }

  static void apply(const std::string& yaml) {
    std::string path = stack().dir() + "/manifest-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
    std::ofstream(path) << yaml;
    stack().kubectlOk("apply --server-side --force-conflicts -f '" + path + "'");  // Kueue also writes its queues
  }

  // A ResourceFlavor, a ClusterQueue named after the namespace with `l4` vto.dev/nvidia-l4 and 10
  // vto.dev/runs, and a LocalQueue of the same name in it: docs/kueue.md's Vertex GPUs queue.
  // `t4` more vto.dev/nvidia-tesla-t4 when not 0.
  void makeQueues(const std::string& ns, int l4, const std::string& preemption = "", int t4 = 0) {
    stack().createNamespace(ns);
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: vertex\n");
    applyClusterQueue(ns, l4, preemption, t4);
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: " + ns + "\n  namespace: " + ns +
          "\nspec:\n  clusterQueue: " + ns + "\n");
  }
  static void applyClusterQueue(const std::string& ns, int l4, const std::string& preemption = "", int t4 = 0) {
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: " + ns +
          "\nspec:\n  namespaceSelector: {}\n" + preemption + "  resourceGroups:\n"
          "  - coveredResources: [vto.dev/nvidia-l4, vto.dev/runs" + (t4 ? ", vto.dev/nvidia-tesla-t4" : "") + "]\n"
          "    flavors:\n    - name: vertex\n      resources:\n"
          "      - name: vto.dev/nvidia-l4\n        nominalQuota: " + std::to_string(l4) +
          "\n      - name: vto.dev/runs\n        nominalQuota: 10\n" +
          (t4 ? "      - name: vto.dev/nvidia-tesla-t4\n        nominalQuota: " + std::to_string(t4) + "\n" : ""));
  }

  // A run on one g2-standard-8 (its one NVIDIA_L4) with `labels` (YAML lines under labels:).
  static std::string l4Run(const std::string& ns, const std::string& name, const std::string& labels) {
    return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
           (labels.empty() ? "" : "\n  labels:\n" + labels) +
           "\nspec:\n  framework: pytorch\n  trainer:\n    container:\n"
           "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
           "  resources: {machineType: g2-standard-8, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
           "  baseOutputDirectory: gs://" + std::string(kTestBucket) + "/" + ns + "/" + name + "\n";
  }

  // Labels for namespace `ns`'s LocalQueue and a WorkloadPriorityClass.
  static std::string priorityLabels(const std::string& ns, const std::string& priorityClass) {
    return "    kueue.x-k8s.io/queue-name: " + ns + "\n    kueue.x-k8s.io/priority-class: " + priorityClass + "\n";
  }

  // A queue of one L4 where a higher priority preempts a lower one (vto-test-high over vto-test-low),
  // and run "low" training on it with a checkpoint written, what it resumes from once preempted: its
  // uid, or "" (a failure) if it never got there.
  std::string trainLowPriorityRun(const std::string& ns) {
    makeQueues(ns, 1, "  preemption:\n    withinClusterQueue: LowerPriority\n");
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: vto-test-low\nvalue: 100\n");
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: vto-test-high\nvalue: 1000\n");
    apply(l4Run(ns, "low", priorityLabels(ns, "vto-test-low")));
    bool training =
        stack().waitForPhase(ns, "low", "Running", seconds(60)) &&
        waitFor([&] { return !stack().gcsClient().listObjects(kTestBucket, ns + "/low/checkpoints/ckpt-").empty(); },
                seconds(30));
    if (!training) {
      ADD_FAILURE() << "low never trained with a checkpoint: " << stack().phaseOf(ns, "low") << " " << readyOf(ns, "low");
      return "";
    }
    return stack().getRun(ns, "low")["metadata"]["uid"].get<std::string>();
  }

  std::string jobOf(const std::string& ns, const std::string& name) {
    auto run = stack().getRun(ns, name);
    return run.is_object() ? run.value(json::json_pointer("/status/job/name"), "") : "";
  }
  // The run's Ready condition as "status/reason: message".
  std::string readyOf(const std::string& ns, const std::string& name) {
    auto run = stack().getRun(ns, name);
    if (!run.is_object()) return "";
    for (const auto& c : run.value(json::json_pointer("/status/conditions"), json::array()))
      if (c.value("type", "") == "Ready")
        return c.value("status", "") + "/" + c.value("reason", "") + ": " + c.value("message", "");
    return "";
  }
  json workloads(const std::string& ns) {
    return kube.list(reconcilers::workloadResource(), ns, {}).items;
  }
  json workloadOf(const std::string& ns, const std::string& run) {
    auto object = stack().getRun(ns, run);
    std::string uid = object.is_object() ? object["metadata"].value("uid", "") : "";
    for (const auto& w : workloads(ns))
      if (w.value(json::json_pointer("/metadata/labels/vto.dev~1run-uid"), "") == uid) return w;
    return nullptr;
  }
  static std::string conditionOf(const json& workload, const std::string& type) {
    for (const auto& c : workload.value(json::json_pointer("/status/conditions"), json::array()))
      if (c.value("type", "") == type) return c.value("status", "") + "/" + c.value("reason", "");
    return "";
  }

  controller::RestKubeClient kube{controller::loadKubeconfig(stack().cluster().kubeconfig())};
};

TEST_F(Kueue, TwoL4sRunTwoJobsTheThirdWaitsForKueueAndStartsWhenOneEnds) {
  const std::string ns = "kueue-l4";
  makeQueues(ns, 2);
  const std::string queue = "    kueue.x-k8s.io/queue-name: " + ns + "\n";
  apply(l4Run(ns, "l4-0", queue) + "---\n" + l4Run(ns, "l4-1", queue) + "---\n" + l4Run(ns, "l4-2", queue));
  const std::vector<std::string> runs = {"l4-0", "l4-1", "l4-2"};

  // Two jobs, and the third run waiting with Kueue's words, while the two still run.
  std::string waiting;
  std::string seen;
  ASSERT_TRUE(waitFor(
      [&] {
        int withJob = 0;
        waiting.clear();
        seen.clear();
        for (const auto& run : runs) {
          auto ready = readyOf(ns, run);
          seen += run + " [" + stack().phaseOf(ns, run) + "] " + ready + "\n";
          if (!jobOf(ns, run).empty()) ++withJob;
          else if (ready.find("False/WaitingForKueue: couldn't assign flavors to pod set workerpool0: insufficient unused "
                              "quota for vto.dev/nvidia-l4 in flavor vertex, 1 more needed") == 0)
            waiting = run;
        }
        return withJob == 2 && !waiting.empty();
      },
      seconds(90)))
      << seen;
  EXPECT_EQ(stack().phaseOf(ns, waiting), "Queued");
  EXPECT_NE(stack().eventsOf(ns, waiting).find("WaitingForKueue: Workload trainingrun-" + waiting), std::string::npos)
      << stack().eventsOf(ns, waiting);
  auto held = workloadOf(ns, waiting);
  ASSERT_TRUE(held.is_object());
  EXPECT_EQ(conditionOf(held, "QuotaReserved"), "False/Pending");
  EXPECT_EQ(held["metadata"]["ownerReferences"][0]["name"], waiting);
  EXPECT_EQ(held["metadata"]["ownerReferences"][0]["controller"], true);

  // One of the two ends: its Workload is Finished, the quota comes back, the third gets its job.
  for (const auto& run : runs) {
    ASSERT_TRUE(stack().waitForPhase(ns, run, "Succeeded", seconds(120)))
        << run << " is " << stack().phaseOf(ns, run) << ": " << readyOf(ns, run);
  }
  for (const auto& run : runs) {
    auto workload = workloadOf(ns, run);
    ASSERT_TRUE(workload.is_object()) << run;
    EXPECT_EQ(conditionOf(workload, "Finished"), "True/Succeeded") << workload.dump(2);
    EXPECT_EQ(stack().jobsOfRun(stack().getRun(ns, run)["metadata"]["uid"].get<std::string>()).size(), 1u) << run;
  }
  // The third's job was created only after another run's job had ended.
  auto third = stack().jobsOfRun(stack().getRun(ns, waiting)["metadata"]["uid"].get<std::string>());
  ASSERT_EQ(third.size(), 1u);
  bool afterAnEnd = false;
  for (const auto& run : runs) {
    if (run == waiting) continue;
    auto jobs = stack().jobsOfRun(stack().getRun(ns, run)["metadata"]["uid"].get<std::string>());
    if (!jobs.empty() && jobs[0].endTime && third[0].createTime && *jobs[0].endTime <= *third[0].createTime) afterAnEnd = true;
  }
  EXPECT_TRUE(afterAnEnd) << "the third job started before any other had ended";
}

TEST_F(Kueue, AHigherPriorityRunPreemptsALowOneWhichResumesFromItsCheckpointOnceReadmitted) {
  const std::string ns = "kueue-preempt";
  auto lowUid = trainLowPriorityRun(ns);
  ASSERT_FALSE(lowUid.empty());

  apply(l4Run(ns, "high", priorityLabels(ns, "vto-test-high")));
  // Kueue evicts the low run's Workload; vto cancels its job, gives the admission back once it ended;
  // the high run gets the L4.
  ASSERT_TRUE(waitFor([&] { return !jobOf(ns, "high").empty(); }, seconds(60)))
      << "high: " << readyOf(ns, "high") << "\nlow: " << stack().phaseOf(ns, "low") << " " << readyOf(ns, "low");
  auto lowJobs = stack().jobsOfRun(lowUid);
  ASSERT_EQ(lowJobs.size(), 1u);
  EXPECT_TRUE(lowJobs[0].state == vertex::JobState::Cancelled || lowJobs[0].state == vertex::JobState::Cancelling)
      << vertex::jobStateName(lowJobs[0].state);
  EXPECT_NE(stack().eventsOf(ns, "low").find("Preempted: Kueue evicted Workload trainingrun-low-"), std::string::npos)
      << stack().eventsOf(ns, "low");
  EXPECT_EQ(stack().phaseOf(ns, "low"), "Queued") << readyOf(ns, "low");

  // The high run ends: the low one is admitted again and resumes from its newest checkpoint.
  ASSERT_TRUE(stack().waitForPhase(ns, "high", "Succeeded", seconds(90)));
  ASSERT_TRUE(stack().waitForPhase(ns, "low", "Succeeded", seconds(90)))
      << stack().phaseOf(ns, "low") << " " << readyOf(ns, "low") << "\n" << stack().eventsOf(ns, "low");
  auto low = stack().getRun(ns, "low");
  ASSERT_EQ(low["status"]["attempts"].size(), 2u) << low["status"].dump(2);
  std::string resumedFrom = low["status"]["attempts"][1].value("resumedFrom", "");
  EXPECT_EQ(resumedFrom.rfind("gs://test-bucket/kueue-preempt/low/checkpoints/ckpt-", 0), 0u) << resumedFrom;
  EXPECT_EQ(stack().jobsOfRun(lowUid).size(), 2u) << "one cancelled, one resumed: no duplicate";
  EXPECT_EQ(stack().jobsOfRun(stack().getRun(ns, "high")["metadata"]["uid"].get<std::string>()).size(), 1u);
  EXPECT_EQ(conditionOf(workloadOf(ns, "low"), "Finished"), "True/Succeeded");
}

TEST_F(Kueue, AMissingLocalQueueIsSaidAndTheRunsWorkloadGoesWithIt) {
  const std::string ns = "kueue-lost";
  stack().createNamespace(ns);
  apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: vto-test-high\nvalue: 1000\n");
  apply(l4Run(ns, "lost", "    kueue.x-k8s.io/queue-name: no-such-queue\n    kueue.x-k8s.io/priority-class: vto-test-high\n"));
  ASSERT_TRUE(waitFor([&] { return readyOf(ns, "lost") == "False/WaitingForKueue: LocalQueue no-such-queue doesn't exist"; },
                      seconds(60)))
      << readyOf(ns, "lost");
  EXPECT_EQ(stack().phaseOf(ns, "lost"), "Queued");
  EXPECT_EQ(jobOf(ns, "lost"), "");
  EXPECT_TRUE(stack().jobsOfRun(stack().getRun(ns, "lost")["metadata"]["uid"].get<std::string>()).empty());
  auto workload = workloadOf(ns, "lost");
  ASSERT_TRUE(workload.is_object());
  EXPECT_EQ(workload["spec"]["priority"], 1000);
  EXPECT_EQ(workload["spec"]["priorityClassRef"]["name"], "vto-test-high");
  EXPECT_EQ(workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"],
            json({{"vto.dev/nvidia-l4", "1"}, {"vto.dev/runs", "1"}, {"cpu", "0"}, {"memory", "0"}}));

  // Deleted: the finalizer deletes its Workload (the test cluster has no garbage collector).
  stack().kubectlOk("-n " + ns + " delete trainingrun lost --wait=false");
  EXPECT_TRUE(waitFor([&] { return stack().getRun(ns, "lost").is_null() && workloads(ns).empty(); }, seconds(60)))
      << workloads(ns).dump(2);
}

TEST_F(Kueue, ARunWithoutTheLabelIsUntouched) {
  const std::string ns = "kueue-plain";  // applied as the operator started
  ASSERT_TRUE(stack().waitForPhase(ns, "plain", "Succeeded", seconds(90))) << readyOf(ns, "plain");
  EXPECT_TRUE(workloads(ns).empty()) << workloads(ns).dump(2);
  EXPECT_EQ(stack().eventsOf(ns, "plain").find("Kueue"), std::string::npos) << stack().eventsOf(ns, "plain");
  EXPECT_EQ(stack().jobsOfRun(stack().getRun(ns, "plain")["metadata"]["uid"].get<std::string>()).size(), 1u);
}

// What a labelled run costs the API server beyond an unlabelled one, over its whole life, counted by
// the operator itself (rest_client_requests_total: every request its kube client sent, Events too).
// By design: its Workload's create, one more status write (Queued, waiting for Kueue) and the
// Workload's Finished write; the same job lifecycle otherwise.
TEST_F(Kueue, ALabelledRunCostsItsWorkloadOneStatusWriteAndItsFinish) {
  const std::string ns = "kueue-cost";
  ASSERT_TRUE(stack().waitForPhase("kueue-plain", "plain", "Succeeded", seconds(90)));  // its writes are not counted
  makeQueues(ns, 10);
  const int runs = 4;
  auto idle = [] {
    return waitFor(
        [] {
          auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
          return !metrics.empty() && sampleSum(metrics, "workqueue_depth") == 0 &&
                 sampleSum(metrics, "controller_runtime_active_workers") == 0;
        },
        seconds(30));
  };
  auto requests = [](bool writes) {
    return sampleSum(runShell("curl -sf " + stack().metricsUrl()).output, "rest_client_requests_total",
                     [writes](const Labels& l) { return (l.at("method") != "GET") == writes; });
  };
  auto refused = [] {  // writes the API server refused (a 409 is a write made from a stale read)
    return sampleSum(runShell("curl -sf " + stack().metricsUrl()).output, "rest_client_requests_total",
                     [](const Labels& l) { return l.at("method") != "GET" && l.at("code")[0] != '2'; });
  };
  struct Cost {
    double writes = 0, reads = 0, refused = 0;
  };
  auto lifeOf = [&](const std::string& prefix, const std::string& labels) {
    EXPECT_TRUE(idle());
    double writesBefore = requests(true), readsBefore = requests(false), refusedBefore = refused();
    std::string manifests;
    for (int i = 0; i < runs; ++i) manifests += "---\n" + l4Run(ns, prefix + std::to_string(i), labels);
    apply(manifests);
    for (int i = 0; i < runs; ++i) {
      EXPECT_TRUE(stack().waitForPhase(ns, prefix + std::to_string(i), "Succeeded", seconds(120)));
    }
    if (!labels.empty()) {
      EXPECT_TRUE(waitFor(
          [&] {
            for (int i = 0; i < runs; ++i)
              if (conditionOf(workloadOf(ns, prefix + std::to_string(i)), "Finished") != "True/Succeeded") return false;
            return true;
          },
          seconds(30)));
    }
    EXPECT_TRUE(idle());
    return Cost{(requests(true) - writesBefore) / runs, (requests(false) - readsBefore) / runs,
                refused() - refusedBefore};
  };
  auto plain = lifeOf("plain-", "");
  auto queued = lifeOf("queued-", "    kueue.x-k8s.io/queue-name: " + ns + "\n");
  std::cout << "per run, over its life: " << plain.writes << " writes and " << plain.reads << " reads without the label, "
            << queued.writes << " writes and " << queued.reads << " reads with it (" << queued.writes - plain.writes
            << " more writes); writes refused: " << plain.refused << " and " << queued.refused << "\n";
  // 3 by design; whether a pass sees a job's QUEUED state moves either batch's average by up to 1, so
  // this only catches a write per pass (a loop), not one write more.
  EXPECT_LE(queued.writes - plain.writes, 5.0);
  EXPECT_LE(queued.reads, plain.reads) << "a run without a priority class reads nothing more (the cache answers)";
  EXPECT_EQ(queued.refused, 0) << "a write from a stale read of a run or its Workload (409)";
}

TEST_F(Kueue, TheChartGrantsWhatKueueNeedsAndTheOperatorNeededNoMore) {
  auto canI = [](const std::string& what) {
    return stack().cluster().kubectl("auth can-i " + what + " --as=system:serviceaccount:vto-system:vto").exitCode == 0;
  };
  EXPECT_TRUE(canI("create workloads.kueue.x-k8s.io -n default"));
  EXPECT_TRUE(canI("watch workloads.kueue.x-k8s.io --all-namespaces"));
  EXPECT_TRUE(canI("delete workloads.kueue.x-k8s.io -n default"));
  EXPECT_TRUE(canI("patch workloads.kueue.x-k8s.io --subresource=status -n default"));
  EXPECT_TRUE(canI("get workloadpriorityclasses.kueue.x-k8s.io"));
  EXPECT_FALSE(canI("update workloads.kueue.x-k8s.io -n default"));
  EXPECT_FALSE(canI("patch workloads.kueue.x-k8s.io -n default"));
  EXPECT_FALSE(canI("create clusterqueues.kueue.x-k8s.io"));
  EXPECT_EQ(stack().operatorLog().find("forbidden"), std::string::npos) << stack().operatorLog();
}

// A capacity failover to other accelerators is a new admission: an admitted L4 run whose create Vertex
// refuses for its L4 quota (a 429 naming the quota) moves to its T4 fallback in that pass; its L4
// Workload is replaced by one asking for the T4, and the job is created once Kueue admits that one.
TEST_F(Kueue, AFailoverToOtherAcceleratorsIsAdmittedAgainForItsNewPlacement) {
  const std::string ns = "kueue-failover";
  makeQueues(ns, 1, "", /*t4=*/1);
  struct Refusal {  // the emulator's capacity entries removed whatever happens: others use L4s
    ~Refusal() { runShell("curl -sf -X DELETE " + stack().emulator().url() + "/emulator/v1/capacity"); }
  } refusal;
  auto refused = runShell("curl -sf -X POST -H 'Content-Type: application/json' -d '{\"location\": \"us-central1\", "
                          "\"acceleratorType\": \"NVIDIA_L4\", \"quota\": 0, \"quotaMode\": \"refuse\"}' " +
                          stack().emulator().url() + "/emulator/v1/capacity");
  ASSERT_EQ(refused.exitCode, 0) << refused.output;
  apply(l4Run(ns, "failover", "    kueue.x-k8s.io/queue-name: " + ns + "\n") +
        "  capacity:\n    fallbacks:\n"
        "    - resources: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}\n");
  ASSERT_TRUE(waitFor([&] { return !jobOf(ns, "failover").empty(); }, seconds(60)))
      << stack().phaseOf(ns, "failover") << " " << readyOf(ns, "failover") << "\n" << stack().eventsOf(ns, "failover");
  auto run = stack().getRun(ns, "failover");
  EXPECT_EQ(run["status"]["capacity"]["blocked"][0].value("reason", ""), "QuotaExceeded") << run["status"].dump(2);
  EXPECT_EQ(stack().jobsOfRun(run["metadata"]["uid"].get<std::string>()).size(), 1u) << "only the T4 job";
  auto all = workloads(ns);
  ASSERT_EQ(all.size(), 1u) << "the L4 Workload replaced, not kept beside: " << all.dump(2);
  EXPECT_EQ(all[0]["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"],
            json({{"vto.dev/nvidia-tesla-t4", "1"}, {"vto.dev/runs", "1"}, {"cpu", "0"}, {"memory", "0"}}));
  EXPECT_EQ(conditionOf(all[0], "Admitted"), "True/Admitted");
}

// A RetrainingPolicy whose template carries the label: the run it starts (on request here) gets a
// Workload on the policy's queue and waits while the queue has no L4 for it; its job comes once the
// ClusterQueue is given one and Kueue admits it.
TEST_F(Kueue, ARetrainingPolicysRunWaitsForKueueBeforeItsJob) {
  const std::string ns = "kueue-policy";
  makeQueues(ns, 0);
  apply("apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata:\n  name: nightly\n  namespace: " + ns +
        "\n  annotations:\n    vto.dev/retrain-requested: \"1\"\nspec:\n  template:\n    metadata:\n      labels:\n"
        "        kueue.x-k8s.io/queue-name: " + ns + "\n    spec:\n      framework: pytorch\n      trainer:\n"
        "        container:\n          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
        "      resources: {machineType: g2-standard-8, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
        "      baseOutputDirectory: gs://" + std::string(kTestBucket) + "/" + ns + "\n");
  std::string run;
  ASSERT_TRUE(waitFor(
      [&] {
        run = stack().kubectlOk("-n " + ns + " get trun -l vto.dev/retraining-policy=nightly -o jsonpath={.items[*].metadata.name}");
        return !run.empty() && readyOf(ns, run).find("False/WaitingForKueue: couldn't assign flavors") == 0;
      },
      seconds(60)))
      << "run '" << run << "': " << (run.empty() ? "" : readyOf(ns, run));
  EXPECT_EQ(jobOf(ns, run), "");
  auto workload = workloadOf(ns, run);
  ASSERT_TRUE(workload.is_object());
  EXPECT_EQ(workload["spec"]["queueName"], ns);
  EXPECT_EQ(workload["metadata"]["ownerReferences"][0]["name"], run);

  applyClusterQueue(ns, 1);  // the ClusterQueue now has an L4
  ASSERT_TRUE(waitFor([&] { return !jobOf(ns, run).empty(); }, seconds(60))) << readyOf(ns, run);
  EXPECT_EQ(conditionOf(workloadOf(ns, run), "Admitted"), "True/Admitted");
  EXPECT_EQ(stack().jobsOfRun(stack().getRun(ns, run)["metadata"]["uid"].get<std::string>()).size(), 1u);
}

// The emulator's faults: `body` as POST /emulator/v1/faults takes it ({} clears them).
void emulatorFaults(const std::string& body) {
  auto result = runShell("curl -sf -X POST -d '" + body + "' " + stack().emulator().url() + "/emulator/v1/faults");
  ASSERT_EQ(result.exitCode, 0) << result.output;
}
int answersLost() {
  auto stats = json::parse(runShell("curl -sf " + stack().emulator().url() + "/emulator/v1/stats").output, nullptr, false);
  return stats.is_object() ? stats.value("answersLost", 0) : -1;
}

// A create whose answer is lost, then Vertex unreachable: the job exists, the run's status does not
// name it, Kueue has admitted. Killed there and restarted, the operator finds the job by its labels
// (the exactly-once lookup) instead of making a second, and follows it under the same Workload.
TEST_F(Kueue, KilledBetweenAdmissionAndRecordingTheJobTheRestartedOperatorMakesNoSecond) {
  const std::string ns = "kueue-kill-admit";
  makeQueues(ns, 1);
  // The next create must be this test's: the unlabelled run the suite applied at its start has its job.
  ASSERT_TRUE(waitFor([&] { return !jobOf("kueue-plain", "plain").empty(); }, seconds(60)));
  int lostBefore = answersLost();
  emulatorFaults(R"({"unavailable": 1000000, "after": "create"})");
  apply(l4Run(ns, "admitted", "    kueue.x-k8s.io/queue-name: " + ns + "\n"));
  ASSERT_TRUE(waitFor([&] { return answersLost() == lostBefore + 1; }, seconds(60)))
      << stack().phaseOf(ns, "admitted") << " " << readyOf(ns, "admitted");
  // Inside the window: admitted, the job made, and the run does not know it.
  EXPECT_EQ(conditionOf(workloadOf(ns, "admitted"), "Admitted"), "True/Admitted");
  EXPECT_EQ(jobOf(ns, "admitted"), "");
  EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
  emulatorFaults("{}");
  stack().startOperator({"--kueue"});

  ASSERT_TRUE(stack().waitForPhase(ns, "admitted", "Succeeded", seconds(90)))
      << stack().phaseOf(ns, "admitted") << " " << readyOf(ns, "admitted");
  auto uid = stack().getRun(ns, "admitted")["metadata"]["uid"].get<std::string>();
  EXPECT_EQ(stack().jobsOfRun(uid).size(), 1u) << "the job of the lost answer, and no second";
  EXPECT_EQ(workloads(ns).size(), 1u) << "no second Workload";
  EXPECT_EQ(conditionOf(workloadOf(ns, "admitted"), "Finished"), "True/Succeeded");
}

// A cancel whose answer is lost, then Vertex unreachable: Kueue evicted the low run for the high one,
// Vertex is cancelling its job, the run's status still says Running and the admission is held.
// Killed there and restarted, the operator treats the cancelled job as the eviction's (not as a
// user's cancel that would end the run), releases the admission so the high run starts, and resumes
// the low run from its checkpoint once Kueue admits it again.
TEST_F(Kueue, KilledBetweenEvictionAndRecordingTheCancelTheRunStillResumesOnce) {
  const std::string ns = "kueue-kill-evict";
  auto lowUid = trainLowPriorityRun(ns);
  ASSERT_FALSE(lowUid.empty());
  // No other test cancels a job (none deletes a running run): the next cancel is this eviction's.

  int lostBefore = answersLost();
  emulatorFaults(R"({"unavailable": 1000000, "after": "cancel"})");
  apply(l4Run(ns, "high", priorityLabels(ns, "vto-test-high")));
  ASSERT_TRUE(waitFor([&] { return answersLost() == lostBefore + 1; }, seconds(60)))
      << "low: " << stack().phaseOf(ns, "low") << " " << readyOf(ns, "low") << "\nhigh: " << readyOf(ns, "high");
  // Inside the window: evicted, the cancel taken by Vertex, the admission still held, the run unaware.
  auto held = workloadOf(ns, "low");
  EXPECT_EQ(conditionOf(held, "Evicted"), "True/Preempted");
  EXPECT_EQ(conditionOf(held, "QuotaReserved"), "True/QuotaReserved") << "released only after the job's end";
  EXPECT_EQ(stack().phaseOf(ns, "low"), "Running");
  EXPECT_EQ(jobOf(ns, "high"), "");
  EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
  emulatorFaults("{}");
  stack().startOperator({"--kueue"});

  ASSERT_TRUE(stack().waitForPhase(ns, "high", "Succeeded", seconds(90)))
      << "high: " << readyOf(ns, "high") << "\nlow: " << stack().phaseOf(ns, "low") << " " << readyOf(ns, "low");
  ASSERT_TRUE(stack().waitForPhase(ns, "low", "Succeeded", seconds(90)))
      << stack().phaseOf(ns, "low") << " " << readyOf(ns, "low") << "\n" << stack().eventsOf(ns, "low");
  auto low = stack().getRun(ns, "low");
  ASSERT_EQ(low["status"]["attempts"].size(), 2u) << low["status"].dump(2);
  std::string resumedFrom = low["status"]["attempts"][1].value("resumedFrom", "");
  EXPECT_EQ(resumedFrom.rfind("gs://test-bucket/" + ns + "/low/checkpoints/ckpt-", 0), 0u) << resumedFrom;
  EXPECT_EQ(stack().jobsOfRun(lowUid).size(), 2u) << "the cancelled one and the resumed one: no duplicate";
  EXPECT_EQ(stack().jobsOfRun(stack().getRun(ns, "high")["metadata"]["uid"].get<std::string>()).size(), 1u);
  // Told once, by the restarted operator (the killed pass's Event died with it), and counted.
  auto events = stack().eventsOf(ns, "low");
  EXPECT_NE(events.find("Preempted: Kueue evicted Workload trainingrun-low-"), std::string::npos) << events;
  auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
  EXPECT_EQ(sampleSum(metrics, "vto_trainingrun_kueue_evictions_total",
                      [&](const Labels& l) { return l.at("namespace") == ns && l.at("reason") == "Preempted"; }),
            1);
  EXPECT_GE(sampleSum(metrics, "vto_trainingrun_kueue_wait_seconds_count",
                      [&](const Labels& l) { return l.at("namespace") == ns; }),
            1)
      << "the low run's wait after its eviction, seen by the restarted operator";
  EXPECT_EQ(sampleSum(metrics, "vto_trainingruns_waiting_for_kueue", [&](const Labels& l) { return l.at("namespace") == ns; }),
            0);
}

}  // namespace
}  // namespace vto::testing
