#include "reconcilers/trainingrun/kueue.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <regex>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "crd/accelerators.h"
#include "crd/render.h"
#include "governance/cost.h"

namespace vto::reconcilers {

using nlohmann::json;

namespace {

constexpr size_t kMaxNameLength = 63;
// Kueue keeps a condition's message up to 32 KiB; a run's own says what it needs in far less.
constexpr size_t kMaxMessageBytes = 1024;

uint32_t fnv1a(const std::string& text) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : text) hash = (hash ^ c) * 16777619u;
  return hash;
}

const json& member(const json& object, const char* name) {
  static const json none;
  if (!object.is_object()) return none;
  auto found = object.find(name);
  return found != object.end() ? *found : none;
}

// A request as a whole number ("1", 1); nullopt for anything else ("500m", "1Gi"): vto writes only
// whole numbers, so anything else is not as vto wrote it.
std::optional<int64_t> wholeQuantity(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_string()) return std::nullopt;
  const auto& text = value.get_ref<const std::string&>();
  int64_t out = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

json podSetJson(const PodSetShape& shape) {
  json requests = json::object();
  for (const auto& [resource, amount] : shape.requests) requests[resource] = std::to_string(amount);
  json container = {{"name", "replica"}, {"resources", {{"requests", requests}}}};
  return {{"name", shape.name},
          {"count", shape.count},
          {"template", {{"spec", {{"restartPolicy", "Never"}, {"containers", json::array({container})}}}}}};
}

}  // namespace

const controller::Resource& workloadResource() {
  static const controller::Resource resource{"kueue.x-k8s.io", "v1beta2", "workloads", true};
  return resource;
}

const controller::Resource& workloadPriorityClassResource() {
  static const controller::Resource resource{"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", false};
  return resource;
}

std::optional<std::string> queueNameOf(const crd::ObjectMeta& run) {
  auto found = run.labels.find(kQueueNameLabel);
  if (found == run.labels.end()) return std::nullopt;
  return found->second;
}

std::string priorityClassOf(const crd::ObjectMeta& run) {
  auto found = run.labels.find(kPriorityClassLabel);
  return found == run.labels.end() ? "" : found->second;
}

bool isKueueObjectName(const std::string& name) {
  static const std::regex subdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !name.empty() && name.size() <= 253 && std::regex_match(name, subdomain);
}

std::string workloadNameOf(const crd::ObjectMeta& run) {
  char suffix[10];
  std::snprintf(suffix, sizeof suffix, "-%08x", fnv1a(run.uid));
  const std::string prefix = "trainingrun-";
  std::string name;
  for (char c : run.name) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    name += keep ? c : (c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : '-');
  }
  name.resize(std::min(name.size(), kMaxNameLength - prefix.size() - (sizeof suffix - 1)));
  while (!name.empty() && name.back() == '-') name.pop_back();  // "-" then the suffix's "-": still a DNS label
  return prefix + name + suffix;
}

std::string acceleratorResourceOf(const std::string& acceleratorType) {
  std::string name;
  for (char c : acceleratorType) {
    if (c >= 'A' && c <= 'Z') name += static_cast<char>(c - 'A' + 'a');
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.') name += c;
    else name += '-';
  }
  // A resource name's part after the prefix: at most 63 characters, alphanumeric at both ends.
  name.resize(std::min(name.size(), kMaxNameLength));
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.back()))) name.pop_back();
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.front()))) name.erase(name.begin());
  return "vto.dev/" + (name.empty() ? std::string("accelerator") : name);
}

bool WorkloadView::is(const char* type, const char* status) const {
  const auto* c = condition(type);
  return c != nullptr && c->status == status;
}

const WorkloadCondition* WorkloadView::condition(const char* type) const {
  auto found = conditions.find(type);
  return found == conditions.end() ? nullptr : &found->second;
}

std::string controllerUidOf(const json& object) {
  for (const auto& owner : member(member(object, "metadata"), "ownerReferences")) {
    if (member(owner, "controller") == json(true)) return stringField(owner, "uid");
  }
  return "";
}

WorkloadView readWorkload(const json& workload) {
  WorkloadView view;
  view.name = metadataField(workload, "name");
  view.uid = metadataField(workload, "uid");
  view.resourceVersion = metadataField(workload, "resourceVersion");
  view.controllerUid = controllerUidOf(workload);
  const auto& spec = member(workload, "spec");
  view.queueName = stringField(spec, "queueName");
  const auto& ref = member(spec, "priorityClassRef");
  if (stringField(ref, "kind") == "WorkloadPriorityClass") view.priorityClass = stringField(ref, "name");
  const auto& podSets = member(spec, "podSets");
  if (podSets.is_array()) {
    for (const auto& podSet : podSets) {
      PodSetShape shape;
      shape.name = stringField(podSet, "name");
      shape.count = member(podSet, "count").is_number_integer() ? member(podSet, "count").get<int64_t>() : -1;
      const auto& containers = member(member(member(podSet, "template"), "spec"), "containers");
      if (containers.is_array()) {
        for (const auto& container : containers) {
          const auto& requests = member(member(container, "resources"), "requests");
          if (!requests.is_object()) continue;
          for (const auto& [resource, amount] : requests.items()) {
            shape.requests[resource] += wholeQuantity(amount).value_or(-1);
          }
        }
      }
      view.podSets.push_back(std::move(shape));
    }
  }
  const auto& status = member(workload, "status");
  const auto& conditions = member(status, "conditions");
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      auto message = stringField(c, "message");
      if (message.size() > kMaxMessageBytes) message = message.substr(0, kMaxMessageBytes) + "...";
      view.conditions[stringField(c, "type")] = {stringField(c, "status"), stringField(c, "reason"), message};
    }
  }
  view.clusterQueue = stringField(member(status, "admission"), "clusterQueue");
  const auto& checks = member(status, "admissionChecks");
  view.admissionChecks = checks.is_array() ? checks.size() : 0;
  return view;
}

std::vector<PodSetShape> podSetsOf(const crd::TrainingRun& at) {
  // The pools of the job the run renders to, in Vertex's order (workerpool0 is the chief): what
  // Vertex will run, whichever form the spec used.
  auto pools = crd::renderCustomJob(at, 1, "")["jobSpec"]["workerPoolSpecs"];
  int64_t trials = crd::parallelTrialsOf(at.spec);
  std::vector<PodSetShape> out;
  for (size_t i = 0; pools.is_array() && i < pools.size(); ++i) {
    auto uses = governance::poolsOfWorkerPools(json::array({pools[i]}));
    if (uses.empty()) continue;  // an empty middle pool runs nothing
    const auto& use = uses.front();
    PodSetShape shape;
    shape.name = "workerpool" + std::to_string(i);
    shape.count = use.replicas * trials;
    if (!use.acceleratorType.empty() && use.acceleratorCount > 0) {
      shape.requests[acceleratorResourceOf(use.acceleratorType)] = use.acceleratorCount;
    }
    // Explicit zeros: a LimitRange's defaults would otherwise be added before admission, and a
    // ClusterQueue that covers only vto.dev/* could never admit the run.
    shape.requests["cpu"] = 0;
    shape.requests["memory"] = 0;
    if (out.empty()) shape.requests["vto.dev/runs"] = 1;
    out.push_back(std::move(shape));
  }
  return out;
}

json renderWorkload(const crd::TrainingRun& run, const crd::TrainingRun& at, const std::string& queueName,
                    const std::string& priorityClass, std::optional<int32_t> priority) {
  const auto& meta = run.metadata;
  json podSets = json::array();
  for (const auto& shape : podSetsOf(at)) podSets.push_back(podSetJson(shape));
  json workload = {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata",
       {{"name", workloadNameOf(meta)},
        {"namespace", meta.namespace_},
        {"labels", {{kWorkloadRunUidLabel, meta.uid}, {kKueueJobUidLabel, meta.uid}}},
        // No blockOwnerDeletion: vto deletes the Workload itself before the run goes (its finalizer),
        // and that flag would need update on trainingruns/finalizers where owner references are enforced.
        {"ownerReferences",
         json::array({{{"apiVersion", "vto.dev/v1beta1"},
                       {"kind", "TrainingRun"},
                       {"name", meta.name},
                       {"uid", meta.uid},
                       {"controller", true}}})}}},
      {"spec", {{"queueName", queueName}, {"podSets", podSets}}}};
  if (!priorityClass.empty() && priority) {
    workload["spec"]["priorityClassRef"] = {
        {"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", priorityClass}};
    workload["spec"]["priority"] = *priority;
  }
  return workload;
}

namespace {

// metav1.Condition as Kueue writes it; apimeta.SetStatusCondition keeps lastTransitionTime while the
// status stays.
void setCondition(json& conditions, const json& meta, const std::string& type, const std::string& status,
                  const std::string& reason, const std::string& message, Clock::time_point now) {
  json condition = {{"type", type},
                    {"status", status},
                    {"reason", reason},
                    {"message", message.substr(0, kMaxMessageBytes)},
                    {"lastTransitionTime", rfc3339(now)}};
  if (member(meta, "generation").is_number_integer()) condition["observedGeneration"] = meta["generation"];
  for (auto& existing : conditions) {
    if (stringField(existing, "type") != type) continue;
    if (stringField(existing, "status") == status && existing.contains("lastTransitionTime"))
      condition["lastTransitionTime"] = existing["lastTransitionTime"];
    existing = std::move(condition);
    return;
  }
  conditions.push_back(std::move(condition));
}

// Kueue's admission status patch (workload.PrepareWorkloadPatch, strict): the Workload's identity with
// its resourceVersion and uid, then every field the kueue-admission manager owns as it is to be. A
// field of that manager left out is removed: that is how an admission is released.
json admissionStatusApply(const json& workload, const json& conditions, bool keepAdmission) {
  const auto& meta = member(workload, "metadata");
  const auto& status = member(workload, "status");
  json body = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
               {"kind", "Workload"},
               {"metadata",
                {{"name", member(meta, "name")},
                 {"namespace", member(meta, "namespace")},
                 {"uid", member(meta, "uid")},
                 {"resourceVersion", member(meta, "resourceVersion")}}},
               {"status", json::object()}};
  auto& out = body["status"];
  if (keepAdmission && status.contains("admission")) {
    out["admission"] = status["admission"];
    out["resourceRequests"] = json::array();  // the admission's resourceUsage supersedes them
  } else if (status.contains("resourceRequests")) {
    out["resourceRequests"] = status["resourceRequests"];
  }
  out["conditions"] = json::array();
  for (const char* type : {"QuotaReserved", "BlockedOnPreemptionGates", "Evicted", "Admitted", "Preempted", "Requeued",
                           "DeactivationTarget", "Finished"}) {
    for (const auto& c : conditions)
      if (stringField(c, "type") == type) out["conditions"].push_back(c);
  }
  for (const char* field : {"requeueState", "schedulingStats", "accumulatedPastExecutionTimeSeconds", "clusterName",
                            "nominatedClusterNames", "unhealthyNodes", "preemptionGates"}) {
    if (status.contains(field)) out[field] = status[field];
  }
  return body;
}

json conditionsOf(const json& workload) {
  const auto& conditions = member(member(workload, "status"), "conditions");
  json out = json::array();
  if (!conditions.is_array()) return out;
  for (const auto& c : conditions)
    if (c.is_object()) out.push_back(c);
  return out;
}

}  // namespace

json finishedStatusApply(const json& workload, const std::string& reason, const std::string& message,
                         Clock::time_point now) {
  auto conditions = conditionsOf(workload);
  setCondition(conditions, member(workload, "metadata"), "Finished", "True", reason, message, now);
  return admissionStatusApply(workload, conditions, true);
}

json releasedStatusApply(const json& workload, Clock::time_point now) {
  const auto& meta = member(workload, "metadata");
  auto conditions = conditionsOf(workload);
  std::string reason = "Pending", message;
  for (const auto& c : conditions) {
    if (stringField(c, "type") == "Evicted") {
      reason = stringField(c, "reason");
      message = stringField(c, "message");
    }
  }
  // Requeued at once after a preemption or a node failure; after anything else (a deactivation, a
  // stopped queue) only when Kueue says so.
  bool requeue = reason == "Preempted" || reason == "NodeFailures";
  setCondition(conditions, meta, "Requeued", requeue ? "True" : "False", reason, message, now);
  setCondition(conditions, meta, "QuotaReserved", "False", "Pending", message, now);
  setCondition(conditions, meta, "Admitted", "False", "NoReservation", "The workload has no reservation", now);
  return admissionStatusApply(workload, conditions, false);
}

}  // namespace vto::reconcilers
