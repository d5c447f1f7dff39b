#include "reconcilers/retraining/wiring.h"

#include "base/json_fields.h"
#include "crd/retraining_policy.h"

namespace vto::reconcilers {

RetrainingController::RetrainingController(const controller::ObjectCache& policies, const controller::ObjectCache& runs,
                                           RetrainingDeps deps, TriggerPollerOptions pollerOptions)
    : deps_(std::move(deps)),
      namespaces_(deps_.kube, deps_.clock, deps_.tenancy.rules),
      poller_(policies, deps_.kube, deps_.clients, deps_.tenancy, namespaces_, &ownWrites_, deps_.clock,
              [this](const controller::ObjectKey& key) { enqueue_(key); }, pollerOptions),
      polling_(deps_.clock, [this] { return poller_.targets(); },
               [this](const std::string& target) { return poller_.poll(target); },
               controller::PollingSourceOptions{std::chrono::seconds(1), std::chrono::minutes(5), std::chrono::seconds(1),
                                                pollerOptions.workers, &TriggerPoller::namespaceOf,
                                                pollerOptions.maxPerNamespace, pollerOptions.slowAfter,
                                                static_cast<size_t>(pollerOptions.workers / 2)}),
      reconciler_(std::make_unique<RetrainingPolicyReconciler>(PolicyReconcilerContext{
          policies, runs, deps_.kube, deps_.events, deps_.clock, poller_.readings(), deps_.tenancy, namespaces_,
          &ownWrites_, deps_.runWrites, deps_.metrics, deps_.registry})) {}

void RetrainingController::onPolicyEvent(const nlohmann::json& policy) {
  auto targets = poller_.update(policy);
  if (ownWrites_.consume(policy)) return;
  // Changed by someone else (a spec edit): its triggers are looked at again now, not at their recheck.
  for (const auto& target : targets) polling_.markDue(target);
  enqueue_(controller::keyOf(policy));
}

void RetrainingController::onRunEvent(const nlohmann::json& run) {
  const auto& meta = run.value("metadata", nlohmann::json::object());
  auto policy = meta.value("labels", nlohmann::json::object()).value(crd::kRetrainingPolicyLabel, "");
  if (!policy.empty()) enqueue_({stringField(meta, "namespace"), policy});
}

void wireRetraining(controller::Manager& manager, controller::Informer& policies, controller::Informer& runs,
                    RetrainingController& controller, int workers) {
  manager.addController("retrainingpolicy", controller.reconciler(), workers);
  auto& queue = manager.queue("retrainingpolicy");
  controller.setEnqueue([&queue](const controller::ObjectKey& key) { queue.add(key); });
  policies.addHandler([&controller](const nlohmann::json& policy) { controller.onPolicyEvent(policy); });
  runs.addHandler([&controller](const nlohmann::json& run) { controller.onRunEvent(run); });
  manager.addLoop([&controller](std::stop_token stop) { controller.polling().run(stop); });
}

}  // namespace vto::reconcilers
