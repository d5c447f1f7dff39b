// Admission by Kueue (API.md "Admission by Kueue"), decide's side: a run labelled
// kueue.x-k8s.io/queue-name gets a Workload, then waits (Queued, Ready=False WaitingForKueue with
// Kueue's own message) until Kueue admits it; only then is its job created. What cannot work (the
// integration off, Kueue not installed, a Workload the API server refuses) is said at once, and the
// run never gets a job unqueued. The Workload is Finished when the run ends.
#include <exception>

#include "reconcilers/trainingrun/draft.h"

namespace vto::reconcilers::trainingrun {

using controller::normalEvent;
using controller::warningEvent;
using crd::Phase;

namespace {

const crd::Condition* storedReady(const Draft& d) {
  return controller::findStatusCondition(d.o.status.conditions, conditionTypeName(ConditionType::Ready));
}

// Kueue has not admitted the run: it waits, Queued. An Event tells what Kueue said, when it is news.
Plan waitForKueue(Draft& d, const std::string& workload, const std::string& kueueSays, bool warning) {
  const auto* stored = storedReady(d);
  std::string condition = kueueSays.empty() ? "waiting for Kueue to admit Workload " + workload : kueueSays;
  bool news = stored == nullptr || stored->reason != reasonName(Reason::WaitingForKueue) || stored->message != condition;
  if (news && !kueueSays.empty()) {
    auto message = "Workload " + workload + ": " + kueueSays;
    d.plan.events.push_back(warning ? warningEvent("WaitingForKueue", message) : normalEvent("WaitingForKueue", message));
  }
  d.phase(Phase::Queued, "waiting for Kueue to admit Workload " + workload + (kueueSays.empty() ? "" : ": " + kueueSays),
          Told::ByOwnEvent);
  d.condition(ConditionType::Ready, false, Reason::WaitingForKueue, condition);
  // The Workload's changes wake the run; the resync is only a safety net.
  d.plan.requeueAfter = d.options.resyncPeriod;
  return finish(d);
}

// Kueue cannot admit the run as things are (the integration is off, Kueue is not installed, the API
// server refuses its Workload): said at once, with a Warning, and no job until it can.
enum class Then { WaitForAChange, RetryWithBackoff, RetryOnlyAfterAnEdit };
Plan kueueUnavailable(Draft& d, const std::string& message, Then then) {
  if (!conditionIs(d, ConditionType::Ready, "False", Reason::KueueUnavailable) || d.o.status.message != message) {
    d.plan.events.push_back(warningEvent("KueueUnavailable", message));
  }
  d.phase(Phase::Pending, message, Told::ByOwnEvent);
  d.condition(ConditionType::Ready, false, Reason::KueueUnavailable, message);
  if (then != Then::WaitForAChange) d.plan.failure = PassFailure{then == Then::RetryOnlyAfterAnEdit, message};
  return finish(d);
}

// A label Kueue's CRDs would refuse as a name: the run's own mistake, said before any write.
Plan invalidLabel(Draft& d, const char* label, const std::string& value, const char* what) {
  std::string message = "metadata.labels[" + std::string(label) + "]: \"" + value.substr(0, 253) + "\" is not a " + what +
                        " name (a DNS subdomain: lower-case letters, digits, '-' and '.')";
  bool news = d.o.status.phase != Phase::Invalid || d.o.status.message != message;
  d.phase(Phase::Invalid, message, Told::ByOwnEvent);
  d.condition(ConditionType::Valid, false, Reason::SpecInvalid, message);
  if (news) d.plan.events.push_back(warningEvent("InvalidSpec", message));
  return finish(d);
}

}  // namespace

std::optional<Plan> kueueGate(Draft& d, const crd::TrainingRun& at) {
  auto queue = queueNameOf(d.o.metadata);
  if (!queue) return std::nullopt;  // not Kueue's
  const auto& k = d.o.kueue;
  auto priorityClass = priorityClassOf(d.o.metadata);
  if (!isKueueObjectName(*queue)) return invalidLabel(d, kQueueNameLabel, *queue, "LocalQueue");
  if (!priorityClass.empty() && !isKueueObjectName(priorityClass))
    return invalidLabel(d, kPriorityClassLabel, priorityClass, "WorkloadPriorityClass");
  auto name = workloadNameOf(d.o.metadata);
  if (!k.enabled) {
    return kueueUnavailable(d,
                            "the run asks for Kueue's LocalQueue " + *queue + " (label " + kQueueNameLabel +
                                "), but this operator runs without the Kueue integration (vto run --kueue; the chart's "
                                "kueue.enabled): no job is created until it runs with it, or the label is removed",
                            Then::WaitForAChange);  // the restart with --kueue reconciles every run
  }
  if (k.notInstalled) {
    return kueueUnavailable(d,
                            "Kueue is not installed: the API server does not serve workloads.kueue.x-k8s.io/v1beta2, so "
                            "the run's Workload cannot be created; no job is created unqueued (install Kueue, or remove "
                            "the label " + std::string(kQueueNameLabel) + ")",
                            Then::RetryWithBackoff);
  }
  if (k.refused) {
    return kueueUnavailable(d, "the API server refused the run's Workload " + name + ": " + *k.refused,
                            Then::RetryOnlyAfterAnEdit);
  }
  if (k.foreign) return kueueUnavailable(d, *k.foreign, Then::RetryWithBackoff);
  std::vector<PodSetShape> wanted;
  try {
    wanted = podSetsOf(at);
  } catch (const std::exception& e) {
    return kueueUnavailable(d, "cannot tell what the run asks of Kueue: " + std::string(e.what()), Then::RetryOnlyAfterAnEdit);
  }
  if (!k.workload) {
    if (!priorityClass.empty() && !k.priority) {
      return kueueUnavailable(d, k.priorityProblem.value_or("the WorkloadPriorityClass " + priorityClass + " was not read"),
                              Then::RetryWithBackoff);
    }
    d.plan.createWorkload = renderWorkload(d.run, at, *queue, priorityClass, k.priority);
    return waitForKueue(d, name, "", false);
  }
  const auto& w = *k.workload;
  // Kueue never admits a Finished Workload again, and pod sets cannot change once quota is reserved:
  // a run that needs a new admission (a resume after it ended, an edited spec, another placement)
  // gets a new Workload. The next pass creates it once the deletion is seen.
  std::string replaced;
  if (w.is("Finished")) {
    replaced = "Workload " + name + " is Finished (Kueue never admits it again)";
  } else if (w.queueName != *queue) {
    replaced = "the run now asks for LocalQueue " + *queue + ", not " + w.queueName;
  } else if (w.priorityClass != priorityClass) {
    replaced = "the run's priority class is now \"" + priorityClass + "\", not \"" + w.priorityClass + "\"";
  } else if (w.podSets != wanted) {
    replaced = "what the run asks for (its worker pools, replicas or accelerators) changed since Workload " + name + " was made";
  }
  if (!replaced.empty()) {
    d.plan.deleteWorkload = w.name;
    d.plan.events.push_back(normalEvent("WaitingForKueue", replaced + ": it is replaced by a new Workload"));
    d.phase(Phase::Queued, replaced + ": replacing Workload " + name, Told::ByOwnEvent);
    d.condition(ConditionType::Ready, false, Reason::WaitingForKueue, replaced);
    d.plan.requeueAfter = d.options.resyncPeriod;  // the deletion's event wakes the run
    return finish(d);
  }
  if (w.admitted()) return std::nullopt;
  if (const auto* evicted = w.condition("Evicted"); evicted != nullptr && evicted->status == "True") {
    // No job runs (this is the way to a new one): the admission goes back, as Kueue's own integrations
    // give it back once their job stopped, and Kueue queues the Workload again.
    if (w.is("QuotaReserved")) d.plan.releaseAdmission = releasedStatusApply(*k.workloadObject, d.o.now);
    return waitForKueue(d, name, "evicted (" + evicted->reason + "): " + evicted->message, true);
  }
  if (const auto* reserved = w.condition("QuotaReserved"); reserved != nullptr && reserved->status == "False") {
    return waitForKueue(d, name, reserved->message.empty() ? reserved->reason : reserved->message,
                        reserved->reason == "Inadmissible");
  }
  // Quota reserved and no admission checks: Kueue's Admitted follows at once, nothing new to tell.
  if (w.is("QuotaReserved") && w.admissionChecks > 0) {
    return waitForKueue(d, name, "quota reserved in ClusterQueue " + w.clusterQueue + ", waiting for its admission checks",
                        false);
  }
  return waitForKueue(d, name, "", false);  // Kueue has said nothing yet
}

void finishWorkload(Draft& d) {
  const auto& k = d.o.kueue;
  if (!k.workload || !k.workloadObject || k.workload->is("Finished") || !crd::isFinished(d.next.phase)) return;
  d.plan.finishWorkload = finishedStatusApply(*k.workloadObject, d.next.phase == Phase::Succeeded ? "Succeeded" : "Failed",
                                              d.next.message, d.o.now);
}

}  // namespace vto::reconcilers::trainingrun
