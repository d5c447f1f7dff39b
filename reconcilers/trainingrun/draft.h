#pragma once
// Inside decide (decide.h): one decide() in progress, shared by decide.cpp (the lifecycle and its
// gates) and job_view.cpp (what a job's state makes of status). Not for use outside this room.
#include <optional>
#include <string>

#include "controller/conditions.h"
#include "reconcilers/trainingrun/decide.h"

namespace vto::reconcilers::trainingrun {

// metav1.Time is whole seconds: times vto writes are cut to them, so that a pass that sees nothing
// new computes the status that is stored, and writes nothing.
inline Clock::time_point wholeSeconds(Clock::time_point t) { return std::chrono::floor<std::chrono::seconds>(t); }
inline std::optional<Clock::time_point> wholeSeconds(const std::optional<Clock::time_point>& t) {
  return t ? std::optional(wholeSeconds(*t)) : std::nullopt;
}

// How the user hears of a new phase: by its transition Event (JobQueued, Running, Failed, ...), or by
// an Event of its own that the pass raised where it decided the phase (or raised when its gate
// closed), so the same news is not told twice.
enum class Told { ByTransitionEvent, ByOwnEvent };

// One decide() in progress: the status being rebuilt and the plan around it.
struct Draft {
  const Observed& o;
  const crd::TrainingRun& run;  // the decoded run, or an empty one when decoding failed
  crd::TrainingRunStatus next;
  Plan plan;
  Told told = Told::ByTransitionEvent;
  DecideOptions options;
  // The tenancy rules' refusal of this spec, this pass (see decide): no new job while it stands.
  std::optional<governance::TenancyViolation> refused;
  // A gate of this pass set Ready=False (quota, capacity, bucket, Vertex error, budget): healthOf keeps it.
  bool readyGate = false;

  Draft(const Observed& observed, const crd::TrainingRun& decoded) : o(observed), run(decoded) {
    next.observedGeneration = o.metadata.generation;
    next.history = o.status.history;  // the one thing carried: Vertex cannot tell it again cheaply
    if (!next.history.startTime) next.history.startTime = now();
  }

  crd::Attempt& current() { return next.history.attempts.back(); }
  Clock::time_point now() const { return wholeSeconds(o.now); }

  // The view of the job as the last pass left it: this pass observed nothing new about it (the run
  // has settled, Vertex cannot be read, the run is going away or cannot be decoded).
  void keepLastKnown() {
    next.phase = o.status.phase;
    next.message = o.status.message;
    next.conditions = o.status.conditions;
    next.job = o.status.job;
    next.completionTime = o.status.completionTime;
  }
  void condition(ConditionType type, bool status, Reason reason, const std::string& message = "") {
    if (type == ConditionType::Ready) readyGate = true;
    keepCondition(type);  // its lastTransitionTime carries over while its status stays
    controller::setStatusCondition(next.conditions,
                                   crd::Condition{conditionTypeName(type), status ? "True" : "False",
                                                  reasonName(reason), message, std::nullopt, o.metadata.generation},
                                   o.now);
  }
  // The condition as stored, when this pass has nothing new to say about it.
  void keepCondition(ConditionType type) {
    const char* name = conditionTypeName(type);
    if (controller::findStatusCondition(next.conditions, name)) return;
    if (const auto* old = controller::findStatusCondition(o.status.conditions, name)) next.conditions.push_back(*old);
  }
  void phase(crd::Phase phase, std::string message, Told how = Told::ByTransitionEvent) {
    next.phase = phase;
    next.message = std::move(message);
    told = how;
  }
};

// Whether the stored status has this condition with this status and reason (a gate already told).
bool conditionIs(const Draft& d, ConditionType type, const char* status, Reason reason);
// What Vertex says about the current attempt's job, in the attempt's record, status.job, the phase and
// the lifecycle conditions.
void applyJobState(Draft& d, const CachedJob& job);
// Conditions in the order of ConditionType (stable output, no spurious writes).
void sortConditions(std::vector<crd::Condition>& conditions);
// status.cost (cost.cpp): the stored figures, recomputed up to now only when the pass writes status
// anyway. After the conditions are sorted; sorts them again when it sets CostEstimated.
void costView(Draft& d);
// spec.maxCostUsd, for the current attempt's job as this pass read it: nothing to do, cancel the job
// (the estimate reached the limit, or Vertex is still cancelling it), fail the run once it is
// cancelled, or resume it from its last checkpoint (the limit was raised above the estimate).
enum class CostLimitStep { None, Cancel, Failed, Resume };
CostLimitStep costLimitStep(const Draft& d, const CachedJob& job);
Plan cancelAtCostLimit(Draft& d, const CachedJob& job);
Plan failedAtCostLimit(Draft& d);
// A run failed at its cost limit whose limit now lies above its estimate: it resumes.
bool resumableAtCostLimit(const Observed& o);
// The budget gate (budget.cpp) for a job about to be created at `where`: nullopt lets it go (a Warn
// rule's Warning Event and the budget reservation are in the plan); else the pass's plan, held.
std::optional<Plan> budgetGate(Draft& d, const crd::TrainingRun& at, const Location& where);
// Admission by Kueue (kueue_gate.cpp), the last gate before a job for a run labelled
// kueue.x-k8s.io/queue-name: its Workload is made, replaced or waited for; nullopt once Kueue admitted
// it (and always for a run without the label). `at` is the run at the placement about to be created.
std::optional<Plan> kueueGate(Draft& d, const crd::TrainingRun& at);
// An ended run's Workload is marked Finished, so its quota returns at once.
void finishWorkload(Draft& d);
// The governing rule's name, for the job's vto-team label ("" without one).
std::string teamOf(const Observed& o);
// "; cost $12.80 at list prices" for the Succeeded/Failed Events ("" while unpriced).
std::string costNote(const Draft& d);
// The end of every pass: conditions in order, the transition Event, the status when it changed.
Plan finish(Draft& d);
// The same for a finished run: the work after its success, then only its TTL.
Plan finished(Draft& d);
// The work after success (registration.cpp): the next step of registering the run's model, from what
// observe read of the registry; on the pass that sees the success (nothing read yet), a prompt requeue.
Plan continueWorkAfterSuccess(Draft& d);

}  // namespace vto::reconcilers::trainingrun
