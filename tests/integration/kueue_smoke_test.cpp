// The real Kueue v0.17.0 manager against the local API server, with no webhooks (see
// tests/support/kueue_process.h), and hand-written Workloads as vto will write them: the facts vto's
// admission by Kueue (../shared/design/API.md, "Admission by Kueue") builds on, each shown on the
// real thing. docs/kueue-integration-notes.md has the sources behind them.
//   - A ClusterQueue of 2 vto.dev/nvidia-l4 admits two 1-L4 Workloads and holds the third with
//     Kueue's message; marking one Finished the way Kueue's job integrations do returns its quota.
//   - A preempted Workload keeps its quota (status.admission) until its owner clears the admission
//     the way Kueue's job integrations do (server-side apply on the status, field manager
//     kueue-admission); then the preemptor is admitted and the preempted one is pending again.
//   - spec.active=false evicts (reason Deactivated) and returns the quota at once.
//   - A namespace's LimitRange defaults count as requests unless the containers ask for cpu and memory 0.
//   - A missing LocalQueue is said in QuotaReserved's message.
//   - What the API server refuses by itself, with Kueue's validating webhook absent.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "tests/support/kueue_process.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using controller::ApiError;
using controller::PatchType;
using controller::Resource;
using controller::RestKubeClient;
using nlohmann::json;

const Resource kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", true};
const Resource kClusterQueues{"kueue.x-k8s.io", "v1beta2", "clusterqueues", false};
constexpr auto kDeadline = std::chrono::seconds(60);

// The field manager of Kueue's admission status writes (pkg/constants: AdmissionName), which its job
// integrations also use to clear an admission and to mark a Workload Finished
// (workload.PatchAdmissionStatus): the manager that owns status.admission, so leaving it out removes it.
constexpr const char* kAdmissionFieldManager = "kueue-admission";

std::string nowRfc3339() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// The Workload's condition of `type`, or an empty object.
json conditionOf(const json& workload, const std::string& type) {
  for (const auto& condition : workload.value(json::json_pointer("/status/conditions"), json::array()))
    if (condition.value("type", "") == type) return condition;
  return json::object();
}

bool conditionIs(const json& workload, const std::string& type, const std::string& status) {
  return conditionOf(workload, type).value("status", "") == status;
}

// apimeta.SetStatusCondition: replaces the condition of the same type, keeping its
// lastTransitionTime when the status does not change.
void setCondition(json& conditions, json condition) {
  for (auto& existing : conditions) {
    if (existing.value("type", "") != condition["type"]) continue;
    if (existing.value("status", "") == condition["status"]) condition["lastTransitionTime"] = existing["lastTransitionTime"];
    existing = condition;
    return;
  }
  conditions.push_back(condition);
}

// The body of Kueue's admission status patch (workload.PrepareWorkloadPatch, strict): the Workload's
// identity with its resourceVersion (a stale write is a 409) and uid, then the admission and the
// conditions and fields the admission manager owns, copied from `status` as it is to be.
json admissionStatusApplyBody(const json& workload, const json& status) {
  json body = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
               {"kind", "Workload"},
               {"metadata",
                {{"name", workload["metadata"]["name"]},
                 {"namespace", workload["metadata"]["namespace"]},
                 {"uid", workload["metadata"]["uid"]},
                 {"resourceVersion", workload["metadata"]["resourceVersion"]}}},
               {"status", json::object()}};
  auto& out = body["status"];
  if (status.contains("admission")) {
    out["admission"] = status["admission"];
    out["resourceRequests"] = json::array();  // admission's resourceUsage supersedes them
  } else if (status.contains("resourceRequests")) {
    out["resourceRequests"] = status["resourceRequests"];
  }
  out["conditions"] = json::array();
  for (const char* type : {"QuotaReserved", "BlockedOnPreemptionGates", "Evicted", "Admitted", "Preempted", "Requeued",
                           "DeactivationTarget", "Finished"}) {
    for (const auto& condition : status.value("conditions", json::array()))
      if (condition.value("type", "") == type) out["conditions"].push_back(condition);
  }
  for (const char* field : {"requeueState", "schedulingStats", "accumulatedPastExecutionTimeSeconds", "clusterName",
                            "nominatedClusterNames", "unhealthyNodes", "preemptionGates"}) {
    if (status.contains(field)) out[field] = status[field];
  }
  return body;
}

class KueueSmoke : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = std::chrono::steady_clock::now();
    kueue_ = new KueueProcess(sharedCluster());
    std::cout << "Kueue " << kKueueVersion << " ready in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count()
              << " ms (CRDs installed, manager started), log " << kueue_->logPath() << "\n";
  }
  static void TearDownTestSuite() {
    delete kueue_;
    kueue_ = nullptr;
  }
  void TearDown() override {
    if (HasFailure()) std::cout << "Kueue's log ends with:\n" << kueue_->logTail() << "\n";
  }

  std::string kubectlOk(const std::string& args) {
    auto result = sharedCluster().kubectl(args);
    EXPECT_EQ(result.exitCode, 0) << "kubectl " << args << ": " << result.output;
    return result.output;
  }
  void apply(const std::string& manifest) {
    auto result = runShell("printf '%s' '" + manifest + "' | kubectl --kubeconfig='" + sharedCluster().kubeconfig() +
                           "' apply --server-side -f -");
    ASSERT_EQ(result.exitCode, 0) << manifest << "\n" << result.output;
  }

  // A namespace, a ResourceFlavor, a ClusterQueue of `l4` vto.dev/nvidia-l4 and 10 vto.dev/runs (and
  // `preemption` YAML under its spec), and a LocalQueue named after the namespace, as docs/kueue.md
  // will show a platform team.
  void makeQueues(const std::string& ns, int l4, const std::string& preemption = "") {
    kubectlOk("create namespace " + ns);
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: vertex\n");
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: " + ns +
          "\nspec:\n  namespaceSelector: {}\n" + preemption +
          "  resourceGroups:\n"
          "  - coveredResources: [vto.dev/nvidia-l4, vto.dev/runs]\n"
          "    flavors:\n"
          "    - name: vertex\n"
          "      resources:\n"
          "      - name: vto.dev/nvidia-l4\n"
          "        nominalQuota: " +
          std::to_string(l4) +
          "\n"
          "      - name: vto.dev/runs\n"
          "        nominalQuota: 10\n");
    apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: " + ns + "\n  namespace: " + ns +
          "\nspec:\n  clusterQueue: " + ns + "\n");
  }

  // A Workload as vto writes one for a run of one replica with one L4: one pod set per worker pool
  // (count = replicas), requests per replica vto.dev/<accelerator>: <count> and vto.dev/runs: 1 on
  // the first; `priorityClass` names a WorkloadPriorityClass whose value is `value`.
  json workload(const std::string& ns, const std::string& name, const std::string& queue,
                const std::string& priorityClass = "", int value = 0, bool zeroCpuAndMemory = false) {
    json requests = {{"vto.dev/nvidia-l4", "1"}, {"vto.dev/runs", "1"}};
    if (zeroCpuAndMemory) requests.update({{"cpu", "0"}, {"memory", "0"}});
    json container = {{"name", "replica"}, {"resources", {{"requests", requests}}}};
    json podSet = {{"name", "workerpool0"},
                   {"count", 1},
                   {"template", {{"spec", {{"restartPolicy", "Never"}, {"containers", json::array({container})}}}}}};
    json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
               {"kind", "Workload"},
               {"metadata", {{"name", name}, {"namespace", ns}}},
               {"spec", {{"queueName", queue}, {"podSets", json::array({podSet})}}}};
    if (!priorityClass.empty()) {
      wl["spec"]["priorityClassRef"] = {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", priorityClass}};
      wl["spec"]["priority"] = value;
    }
    return client.create(kWorkloads, ns, wl);
  }

  json get(const std::string& ns, const std::string& name) { return client.get(kWorkloads, ns, name); }

  // Waits until the Workload satisfies `condition`; returns it as last read.
  json waitForWorkload(const std::string& ns, const std::string& name, const std::function<bool(const json&)>& condition,
                       const std::string& what) {
    json last;
    bool held = waitFor(
        [&] {
          last = get(ns, name);
          return condition(last);
        },
        kDeadline);
    EXPECT_TRUE(held) << ns << "/" << name << " never " << what << "; last:\n" << last.dump(2);
    return last;
  }
  json waitForAdmitted(const std::string& ns, const std::string& name) {
    return waitForWorkload(ns, name, [](const json& wl) { return conditionIs(wl, "Admitted", "True"); }, "Admitted");
  }
  // Pending: QuotaReserved=False with a message that says `containing`.
  json waitForPending(const std::string& ns, const std::string& name, const std::string& containing) {
    return waitForWorkload(
        ns, name,
        [&](const json& wl) {
          auto reserved = conditionOf(wl, "QuotaReserved");
          return reserved.value("status", "") == "False" &&
                 reserved.value("message", "").find(containing) != std::string::npos;
        },
        "pending with \"" + containing + "\"");
  }

  // What Kueue's job integrations do once the job of an evicted Workload stopped
  // (jobframework/reconciler.go, ReconcileGenericJob step 6): Requeued (True only for Preempted and
  // NodeFailures), QuotaReserved=False reason Pending with the eviction's message, no admission,
  // Admitted=False reason NoReservation (workload.SyncAdmittedCondition), sent as a server-side apply
  // of the status by kueue-admission, forced.
  json releaseAdmission(const std::string& ns, const std::string& name) {
    auto wl = get(ns, name);
    auto eviction = conditionOf(wl, "Evicted");
    EXPECT_EQ(eviction.value("status", ""), "True") << wl.dump(2);
    auto reason = eviction.value("reason", ""), message = eviction.value("message", "");
    auto generation = wl["metadata"]["generation"];
    auto now = nowRfc3339();
    json status = wl["status"];
    status.erase("admission");
    setCondition(status["conditions"], {{"type", "Requeued"},
                                        {"status", reason == "Preempted" || reason == "NodeFailures" ? "True" : "False"},
                                        {"reason", reason},
                                        {"message", message},
                                        {"observedGeneration", generation},
                                        {"lastTransitionTime", now}});
    setCondition(status["conditions"], {{"type", "QuotaReserved"},
                                        {"status", "False"},
                                        {"reason", "Pending"},
                                        {"message", message},
                                        {"observedGeneration", generation},
                                        {"lastTransitionTime", now}});
    setCondition(status["conditions"], {{"type", "Admitted"},
                                        {"status", "False"},
                                        {"reason", "NoReservation"},
                                        {"message", "The workload has no reservation"},
                                        {"observedGeneration", generation},
                                        {"lastTransitionTime", now}});
    return client.patch(kWorkloads, ns, name, PatchType::Apply, admissionStatusApplyBody(wl, status),
                        kAdmissionFieldManager, /*force=*/true, "status");
  }

  // workload.Finish: Finished=True (reason Succeeded or Failed, the job's message), the admission
  // kept, the same server-side apply of the status.
  json finish(const std::string& ns, const std::string& name, const std::string& reason, const std::string& message) {
    auto wl = get(ns, name);
    json status = wl["status"];
    setCondition(status["conditions"], {{"type", "Finished"},
                                        {"status", "True"},
                                        {"reason", reason},
                                        {"message", message},
                                        {"observedGeneration", wl["metadata"]["generation"]},
                                        {"lastTransitionTime", nowRfc3339()}});
    return client.patch(kWorkloads, ns, name, PatchType::Apply, admissionStatusApplyBody(wl, status),
                        kAdmissionFieldManager, /*force=*/true, "status");
  }

  // The ClusterQueue's vto.dev/nvidia-l4 in use (status.flavorsReservation), once it is `expected`.
  bool waitForL4Reserved(const std::string& clusterQueue, const std::string& expected) {
    std::string last;
    bool held = waitFor(
        [&] {
          auto cq = client.get(kClusterQueues, "", clusterQueue);
          for (const auto& flavor : cq.value(json::json_pointer("/status/flavorsReservation"), json::array()))
            for (const auto& resource : flavor.value("resources", json::array()))
              if (resource.value("name", "") == "vto.dev/nvidia-l4") last = resource.value("total", "");
          return last == expected;
        },
        kDeadline);
    EXPECT_TRUE(held) << "ClusterQueue " << clusterQueue << " reserves " << last << " vto.dev/nvidia-l4, not "
                      << expected;
    return held;
  }

  static KueueProcess* kueue_;
  RestKubeClient client{controller::loadKubeconfig(sharedCluster().kubeconfig())};
};

KueueProcess* KueueSmoke::kueue_ = nullptr;

TEST_F(KueueSmoke, TwoL4sAdmitTwoRunsHoldTheThirdAndAFinishedRunReturnsItsQuota) {
  const std::string ns = "kueue-quota";
  makeQueues(ns, 2);
  workload(ns, "run-1", ns);
  workload(ns, "run-2", ns);
  for (auto name : {"run-1", "run-2"}) {
    auto wl = waitForAdmitted(ns, name);
    EXPECT_EQ(wl.value(json::json_pointer("/status/admission/clusterQueue"), ""), ns);
    EXPECT_EQ(wl.value(json::json_pointer("/status/admission/podSetAssignments/0/flavors/vto.dev~1nvidia-l4"), ""),
              "vertex");
    EXPECT_TRUE(conditionIs(wl, "QuotaReserved", "True")) << wl.dump(2);
  }
  workload(ns, "run-3", ns);
  auto pending = waitForPending(ns, "run-3", "insufficient unused quota for vto.dev/nvidia-l4");
  auto reserved = conditionOf(pending, "QuotaReserved");
  EXPECT_EQ(reserved.value("reason", ""), "Pending");
  // Kueue's words, which vto shows as the run's WaitingForKueue message.
  EXPECT_EQ(reserved.value("message", ""),
            "couldn't assign flavors to pod set workerpool0: insufficient unused quota for vto.dev/nvidia-l4 in "
            "flavor vertex, 1 more needed");
  EXPECT_FALSE(pending["status"].contains("admission"));
  EXPECT_FALSE(conditionIs(pending, "Admitted", "True"));
  waitForL4Reserved(ns, "2");

  // run-1's job ended: Finished as Kueue's job integrations write it. Its quota returns and run-3 is admitted.
  finish(ns, "run-1", "Succeeded", "Vertex job succeeded");
  auto third = waitForAdmitted(ns, "run-3");
  EXPECT_TRUE(conditionIs(third, "QuotaReserved", "True")) << third.dump(2);
  auto finished = get(ns, "run-1");
  auto condition = conditionOf(finished, "Finished");
  EXPECT_EQ(condition.value("status", ""), "True") << finished.dump(2);
  EXPECT_EQ(condition.value("reason", ""), "Succeeded");
  EXPECT_TRUE(finished["status"].contains("admission")) << "Finish keeps the admission, as Kueue's integrations do";
  waitForL4Reserved(ns, "2");  // run-2 and run-3
  EXPECT_EQ(kubectlOk("get workloads -n " + ns + " -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Admitted\")].status}/{.status.conditions[?(@.type==\"Finished\")].status} {end}'"),
            "run-1=True/True run-2=True/ run-3=True/ ");
}

TEST_F(KueueSmoke, APreemptedRunHoldsItsQuotaUntilItsAdmissionIsReleasedAsJobIntegrationsDo) {
  const std::string ns = "kueue-preemption";
  makeQueues(ns, 2, "  preemption:\n    withinClusterQueue: LowerPriority\n");
  apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: vto-smoke-low\nvalue: 100\n");
  apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: vto-smoke-high\nvalue: 1000\n");
  workload(ns, "low-1", ns, "vto-smoke-low", 100);
  workload(ns, "low-2", ns, "vto-smoke-low", 100);
  waitForAdmitted(ns, "low-1");
  waitForAdmitted(ns, "low-2");
  workload(ns, "high", ns, "vto-smoke-high", 1000);

  // Kueue evicts one low run (the newest admitted), but its quota stays reserved while status.admission
  // is set: Kueue waits for the owner to stop its job. The high run waits for that preemption.
  std::string victim;
  waitFor(
      [&] {
        for (auto name : {"low-1", "low-2"})
          if (conditionIs(get(ns, name), "Evicted", "True")) victim = name;
        return !victim.empty();
      },
      kDeadline);
  ASSERT_FALSE(victim.empty()) << "no low run was evicted";
  auto evicted = get(ns, victim);
  auto eviction = conditionOf(evicted, "Evicted");
  EXPECT_EQ(eviction.value("reason", ""), "Preempted");
  EXPECT_NE(eviction.value("message", "").find("Preempted to accommodate a workload"), std::string::npos)
      << evicted.dump(2);
  EXPECT_EQ(conditionOf(evicted, "Preempted").value("reason", ""), "InClusterQueue") << evicted.dump(2);
  EXPECT_TRUE(evicted["status"].contains("admission")) << "Kueue itself never clears an evicted admission";
  EXPECT_TRUE(conditionIs(evicted, "Admitted", "True"));
  waitForPending(ns, "high", "Pending the preemption of 1 workload(s)");
  EXPECT_FALSE(conditionIs(get(ns, "high"), "Admitted", "True"));

  // The victim's Vertex job is cancelled and ended: its owner releases the admission; the high run is admitted.
  releaseAdmission(ns, victim);
  waitForAdmitted(ns, "high");
  auto requeued = waitForPending(ns, victim, "insufficient unused quota for vto.dev/nvidia-l4");
  EXPECT_FALSE(requeued["status"].contains("admission"));
  EXPECT_TRUE(conditionIs(requeued, "Requeued", "True")) << requeued.dump(2);
  EXPECT_TRUE(conditionIs(requeued, "Admitted", "False")) << requeued.dump(2);
  EXPECT_TRUE(conditionIs(requeued, "Evicted", "True")) << "Evicted stays until the next admission resets it";
  EXPECT_EQ(requeued.value(json::json_pointer("/status/schedulingStats/evictions/0/reason"), ""), "Preempted");
  waitForL4Reserved(ns, "2");  // the other low run and the high run

  // The high run ends: the preempted run is admitted again (a new attempt for vto), Evicted reset.
  finish(ns, "high", "Succeeded", "Vertex job succeeded");
  auto readmitted = waitForAdmitted(ns, victim);
  EXPECT_TRUE(conditionIs(readmitted, "Evicted", "False")) << readmitted.dump(2);
  EXPECT_EQ(conditionOf(readmitted, "Evicted").value("reason", ""), "QuotaReserved");
}

TEST_F(KueueSmoke, ADeactivatedWorkloadIsEvictedAndItsQuotaReturnsAtOnce) {
  const std::string ns = "kueue-deactivation";
  makeQueues(ns, 1);
  workload(ns, "first", ns);
  waitForAdmitted(ns, "first");
  workload(ns, "second", ns);
  waitForPending(ns, "second", "insufficient unused quota for vto.dev/nvidia-l4");

  client.patch(kWorkloads, ns, "first", PatchType::Merge, {{"spec", {{"active", false}}}});
  auto deactivated = waitForWorkload(
      ns, "first", [](const json& wl) { return conditionIs(wl, "Evicted", "True"); }, "Evicted");
  EXPECT_EQ(conditionOf(deactivated, "Evicted").value("reason", ""), "Deactivated");
  EXPECT_EQ(conditionOf(deactivated, "Evicted").value("message", ""), "The workload is deactivated");
  // An inactive (or Finished) Workload leaves Kueue's cache at once: its quota is free although
  // status.admission is still there for its owner to clear.
  waitForAdmitted(ns, "second");
  EXPECT_TRUE(get(ns, "first")["status"].contains("admission"));
  releaseAdmission(ns, "first");
  auto released = waitForWorkload(
      ns, "first", [](const json& wl) { return !wl["status"].contains("admission"); }, "released");
  EXPECT_TRUE(conditionIs(released, "Requeued", "False")) << "Requeued is True only after a preemption";
  EXPECT_EQ(conditionOf(released, "Requeued").value("reason", ""), "Deactivated");
}

TEST_F(KueueSmoke, ANamespacesLimitRangeDefaultsCountUnlessTheRequestsSayZero) {
  // Kueue adds a namespace's LimitRange default requests to every pod set it admits
  // (workload.AdjustResources): a ClusterQueue that covers only vto.dev/* then cannot admit the
  // Workload. Explicit cpu and memory requests of 0 keep the defaults out and count for nothing.
  const std::string ns = "kueue-limitrange";
  makeQueues(ns, 2);
  apply("apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults\n  namespace: " + ns +
        "\nspec:\n  limits:\n  - type: Container\n    defaultRequest: {cpu: 100m, memory: 128Mi}\n"
        "    default: {cpu: 500m, memory: 512Mi}\n");
  workload(ns, "defaulted", ns);
  waitForPending(ns, "defaulted", "unavailable in ClusterQueue");
  auto requests = get(ns, "defaulted").value(json::json_pointer("/status/resourceRequests/0/resources"), json::object());
  EXPECT_EQ(requests.value("cpu", ""), "100m") << requests.dump();

  workload(ns, "zero", ns, "", 0, /*zeroCpuAndMemory=*/true);
  auto admitted = waitForAdmitted(ns, "zero");
  auto usage = admitted.value(json::json_pointer("/status/admission/podSetAssignments/0/resourceUsage"), json::object());
  EXPECT_EQ(usage, json({{"vto.dev/nvidia-l4", "1"}, {"vto.dev/runs", "1"}}));
}

TEST_F(KueueSmoke, AMissingLocalQueueIsSaidInQuotaReserved) {
  const std::string ns = "kueue-missing-queue";
  kubectlOk("create namespace " + ns);
  workload(ns, "lost", "no-such-queue");
  auto wl = waitForPending(ns, "lost", "LocalQueue no-such-queue doesn't exist");
  EXPECT_EQ(conditionOf(wl, "QuotaReserved").value("reason", ""), "Inadmissible");
}

TEST_F(KueueSmoke, WhatTheApiServerRefusesWithoutKueuesWebhooks) {
  const std::string ns = "kueue-validation";
  kubectlOk("create namespace " + ns);
  auto dryRun = [&](const std::string& podSets, const std::string& extraSpec = "") {
    return runShell("printf '%s' 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: w\n  namespace: " +
                    ns + "\nspec:\n  queueName: q\n" + extraSpec + "  podSets:\n" + podSets +
                    "' | kubectl --kubeconfig='" + sharedCluster().kubeconfig() + "' create --dry-run=server -f -");
  };
  auto container = std::string("    template: {spec: {containers: [{name: c}]}}\n");
  // The CRD's schema: pod set names are DNS labels of at most 63, unique; a template needs a container.
  auto upper = dryRun("  - name: WorkerPool0\n" + container);
  EXPECT_NE(upper.output.find("should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"), std::string::npos) << upper.output;
  auto noContainer = dryRun("  - name: main\n    template: {spec: {}}\n");
  EXPECT_NE(noContainer.output.find("spec.podSets[0].template.spec.containers: Required value"), std::string::npos)
      << noContainer.output;
  auto twice = dryRun("  - name: a\n" + container + "  - name: a\n" + container);
  EXPECT_NE(twice.output.find("Duplicate value"), std::string::npos) << twice.output;
  std::string nine;
  for (int i = 0; i < 9; ++i) nine += "  - name: p" + std::to_string(i) + "\n" + container;
  auto tooMany = dryRun(nine);
  EXPECT_NE(tooMany.output.find("must have at most 8 items"), std::string::npos) << tooMany.output;
  auto noPriority = dryRun("  - name: main\n" + container,
                           "  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: x}\n");
  EXPECT_NE(noPriority.output.find("priority should not be nil when priorityClassRef is set"), std::string::npos)
      << noPriority.output;
  // Only Kueue's webhook refuses the reserved resource `pods`: without it the API server takes it.
  auto pods = dryRun("  - name: main\n    template: {spec: {containers: [{name: c, resources: {requests: {pods: 1}}}]}}\n");
  EXPECT_EQ(pods.exitCode, 0) << pods.output;
}

}  // namespace
}  // namespace vto::testing
