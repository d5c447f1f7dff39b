#pragma once
// Admission by Kueue (API.md "Admission by Kueue"; docs/kueue.md; the facts in
// docs/kueue-integration-notes.md): a run labelled kueue.x-k8s.io/queue-name gets one of Kueue's own
// Workloads (kueue.x-k8s.io/v1beta2), and no Vertex job until Kueue admits it. Pure: what the
// Workload says, what vto writes into it, and its name. decide's gate is kueueGate (draft.h).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "controller/kube_client.h"
#include "crd/object_meta.h"
#include "crd/training_run.h"

namespace vto::reconcilers {

// The labels a run is governed by (Kueue's own names, as its job integrations read them).
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
// On every Workload vto writes: the run's uid. The informer selects vto's Workloads by it.
inline constexpr const char* kWorkloadRunUidLabel = "vto.dev/run-uid";
// Kueue names the job in preemption messages by it ("JobUID: ...").
inline constexpr const char* kKueueJobUidLabel = "kueue.x-k8s.io/job-uid";
// The field manager of Kueue's admission status writes, which its job integrations also mark a
// Workload Finished and release an admission with: status.admission is that manager's field.
inline constexpr const char* kKueueAdmissionFieldManager = "kueue-admission";

const controller::Resource& workloadResource();
const controller::Resource& workloadPriorityClassResource();  // cluster-scoped

// The LocalQueue a run asks for; nullopt when it carries no queue-name label (not Kueue's).
std::optional<std::string> queueNameOf(const crd::ObjectMeta& run);
// The WorkloadPriorityClass a run names; "" for none.
std::string priorityClassOf(const crd::ObjectMeta& run);
// Whether `name` may name a LocalQueue or a WorkloadPriorityClass (a DNS subdomain, as the CRDs check).
bool isKueueObjectName(const std::string& name);

// "trainingrun-<name>-<8 hex of the uid>", a DNS label of at most 63 characters: the same on every
// pass and after a crash, so a run never gets two Workloads, and a re-created run of the same name
// gets another.
std::string workloadNameOf(const crd::ObjectMeta& run);
// "vto.dev/nvidia-l4" for NVIDIA_L4: the resource a pod set requests per replica for an accelerator.
std::string acceleratorResourceOf(const std::string& acceleratorType);

// One pod set as vto compares them: its name, replicas, and requests per replica (whole numbers).
struct PodSetShape {
  std::string name;
  int64_t count = 0;
  std::map<std::string, int64_t> requests;
  bool operator==(const PodSetShape&) const = default;
};

// What a pass needs of a Workload, read without trusting its types (anyone with RBAC on Workloads,
// and Kueue, write it).
struct WorkloadCondition {
  std::string status, reason, message;
};
struct WorkloadView {
  std::string name, uid, resourceVersion;
  std::string controllerUid;  // the uid of its controller owner reference
  std::string queueName;
  std::string priorityClass;  // spec.priorityClassRef.name when it names a WorkloadPriorityClass
  std::vector<PodSetShape> podSets;
  std::map<std::string, WorkloadCondition> conditions;  // by type: QuotaReserved, Admitted, Evicted, Finished, ...
  std::string clusterQueue;  // status.admission.clusterQueue; "" without an admission
  size_t admissionChecks = 0;  // status.admissionChecks: the ClusterQueue's checks, once quota is reserved

  bool is(const char* type, const char* status = "True") const;
  const WorkloadCondition* condition(const char* type) const;
  // Admitted and not evicted: a job may run.
  bool admitted() const { return is("Admitted") && !is("Evicted") && !is("Finished"); }
};
WorkloadView readWorkload(const nlohmann::json& workload);
// The uid of `object`'s controller owner reference ("" for none).
std::string controllerUidOf(const nlohmann::json& object);

// The pod sets a run asks for at its placement `at` (crd::specAt already applied): one per worker pool
// of the job it renders to, count = the pool's replicas (times parallelTrialCount for tuning jobs: the
// trials that run at once), requests per replica vto.dev/<accelerator>: <count>, cpu and memory 0 (so a
// namespace's LimitRange defaults count for nothing) and vto.dev/runs: 1 on the first.
std::vector<PodSetShape> podSetsOf(const crd::TrainingRun& at);

// The Workload vto creates for `run` at placement `at`, in the run's namespace, controlled by the run.
// `priority`: the value of the WorkloadPriorityClass the run names (with its name: priorityClassRef).
nlohmann::json renderWorkload(const crd::TrainingRun& run, const crd::TrainingRun& at, const std::string& queueName,
                              const std::string& priorityClass, std::optional<int32_t> priority);

// The server-side apply (on workloads/status, field manager kueue-admission, forced) that marks
// `workload` Finished as Kueue's job integrations do (workload.Finish, PatchAdmissionStatus): its
// identity with resourceVersion and uid (a stale or namesake write fails), the admission kept, the
// conditions that manager owns as they are plus Finished=True `reason` (Succeeded or Failed).
nlohmann::json finishedStatusApply(const nlohmann::json& workload, const std::string& reason, const std::string& message,
                                   Clock::time_point now);
// The server-side apply that releases an evicted Workload's admission once its job has stopped, as
// Kueue's job integrations do (ReconcileGenericJob, "handle eviction"): status.admission removed,
// QuotaReserved=False/Pending and Admitted=False/NoReservation, Requeued=True after a preemption or
// a node failure (else False), with the eviction's reason and message. Kueue then queues it again.
nlohmann::json releasedStatusApply(const nlohmann::json& workload, Clock::time_point now);

}  // namespace vto::reconcilers
