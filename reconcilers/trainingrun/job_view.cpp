// What a job's state makes of a TrainingRun's status: the attempt's record, status.job, the phase,
// the lifecycle conditions, and the Event that tells a new phase.
#include <algorithm>
#include <array>

#include "reconcilers/jobs/log_tail.h"
#include "reconcilers/trainingrun/capacity.h"
#include "reconcilers/trainingrun/draft.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

using controller::normalEvent;
using controller::warningEvent;
using crd::Phase;

namespace trainingrun {
namespace {

// The last path segment of a resource name: the numeric job id.
std::string lastSegment(const std::string& name) { return name.substr(name.rfind('/') + 1); }

// The Vertex job as status shows it: status.job.
crd::JobRef jobRefOf(const CachedJob& job) {
  crd::JobRef ref;
  ref.name = job.name;
  ref.id = lastSegment(job.name);
  ref.kind = std::string(vertex::kindName(vertex::jobKindOf(job.name)));
  ref.state = std::string(vertex::jobStateName(job.state));
  ref.consoleUrl = consoleUrl(job.name);
  ref.createTime = wholeSeconds(job.createTime);
  ref.startTime = wholeSeconds(job.startTime);
  ref.endTime = wholeSeconds(job.endTime);
  ref.webAccessUris = job.webAccessUris;
  return ref;
}

// The phase, its message and the Running condition for a job's state.
void phaseOfJob(Draft& d, const CachedJob& job, const std::string& attemptText) {
  std::string state(vertex::jobStateName(job.state));
  std::string errorText = job.error ? job.error->message : "";
  auto ended = d.current().endTime ? *d.current().endTime : d.now();
  switch (job.state) {
    case vertex::JobState::Unspecified:
      d.phase(Phase::Submitted, attemptText + " submitted");
      d.condition(ConditionType::Running, false, Reason::JobSubmitted);
      break;
    case vertex::JobState::Queued:
    case vertex::JobState::Pending:
      d.phase(Phase::Queued, attemptText + " waiting for resources (" + state + ")");
      d.condition(ConditionType::Running, false, Reason::JobQueued, state);
      break;
    case vertex::JobState::Running:
    case vertex::JobState::Paused:
    case vertex::JobState::Updating:
      d.phase(Phase::Running, attemptText + " running");
      d.condition(ConditionType::Running, true, Reason::JobRunning);
      break;
    case vertex::JobState::Succeeded:
    case vertex::JobState::PartiallySucceeded:
      d.phase(Phase::Succeeded, attemptText + " succeeded");
      d.next.completionTime = ended;
      d.condition(ConditionType::Running, false, Reason::JobSucceeded);
      break;
    case vertex::JobState::Failed:
    case vertex::JobState::Expired:
      d.phase(Phase::Failed, attemptText + " failed: " + (errorText.empty() ? state : errorText));
      d.current().message = errorText;
      d.next.completionTime = ended;
      d.condition(ConditionType::Running, false, Reason::JobFailed, errorText);
      break;
    case vertex::JobState::Cancelling:
      d.phase(Phase::Cancelling, attemptText + " is being cancelled");
      d.condition(ConditionType::Running, false, Reason::JobCancelling);
      break;
    case vertex::JobState::Cancelled:
      d.phase(Phase::Cancelled, attemptText + " was cancelled" + (errorText.empty() ? "" : ": " + errorText));
      d.next.completionTime = ended;
      d.condition(ConditionType::Running, false, Reason::JobCancelled);
      break;
  }
}

// An Event's message stays within what events.k8s.io allows a note (1 KiB): the log tail is shortened.
constexpr size_t kMaxEventMessageBytes = 1024;

// Whether the current attempt's log tail is still to come: the Failed Event waits for it (the phase
// does not), and the pass that records it tells the failure.
bool tailPending(const Draft& d) {
  return d.o.logTails.enabled && !d.next.history.attempts.empty() &&
         wantsLogTail(d.next.history.attempts.back(), d.o.now);
}

controller::Event failedEvent(const Draft& d) {
  std::string message = d.next.message + costNote(d);
  const auto& attempts = d.next.history.attempts;
  if (!attempts.empty() && !attempts.back().logTail.empty() && attempts.back().logTail != kLogTailFollows) {
    message += "; log: ";
    size_t room = kMaxEventMessageBytes > message.size() ? kMaxEventMessageBytes - message.size() : 0;
    message += shortTail(attempts.back().logTail, std::max<size_t>(room, 256));
  }
  return warningEvent("Failed", message);
}

// When the failure that waits for its tail was written: its Failed condition's transition.
std::optional<Clock::time_point> failedSince(const Draft& d) {
  const auto* failed = controller::findStatusCondition(d.o.status.conditions, conditionTypeName(ConditionType::Failed));
  if (failed == nullptr || failed->status != "True") return std::nullopt;
  return failed->lastTransitionTime;
}

// The log tails read since the last pass go into their attempts, once. A tail that completes a
// failure already written tells it now (its Event waited for the tail). The Event waits at most
// options.logTailWait: then it goes out without the tail, the attempt says the tail follows, and the
// tail, when read, only goes into status (the Event is not told twice).
void recordLogTails(Draft& d) {
  bool currentRecorded = false;
  bool alreadyTold = false;
  for (auto& attempt : d.next.history.attempts) {
    auto read = d.o.logTails.read.find(attempt.attempt);
    if (read == d.o.logTails.read.end() || !wantsLogTail(attempt, d.o.now)) continue;
    bool current = &attempt == &d.next.history.attempts.back();
    if (current) alreadyTold = attempt.logTail == kLogTailFollows;
    attempt.logTail = read->second;
    currentRecorded = current;
  }
  bool failureWritten = d.next.phase == Phase::Failed && d.o.status.phase == Phase::Failed;
  if (currentRecorded && failureWritten && !alreadyTold) {
    d.plan.events.push_back(failedEvent(d));
    return;
  }
  if (currentRecorded || !tailPending(d) || d.next.phase != Phase::Failed) return;
  auto& current = d.next.history.attempts.back();
  if (current.logTail == kLogTailFollows) return;
  auto since = failureWritten ? failedSince(d) : std::nullopt;
  auto deadline = since ? *since + d.options.logTailWait : d.o.now + d.options.logTailWait;
  if (failureWritten && (!since || d.o.now >= deadline)) {
    current.logTail = kLogTailFollows;
    d.plan.events.push_back(failedEvent(d));
    return;
  }
  auto wait = std::max<Clock::duration>(deadline - d.o.now, std::chrono::seconds(1));
  if (d.plan.requeueAfter == Clock::duration::zero() || wait < d.plan.requeueAfter) d.plan.requeueAfter = wait;
}

}  // namespace

bool conditionIs(const Draft& d, ConditionType type, const char* status, Reason reason) {
  const auto* c = controller::findStatusCondition(d.o.status.conditions, conditionTypeName(type));
  return c != nullptr && c->status == status && c->reason == reasonName(reason);
}

// What Vertex says about the current attempt's job, in the attempt's record, status.job, the phase and
// the lifecycle conditions.
void applyJobState(Draft& d, const CachedJob& job) {
  auto& attempt = d.current();
  attempt.jobName = job.name;
  attempt.state = std::string(vertex::jobStateName(job.state));
  if (d.run.spec.capacity) attempt.location = vertex::locationOf(job.name).location;  // where it runs, from its name
  if (job.startTime) attempt.startTime = wholeSeconds(job.startTime);
  if (job.endTime) attempt.endTime = wholeSeconds(job.endTime);
  // Vertex stamps endTime on every ending; should it ever be missing, the first pass that saw the end
  // stands in, so that the resume backoff counts from a fixed point.
  if (vertex::isTerminal(job.state) && !attempt.endTime) attempt.endTime = d.now();
  d.next.job = jobRefOf(job);
  if (job.bestTrial) d.next.history.bestTrial = crd::BestTrial{job.bestTrial->id, job.bestTrial->parameters, job.bestTrial->metrics};

  d.condition(ConditionType::Submitted, true, Reason::JobCreated, job.name);
  phaseOfJob(d, job, "attempt " + std::to_string(attempt.attempt));
  bool succeeded = d.next.phase == Phase::Succeeded;
  bool cancelled = d.next.phase == Phase::Cancelled;
  bool failed = d.next.phase == Phase::Failed || cancelled;
  d.condition(ConditionType::Succeeded, succeeded, succeeded ? Reason::JobSucceeded : Reason::NotFinished);
  d.condition(ConditionType::Failed, failed,
              failed ? (cancelled ? Reason::JobCancelled : Reason::JobFailed) : Reason::NoFailure,
              failed ? d.next.message : "");
  if (!crd::isFinished(d.next.phase)) d.next.completionTime.reset();
}

// Ready, Reconciling and Stalled from everything else this pass decided (healthOf).
void kstatusConditions(Draft& d) {
  HealthInput in;
  in.phase = d.next.phase;
  in.message = d.next.message;
  in.modelWanted = d.run.spec.model.has_value();
  const char* ready = conditionTypeName(ConditionType::Ready);
  for (const auto& c : d.next.conditions) {
    if (c.type == ready && d.readyGate) in.readyGate = c;
    if (c.type != ready) in.conditions.push_back(c);
  }
  auto health = healthOf(in);
  for (auto* c : {&health.ready, &health.reconciling, &health.stalled}) {
    if (const auto* old = controller::findStatusCondition(d.o.status.conditions, c->type)) {
      controller::removeStatusCondition(d.next.conditions, c->type);  // its lastTransitionTime carries over
      d.next.conditions.push_back(*old);
    }
    c->observedGeneration = d.o.metadata.generation;
    controller::setStatusCondition(d.next.conditions, *c, d.o.now);
  }
}

// The Event for a phase the user has not heard about yet.
void transitionEvent(Draft& d) {
  if (d.told == Told::ByOwnEvent || !d.next.phase || d.next.phase == d.o.status.phase) return;
  const auto& message = d.next.message;
  switch (*d.next.phase) {
    case Phase::Queued: d.plan.events.push_back(normalEvent("JobQueued", message)); break;
    case Phase::Running: d.plan.events.push_back(normalEvent("JobRunning", message)); break;
    case Phase::Succeeded: d.plan.events.push_back(normalEvent("Succeeded", message + costNote(d))); break;
    case Phase::Suspended: d.plan.events.push_back(normalEvent("Suspended", message)); break;
    case Phase::Resuming: d.plan.events.push_back(normalEvent("Resuming", message)); break;
    case Phase::Failed:
      if (!tailPending(d)) d.plan.events.push_back(failedEvent(d));
      break;
    case Phase::Cancelled: d.plan.events.push_back(warningEvent("Cancelled", message)); break;
    default: break;  // Pending, Submitted, Cancelling and Invalid are told where they happen
  }
}

void sortConditions(std::vector<crd::Condition>& conditions) {
  std::stable_sort(conditions.begin(), conditions.end(), [](const auto& a, const auto& b) {
    auto rank = [](const std::string& type) {
      for (int i = 0; i <= static_cast<int>(ConditionType::Stalled); ++i) {
        if (type == conditionTypeName(static_cast<ConditionType>(i))) return i;
      }
      return 100;
    };
    return rank(a.type) < rank(b.type);
  });
}

// Conditions in one order (stable output, no spurious writes); the status goes into the plan only if
// it differs from what is stored.
Plan finish(Draft& d) {
  placementView(d);
  recordLogTails(d);
  if (d.o.run) d.next.progress = progressOf(d.run.spec, d.next);
  kstatusConditions(d);
  sortConditions(d.next.conditions);
  costView(d);  // last: it recomputes the cost only when the rest of the status changed
  transitionEvent(d);
  if (!d.o.statusStored || d.next != d.o.status) d.plan.status = d.next;
  d.plan.finished = crd::isFinished(d.next.phase);
  return std::move(d.plan);
}

// A finished run: the work after its success first (decide.h's workAfterSuccess), then only its TTL.
Plan finished(Draft& d) {
  finishWorkload(d);  // the job has ended: its quota returns whatever follows (registration, TTL)
  if (d.run.spec.model && d.next.phase == Phase::Succeeded) {
    const auto* registered = controller::findStatusCondition(d.next.conditions, conditionTypeName(ConditionType::ModelRegistered));
    if (registered == nullptr || registered->status != "True") return continueWorkAfterSuccess(d);
  }
  const auto& ttl = d.run.spec.ttlSecondsAfterFinished;
  if (ttl && d.next.completionTime) {
    auto expires = *d.next.completionTime + std::chrono::seconds(*ttl);
    if (d.o.now < expires) {
      d.plan.requeueAfter = expires - d.o.now;
    } else {
      d.plan.deleteRun = true;
    }
  }
  return finish(d);
}

}  // namespace trainingrun

const char* conditionTypeName(ConditionType type) {
  static constexpr std::array names = {"Valid", "Ready", "Submitted", "Running", "Succeeded", "Failed", "CheckpointsReadable",
                                       "CostEstimated", "ModelRegistered", "Reconciling", "Stalled"};
  return names[static_cast<size_t>(type)];
}

const char* reasonName(Reason reason) {
  static constexpr std::array names = {
      "SpecValid",    "SpecInvalid", "JobCreated",   "JobRejected",  "JobSubmitted", "JobQueued",
      "JobRunning",   "JobSucceeded", "JobFailed",   "JobCancelling", "JobCancelled", "JobNotFound", "JobNotOwned",
      "NotFinished",  "NoFailure",   "Resuming",     "ResumeBudgetExhausted", "Suspended", "VertexError",
      "TenantPolicyViolation", "TenantQuotaExceeded", "OutputBucketNotFound", "CheckpointsListed",
      "CheckpointsForbidden", "CheckpointListFailed", "WaitingForCapacity", "CapacityUnavailable",
      "Registering", "VersionRegistered", "ArtifactMissing", "UploadFailed", "PermissionDenied",
      "Priced", "PriceMissing", "CostLimitReached", "BudgetExceeded",
      "RegistrationRefused", "EvaluationNotImported", "AdoptionRefused", "WaitingForKueue", "KueueUnavailable",
  };
  return names[static_cast<size_t>(reason)];
}

std::string consoleUrl(const std::string& jobName) {
  auto where = vertex::locationOf(jobName);
  return "https://console.cloud.google.com/vertex-ai/locations/" + where.location + "/training/" +
         trainingrun::lastSegment(jobName) + "/cpu?project=" + where.project;
}
}  // namespace vto::reconcilers
