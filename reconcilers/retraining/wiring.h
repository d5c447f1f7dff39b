#pragma once
// Everything `vto run` puts around the RetrainingPolicy reconciler, as one object the tests build too:
// the TriggerPoller and its PollingSource (several workers, a few polls per namespace at once), the
// policies' own-writes record, and the handlers that wake a policy when it or one of its runs changes.
// wireRetraining() registers it with a controller::Manager.
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "controller/informer.h"
#include "controller/manager.h"
#include "controller/object_cache.h"
#include "controller/own_writes.h"
#include "controller/polling_source.h"
#include "metrics/retraining_metrics.h"
#include "reconcilers/retraining/reconciler.h"
#include "reconcilers/retraining/trigger_poller.h"
#include "reconcilers/tenancy/namespace_labels.h"

namespace vto::reconcilers {

struct RetrainingDeps {
  controller::KubeClient& kube;
  controller::EventRecorder& events;
  const Clock& clock;
  TriggerClients clients;
  PolicyTenancy tenancy;
  metrics::RetrainingMetrics* metrics = nullptr;  // may be null
  // The TrainingRun reconciler's record of writes to runs: the policy's counted marks go there too.
  controller::OwnWrites* runWrites = nullptr;
};

class RetrainingController {
 public:
  using Enqueue = std::function<void(const controller::ObjectKey& policy)>;
  // `policies` is the RetrainingPolicy informer's cache, `runs` the TrainingRun informer's (indexed by
  // crd::kRetrainingPolicyLabel).
  RetrainingController(const controller::ObjectCache& policies, const controller::ObjectCache& runs, RetrainingDeps deps,
                       TriggerPollerOptions pollerOptions = {});

  void setEnqueue(Enqueue enqueue) { enqueue_ = std::move(enqueue); }
  // A policy changed: its trigger targets, then the policy, unless the event is our own write's echo.
  void onPolicyEvent(const nlohmann::json& policy);
  // A run changed: its policy (a run's end frees a Forbid slot, or answers a pending request).
  void onRunEvent(const nlohmann::json& run);

  RetrainingPolicyReconciler& reconciler() { return *reconciler_; }
  TriggerPoller& triggers() { return poller_; }
  controller::PollingSource& polling() { return polling_; }
  controller::OwnWrites& ownWrites() { return ownWrites_; }

 private:
  Enqueue enqueue_ = [](const controller::ObjectKey&) {};
  RetrainingDeps deps_;
  NamespaceLabels namespaces_;
  controller::OwnWrites ownWrites_;
  TriggerPoller poller_;
  controller::PollingSource polling_;
  std::unique_ptr<RetrainingPolicyReconciler> reconciler_;
};

// The controller named "retrainingpolicy" with `workers` reconcile workers, its handlers on both
// informers, and trigger polling as a loop that runs only on the leader.
void wireRetraining(controller::Manager& manager, controller::Informer& policies, controller::Informer& runs,
                    RetrainingController& controller, int workers);

}  // namespace vto::reconcilers
