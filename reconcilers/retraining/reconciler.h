#pragma once
// The RetrainingPolicy reconciler: creates TrainingRuns from a policy's template when a trigger fires,
// exactly once per trigger whatever crashes, as the CronJob controller creates Jobs (the rules and
// their anchors: docs/retraining.md). One pass is observe -> decide -> act (decide.h):
// - observe: the policy and its runs from the informer caches, the newest readings of its polled
//   triggers (TriggerPoller), the tenancy rules, the injected clock; a cache behind this process's
//   own writes (to the policy, or a run's counted mark) defers the pass to the echo of that write;
// - decide: pure, tested by tables;
// - act: the schedule baseline, the runs, one status write, the counted marks, the deletions, the
//   trigger state; then every Event of the pass, from one place.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "controller/event_recorder.h"
#include "controller/kube_client.h"
#include "controller/object_cache.h"
#include "controller/own_writes.h"
#include "controller/reconciler.h"
#include "metrics/retraining_metrics.h"
#include "reconcilers/retraining/decide.h"
#include "reconcilers/retraining/trigger_poller.h"
#include "reconcilers/tenancy/namespace_labels.h"

namespace vto::reconcilers {

// The RetrainingPolicy collection on the API server.
const controller::Resource& retrainingPolicyResource();

// The parts of the process a policy pass shares with others.
struct PolicyReconcilerContext {
  const controller::ObjectCache& policies;
  const controller::ObjectCache& runs;  // TrainingRuns, indexed by crd::kRetrainingPolicyLabel
  controller::KubeClient& kube;
  controller::EventRecorder& events;
  const Clock& clock;
  const TriggerReadings& readings;      // the TriggerPoller's
  const PolicyTenancy& tenancy;
  NamespaceLabels& namespaces;
  controller::OwnWrites* policyWrites = nullptr;  // this reconciler's writes to policies
  controller::OwnWrites* runWrites = nullptr;     // writes to TrainingRuns (shared with their reconciler)
  metrics::RetrainingMetrics* metrics = nullptr;
};

class RetrainingPolicyReconciler final : public controller::Reconciler {
 public:
  explicit RetrainingPolicyReconciler(PolicyReconcilerContext context);

  controller::Result reconcile(const controller::ObjectKey& key) override;

  // The two halves around decidePolicy(), public for tests. observe returns nullopt when the caches
  // are behind this process's own writes (the echo brings the policy back).
  std::optional<PolicyObserved> observe(const nlohmann::json& policy);
  controller::Result act(const nlohmann::json& policy, const PolicyObserved& observed, PolicyPlan plan);

 private:
  // A conditional merge patch of the policy's annotations; returns the policy as written.
  nlohmann::json patchAnnotations(const nlohmann::json& policy, const nlohmann::json& annotations);
  std::vector<CreateOutcome> createRuns(const nlohmann::json& policy, const PolicyPlan& plan);
  std::vector<controller::Event> deleteRuns(const std::string& ns, const PolicyPlan& plan);
  void markCounted(const PolicyObserved& observed, const PolicyPlan& plan);
  void recordMetrics(const PolicyObserved& observed, const PolicyPlan& plan);

  PolicyReconcilerContext c_;
};

}  // namespace vto::reconcilers
