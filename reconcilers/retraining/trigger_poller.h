#pragma once
// The polled triggers' readings (a listing of a tenant's bucket, a query of a tenant's Prometheus),
// taken off the reconcile workers: slow reads a tenant chooses must never hold a worker, nor delay
// another tenant's policies. Each policy's newData and metric trigger is a target of a
// controller::PollingSource (run with several workers and at most a few targets per namespace at
// once); a poll reads the policy from the informer cache, checks the tenancy rules on that very object,
// takes the reading when it is due, keeps it here and wakes the policy, whose next pass judges it
// (decide, exactly once).
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "controller/kube_client.h"
#include "controller/object_cache.h"
#include "controller/own_writes.h"
#include "crd/retraining_policy.h"
#include "governance/tenancy.h"
#include "reconcilers/retraining/metric_trigger.h"
#include "reconcilers/retraining/new_data_trigger.h"
#include "reconcilers/tenancy/namespace_labels.h"
#include "vertex/gcs_client.h"
#include "vertex/prometheus_client.h"

namespace vto::reconcilers {

// The outbound clients of the polled triggers; a null one leaves its trigger unhealthy ("not configured").
struct TriggerClients {
  vertex::GcsClient* gcs = nullptr;
  vertex::PrometheusClient* prometheus = nullptr;
};

// Tenancy (API.md "Tenancy rules"): a policy's template and its newData.gcsPrefix are checked before
// any run is created or any bucket listed. No rules: everything is allowed.
struct PolicyTenancy {
  governance::TenancyRules rules;
  Location defaults;  // the operator's --default-project and --default-location
};
// The rules' refusal of a policy, or nullopt (no rules: nothing refused).
std::optional<governance::TenancyViolation> policyTenancyViolation(const crd::RetrainingPolicy& policy,
                                                            const PolicyTenancy& tenancy, NamespaceLabels& namespaces);

// What a reading was taken against: the trigger's spec and, for data, the watermark status held. A
// pass judges a reading only while the policy still matches it; anything else is polled again.
std::string dataBasis(const crd::RetrainingPolicy& policy);
std::string metricBasis(const crd::RetrainingPolicy& policy);

// The newest reading of each policy's triggers, by policy uid. Thread-safe; one of each per policy.
class TriggerReadings {
 public:
  void putData(const std::string& uid, std::string basis, DataPoll poll);
  void putMetric(const std::string& uid, std::string basis, MetricEval eval);
  // The reading taken against `basis`, if that is the newest one.
  std::optional<DataPoll> data(const std::string& uid, const std::string& basis) const;
  std::optional<MetricEval> metric(const std::string& uid, const std::string& basis) const;
  void forget(const std::string& uid);
  size_t size() const;

 private:
  struct Readings {
    std::string dataBasis, metricBasis;
    std::optional<DataPoll> data;
    std::optional<MetricEval> metric;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Readings> byUid_;
};

struct TriggerPollerOptions {
  int workers = 4;          // polls at once, over all namespaces
  size_t maxPerNamespace = 1;  // polls of one namespace at once
  // A namespace whose last poll took longer (or failed), or that has not been polled yet, shares half
  // the workers with every other such namespace: the other half stays with namespaces that answer.
  Clock::duration slowAfter = std::chrono::seconds(5);
  // A reading waits this long for a pass to judge it before the trigger is polled again anyway.
  Clock::duration judgeWithin = std::chrono::seconds(30);
  // A trigger not due is looked at again after at most this long (an edit of its spec is seen then).
  Clock::duration recheck = std::chrono::seconds(30);
};

class TriggerPoller {
 public:
  using Wake = std::function<void(const controller::ObjectKey& policy)>;
  // `policies` is the RetrainingPolicy informer's cache; `kube` reads bearerTokenSecret Secrets;
  // `ownWrites` (may be null) holds the policy reconciler's writes, so no poll judges a policy the
  // cache shows behind them.
  TriggerPoller(const controller::ObjectCache& policies, controller::KubeClient& kube, TriggerClients clients,
                const PolicyTenancy& tenancy, NamespaceLabels& namespaces, const controller::OwnWrites* ownWrites,
                const Clock& clock, Wake wake, TriggerPollerOptions options = {});

  // A policy event from the informer: keeps the targets (policies with a polled trigger) current;
  // returns the policy's targets, which the caller may make due at once (the policy changed).
  std::vector<std::string> update(const nlohmann::json& policy);
  // The PollingSource's targets ("data|ns/name", "metric|ns/name"), their groups (the namespace) and
  // one poll of a target: returns when to look at it again.
  std::vector<std::string> targets() const;
  static std::string namespaceOf(const std::string& target);
  Clock::duration poll(const std::string& target);

  const TriggerReadings& readings() const { return readings_; }
  TriggerReadings& readings() { return readings_; }
  const TriggerPollerOptions& options() const { return options_; }

 private:
  std::string bearerToken(const std::string& ns, const crd::SecretKeyRef& ref);
  Clock::duration pollData(const crd::RetrainingPolicy& policy, Clock::time_point now);
  Clock::duration pollMetric(const crd::RetrainingPolicy& policy, Clock::time_point now);

  const controller::ObjectCache& policies_;
  controller::KubeClient& kube_;
  TriggerClients clients_;
  const PolicyTenancy& tenancy_;
  NamespaceLabels& namespaces_;
  const controller::OwnWrites* ownWrites_;
  const Clock& clock_;
  Wake wake_;
  TriggerPollerOptions options_;
  TriggerReadings readings_;
  mutable std::mutex mutex_;
  std::set<std::string> targets_;
};

}  // namespace vto::reconcilers
