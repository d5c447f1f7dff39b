#include "reconcilers/training_run_decide.h"

#include <algorithm>
#include <array>

#include "controller/conditions.h"
#include "base/rfc3339.h"
#include "crd/validation.h"
#include "reconcilers/failure_class.h"
#include "reconcilers/resume_policy.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

using controller::normalEvent;
using controller::warningEvent;
using crd::Phase;

namespace {

// Written into an attempt's message when vto cancels its job for `suspend: true`, so that a later pass
// can tell a suspension from a cancellation made outside vto.
constexpr const char* kSuspendedMessage = "cancelled by vto: the run was suspended";

std::string timeOrEmpty(const std::optional<Clock::time_point>& t) { return t ? rfc3339(*t) : ""; }

// The last path segment of a resource name: the numeric job id.
std::string lastSegment(const std::string& name) { return name.substr(name.rfind('/') + 1); }

// One decide() in progress: the status being computed and the plan around it.
struct Draft {
  const Observed& o;
  const crd::TrainingRun& run;  // the decoded run, or an empty one when decoding failed
  crd::TrainingRunStatus next;
  Plan plan;

  Draft(const Observed& observed, const crd::TrainingRun& decoded) : o(observed), run(decoded) {
    // The attempt history is the one thing Vertex cannot tell us cheaply, so it is carried forward;
    // conditions keep their transition times through setStatusCondition.
    const auto& old = o.status;
    next.observedGeneration = o.metadata.generation;
    next.conditions = old.conditions;
    next.attempts = old.attempts;
    next.attemptCount = old.attemptCount;
    next.resumes = old.resumes;
    next.lastCheckpoint = old.lastCheckpoint;
    next.bestTrial = old.bestTrial;
    next.startTime = old.startTime.empty() ? rfc3339(o.now) : old.startTime;
    next.completionTime = old.completionTime;
    next.job = old.job;
    next.phase = old.phase;
    next.message = old.message;
  }

  // The tenancy rules' refusal of this spec, this pass (see decide): no new job while it stands.
  std::optional<crd::TenancyViolation> refused;

  crd::Attempt& current() { return next.attempts.back(); }
  std::string now() const { return rfc3339(o.now); }
  void condition(ConditionType type, bool status, Reason reason, const std::string& message = "") {
    controller::setStatusCondition(next.conditions,
                                   crd::Condition{conditionTypeName(type), status ? "True" : "False",
                                                  reasonName(reason), message, "", o.metadata.generation},
                                   o.now);
  }
  void phase(Phase phase, std::string message) {
    next.phase = phase;
    next.message = std::move(message);
  }
};

bool isSuspensionCancel(const CachedJob& job, const crd::Attempt& attempt) {
  return job.state == vertex::JobState::Cancelled && attempt.message == kSuspendedMessage;
}

// Maps what Vertex says about the current attempt's job to the attempt, the job reference, the phase
// and the lifecycle conditions.
void applyJobState(Draft& d, const CachedJob& job) {
  auto& attempt = d.current();
  std::string state(vertex::jobStateName(job.state));
  attempt.jobName = job.name;
  attempt.state = state;
  if (job.startTime) attempt.startTime = timeOrEmpty(job.startTime);
  if (job.endTime) attempt.endTime = timeOrEmpty(job.endTime);
  // Vertex stamps endTime on every ending; should it ever be missing, the first pass that saw the end
  // stands in, so that the resume backoff counts from a fixed point.
  if (vertex::isTerminal(job.state) && attempt.endTime.empty()) attempt.endTime = d.now();

  crd::JobRef ref;
  ref.name = job.name;
  ref.id = lastSegment(job.name);
  ref.kind = std::string(vertex::kindName(vertex::jobKindOf(job.name)));
  ref.state = state;
  ref.consoleUrl = consoleUrl(job.name);
  ref.createTime = timeOrEmpty(job.createTime);
  ref.startTime = timeOrEmpty(job.startTime);
  ref.endTime = timeOrEmpty(job.endTime);
  ref.webAccessUris = job.webAccessUris;
  d.next.job = ref;
  if (job.bestTrial) d.next.bestTrial = crd::BestTrial{job.bestTrial->id, job.bestTrial->parameters, job.bestTrial->metrics};

  std::string attemptText = "attempt " + std::to_string(attempt.attempt);
  std::string errorText = job.error ? job.error->message : "";
  std::string ended = attempt.endTime.empty() ? d.now() : attempt.endTime;
  d.condition(ConditionType::Submitted, true, Reason::JobCreated, job.name);
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
      attempt.message = errorText;
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
  bool succeeded = d.next.phase == Phase::Succeeded;
  bool cancelled = d.next.phase == Phase::Cancelled;
  bool failed = d.next.phase == Phase::Failed || cancelled;
  d.condition(ConditionType::Succeeded, succeeded, succeeded ? Reason::JobSucceeded : Reason::NotFinished);
  d.condition(ConditionType::Failed, failed,
              failed ? (cancelled ? Reason::JobCancelled : Reason::JobFailed) : Reason::NoFailure,
              failed ? d.next.message : "");
  if (!isFinishedPhase(d.next.phase)) d.next.completionTime.clear();
}

// The Event for a phase the user has not heard about yet.
void transitionEvent(Draft& d) {
  if (!d.next.phase || d.next.phase == d.o.status.phase) return;
  const auto& message = d.next.message;
  switch (*d.next.phase) {
    case Phase::Queued: d.plan.events.push_back(normalEvent("JobQueued", message)); break;
    case Phase::Running: d.plan.events.push_back(normalEvent("JobRunning", message)); break;
    case Phase::Succeeded: d.plan.events.push_back(normalEvent("Succeeded", message)); break;
    case Phase::Suspended: d.plan.events.push_back(normalEvent("Suspended", message)); break;
    case Phase::Resuming: d.plan.events.push_back(normalEvent("Resuming", message)); break;
    case Phase::Failed: d.plan.events.push_back(warningEvent("Failed", message)); break;
    case Phase::Cancelled: d.plan.events.push_back(warningEvent("Cancelled", message)); break;
    default: break;  // Submitted and Cancelling have their own events where they happen
  }
}

// Conditions in one order (stable output, no spurious writes); the status goes into the plan only if
// it differs from what is stored.
Plan finish(Draft& d, bool announce = true) {
  std::stable_sort(d.next.conditions.begin(), d.next.conditions.end(), [](const auto& a, const auto& b) {
    auto rank = [](const std::string& type) {
      for (int i = 0; i <= static_cast<int>(ConditionType::CheckpointsReadable); ++i) {
        if (type == conditionTypeName(static_cast<ConditionType>(i))) return i;
      }
      return 100;
    };
    return rank(a.type) < rank(b.type);
  });
  if (announce) transitionEvent(d);
  if (!d.o.statusStored || d.next != d.o.status) {
    d.plan.status = d.next;
  }
  d.plan.finished = isFinishedPhase(d.next.phase);
  return std::move(d.plan);
}

// A finished run only waits for its TTL.
Plan finished(Draft& d, bool announce = true) {
  const auto& ttl = d.run.spec.ttlSecondsAfterFinished;
  if (ttl && !d.next.completionTime.empty()) {
    auto expires = parseRfc3339(d.next.completionTime) + std::chrono::seconds(*ttl);
    if (d.o.now < expires) {
      d.plan.requeueAfter = expires - d.o.now;
    } else {
      d.plan.deleteRun = true;
    }
  }
  return finish(d, announce);
}

Plan invalid(Draft& d, const std::string& message) {
  bool news = d.o.status.phase != Phase::Invalid || d.o.status.message != message;
  d.phase(Phase::Invalid, message);
  d.condition(ConditionType::Valid, false, Reason::SpecInvalid, message);
  if (news) d.plan.events.push_back(warningEvent("InvalidSpec", message));
  return finish(d, false);  // nothing to retry: an edit of the spec brings the run back
}

// A run outside its tenant's rule: like an invalid spec (no job, no retries, an edit brings it back),
// refused before any Vertex or GCS call.
Plan tenantViolation(Draft& d, const crd::TenancyViolation& violation) {
  // One Event: this one says more than decide's "the running job goes on" for the same refusal.
  std::erase_if(d.plan.events, [](const controller::Event& e) { return e.reason == "TenantPolicyViolation"; });
  bool news = d.o.status.phase != Phase::Invalid || d.o.status.message != violation.message;
  d.phase(Phase::Invalid, violation.message);
  d.condition(ConditionType::Valid, false, Reason::TenantPolicyViolation, violation.message);
  if (news) d.plan.events.push_back(warningEvent("TenantPolicyViolation", violation.message));
  return finish(d, false);
}

bool conditionIs(const Draft& d, ConditionType type, const char* status, Reason reason) {
  const auto* c = controller::findStatusCondition(d.o.status.conditions, conditionTypeName(type));
  return c != nullptr && c->status == status && c->reason == reasonName(reason);
}

// Ready=False set by a gate before creation (quota, missing bucket) goes once the gate opens.
void clearReadyGate(Draft& d) {
  const auto* ready = controller::findStatusCondition(d.next.conditions, "Ready");
  if (ready != nullptr && (ready->reason == reasonName(Reason::TenantQuotaExceeded) ||
                           ready->reason == reasonName(Reason::OutputBucketNotFound))) {
    controller::removeStatusCondition(d.next.conditions, "Ready");
  }
}

// CheckpointsReadable from this pass's listing, if there was one; a Warning when it turns False.
void checkpointsReadable(Draft& d) {
  if (d.o.checkpointListError) {
    Reason reason = d.o.checkpointsForbidden ? Reason::CheckpointsForbidden : Reason::CheckpointListFailed;
    std::string message = "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) + ": " +
                          *d.o.checkpointListError +
                          "; a resume will start from scratch until the operator's service account may list "
                          "it (grant roles/storage.objectViewer on the bucket)";
    if (!conditionIs(d, ConditionType::CheckpointsReadable, "False", reason)) {
      d.plan.events.push_back(warningEvent("CheckpointsUnreadable", message));
    }
    d.condition(ConditionType::CheckpointsReadable, false, reason, message);
  } else if (d.o.checkpointListed) {
    d.condition(ConditionType::CheckpointsReadable, true, Reason::CheckpointsListed);
  }
}

// A resume needs the listing that failed: tell the user (CheckpointsReadable=False), retry with backoff.
Plan retryCheckpointListing(const Draft& d, std::string why) {
  Draft told(d.o, d.run);
  told.next.conditions = d.next.conditions;
  checkpointsReadable(told);
  told.plan.retryAfterWrite = std::move(why);
  return finish(told, false);
}

// Deletion: with deletionPolicy Cancel, cancel the job and wait for it to end; then let the object go.
Plan finalize(Draft& d, bool cancel, const DecideOptions& options) {
  if (!d.o.hasFinalizer) return std::move(d.plan);
  const auto& job = d.o.job;
  if (cancel && job && !vertex::isTerminal(job->state)) {
    if (job->state != vertex::JobState::Cancelling) {
      d.plan.cancelJob = job->name;
      d.plan.events.push_back(normalEvent("CancellingJob", "the TrainingRun is being deleted: cancelling " + job->name));
    }
    d.phase(Phase::Cancelling, "deleting: waiting for " + job->name + " to be cancelled");
    d.plan.requeueAfter = options.cancelPollPeriod;
    return finish(d, false);
  }
  d.plan.removeFinalizer = true;
  return std::move(d.plan);
}

// Starts the next attempt from the newest checkpoint (or from scratch when there is none).
void startNextAttempt(Draft& d, const std::string& why) {
  int next = d.current().attempt + 1;
  const auto& checkpoint = d.o.checkpoint;
  d.next.attempts.push_back(crd::Attempt{next, "", "", "", "", "", "", checkpoint ? checkpoint->uri : ""});
  d.next.attemptCount++;
  if (d.next.attempts.size() > crd::kMaxAttemptsInStatus) d.next.attempts.erase(d.next.attempts.begin());
  if (checkpoint) d.next.lastCheckpoint = crd::CheckpointRef{checkpoint->uri, checkpoint->updateTime};
  d.plan.events.push_back(normalEvent(
      "Resumed", why + ": attempt " + std::to_string(next) +
                     (checkpoint ? " resumes from " + checkpoint->uri
                                 : " starts from scratch (no checkpoint yet under " +
                                       crd::checkpointDirectoryOf(d.run.spec) + ")")));
}

// Plans the creation of the current attempt's job; act writes its name to status at once.
Plan create(Draft& d, const DecideOptions& options) {
  auto target = pollTargetOf(d.run.spec, d.o.defaults);
  if (!target) {
    d.plan.terminal = "no project/location for " + d.o.metadata.name;
    return invalid(d, "spec.project and spec.location: set them, or start the operator with --default-project "
                      "and --default-location");
  }
  if (d.o.createRejected) {
    // Vertex refused the job itself (a bad argument, a missing permission): retrying cannot help.
    std::string advice = d.o.createRejected->httpStatus == 403
                             ? " (grant the operator's service account roles/aiplatform.user on the project)"
                             : "";
    d.phase(Phase::Failed, "Vertex AI refused the job: " + d.o.createRejected->message + advice);
    d.next.completionTime = d.now();
    d.condition(ConditionType::Submitted, false, Reason::JobRejected, d.next.message);
    d.condition(ConditionType::Failed, true, Reason::JobRejected, d.next.message);
    d.plan.terminal = d.next.message;
    return finish(d);
  }
  if (d.refused) return tenantViolation(d, *d.refused);  // create is the one door to a new job
  auto& attempt = d.current();
  // The tenant's accelerator cap, first created first served; the run waits as Queued, without a job.
  auto tenancy = tenancyOf(d.o);
  if (tenancy.governingRule) {
    const auto& rule = (*d.o.tenancy)[*tenancy.governingRule];
    auto candidate = crd::claimOf(d.run, false);
    if (rule.maxAccelerators && candidate.accelerators > 0) {
      std::vector<crd::AcceleratorClaim> claims;
      for (const auto& [index, claim] : d.o.otherClaims) {
        if (index == *tenancy.governingRule) claims.push_back(claim);
      }
      auto admitted = crd::admit(candidate, claims, *rule.maxAccelerators, rule.describe(*tenancy.governingRule));
      if (!admitted.admitted) {
        if (!conditionIs(d, ConditionType::Ready, "False", Reason::TenantQuotaExceeded)) {
          d.plan.events.push_back(normalEvent("TenantQuotaExceeded", admitted.message));
        }
        d.phase(Phase::Queued, admitted.message);
        d.condition(ConditionType::Ready, false, Reason::TenantQuotaExceeded, admitted.message);
        d.plan.requeueAfter = options.quotaRecheckPeriod;
        return finish(d, false);
      }
    }
  }
  // The output bucket must exist before attempt 1 (it may be created later: retried with backoff).
  if (d.o.outputBucketMissing) {
    std::string message = "the output bucket gs://" + *d.o.outputBucketMissing +
                          " does not exist: create it (or fix spec.baseOutputDirectory / "
                          "spec.checkpointing.directory); the run starts once it exists";
    if (!conditionIs(d, ConditionType::Ready, "False", Reason::OutputBucketNotFound)) {
      d.plan.events.push_back(warningEvent("OutputBucketNotFound", message));
    }
    d.phase(Phase::Pending, message);
    d.condition(ConditionType::Ready, false, Reason::OutputBucketNotFound, message);
    d.plan.retryAfterWrite = message;
    return finish(d, false);
  }
  clearReadyGate(d);
  d.plan.createJob = CreateJob{attempt.attempt, attempt.resumedFrom, target->where, target->kind};
  d.phase(Phase::Submitted, "attempt " + std::to_string(attempt.attempt) + " submitted");
  d.plan.requeueAfter = options.resyncPeriod;
  return finish(d, false);
}

Plan suspend(Draft& d, const DecideOptions& options) {
  const auto& job = d.o.job;
  d.condition(ConditionType::Running, false, Reason::Suspended, "spec.suspend is true");
  if (job && !vertex::isTerminal(job->state)) {
    if (job->state != vertex::JobState::Cancelling) {
      d.plan.cancelJob = job->name;
      d.current().message = kSuspendedMessage;
      d.plan.events.push_back(normalEvent("Suspending", "cancelling " + job->name + " to suspend the run"));
    }
    applyJobState(d, *job);
    d.phase(Phase::Cancelling, "suspending: waiting for " + job->name + " to be cancelled");
    d.plan.requeueAfter = options.cancelPollPeriod;
    return finish(d, false);
  }
  if (job) {
    applyJobState(d, *job);
    // Resuming after this attempt starts a new one; a job that ended on its own keeps its outcome.
    if (job->state == vertex::JobState::Cancelled) d.current().message = kSuspendedMessage;
  }
  if (!job || job->state == vertex::JobState::Cancelled) {
    d.phase(Phase::Suspended, "suspended; set spec.suspend to false to continue from the latest checkpoint");
    d.condition(ConditionType::Running, false, Reason::Suspended, "spec.suspend is true");
  }
  return isFinishedPhase(d.next.phase) ? finished(d) : finish(d);
}

// After a FAILED/EXPIRED attempt: stay failed, wait out the resume backoff, or start the next attempt.
Plan afterFailure(Draft& d, const CachedJob& job, const DecideOptions& options) {
  auto failure = classifyFailure(job.state, job.error);
  auto& attempt = d.current();
  attempt.failureClass = failureClassName(failure);
  std::string why = "attempt " + std::to_string(attempt.attempt) + " failed (" + attempt.failureClass + ")";
  std::string what = why + (job.error && !job.error->message.empty() ? ": " + job.error->message : "");
  auto decision = decideResume(d.run.spec.checkpointing, failure, d.next.resumes);
  if (!decision.resume) {
    d.next.message = what + "; not resumed: " + decision.why;
    d.condition(ConditionType::Failed, true, decision.budgetSpent ? Reason::ResumeBudgetExhausted : Reason::JobFailed,
                d.next.message);
    if (decision.budgetSpent && d.o.status.phase != Phase::Failed) {
      d.plan.events.push_back(warningEvent("ResumeBudgetExhausted", d.next.message));
    }
    return finished(d);
  }
  // Vertex's endTime at full precision (status keeps whole seconds), else the end as status recorded it.
  auto failedAt = job.endTime ? *job.endTime : parseRfc3339(attempt.endTime);
  auto resumeAt = failedAt + decision.backoff;
  if (d.o.now < resumeAt) {
    auto wait = std::chrono::duration_cast<std::chrono::seconds>(resumeAt - d.o.now).count();
    d.phase(Phase::Resuming, what + "; resuming in " + std::to_string(wait) + "s from the latest checkpoint");
    d.next.completionTime.clear();
    d.condition(ConditionType::Running, false, Reason::Resuming, d.next.message);
    d.condition(ConditionType::Failed, false, Reason::Resuming);
    d.plan.requeueAfter = resumeAt - d.o.now;
    return finish(d);
  }
  if (d.refused) return tenantViolation(d, *d.refused);  // a refused spec gets no listing and no job
  if (!d.o.checkpointListed) {
    return retryCheckpointListing(d, "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) +
                                         " to resume from; trying again");
  }
  d.next.resumes++;
  d.plan.resumedAfter = attempt.failureClass;
  startNextAttempt(d, why);
  return create(d, options);
}

}  // namespace

const char* conditionTypeName(ConditionType type) {
  static constexpr std::array names = {"Valid", "Ready", "Submitted", "Running", "Succeeded", "Failed", "CheckpointsReadable"};
  return names[static_cast<size_t>(type)];
}

const char* reasonName(Reason reason) {
  static constexpr std::array names = {
      "SpecValid",    "SpecInvalid", "JobCreated",   "JobRejected",  "JobSubmitted", "JobQueued",
      "JobRunning",   "JobSucceeded", "JobFailed",   "JobCancelling", "JobCancelled", "JobNotFound",
      "NotFinished",  "NoFailure",   "Resuming",     "ResumeBudgetExhausted", "Suspended", "VertexError",
      "TenantPolicyViolation", "TenantQuotaExceeded", "OutputBucketNotFound", "CheckpointsListed",
      "CheckpointsForbidden", "CheckpointListFailed",
  };
  return names[static_cast<size_t>(reason)];
}

std::string PollTarget::jobPrefix() const { return where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/"; }

std::optional<PollTarget> pollTargetOf(const crd::TrainingRunSpec& spec, const crd::Placement& defaults) {
  auto placement = crd::placementOf(spec, defaults);
  if (placement.project.empty() || placement.location.empty()) return std::nullopt;
  return PollTarget{{placement.project, placement.location}, crd::jobKindOf(spec)};
}

bool isFinishedPhase(std::optional<Phase> phase) {
  return phase == Phase::Succeeded || phase == Phase::Failed || phase == Phase::Cancelled;
}

std::string consoleUrl(const std::string& jobName) {
  auto where = vertex::locationOf(jobName);
  return "https://console.cloud.google.com/vertex-ai/locations/" + where.location + "/training/" +
         lastSegment(jobName) + "/cpu?project=" + where.project;
}

crd::TenancyDecision tenancyOf(const Observed& o) {
  if (o.tenancy == nullptr || o.tenancy->empty() || !o.run) return {};
  return crd::decideTenancy(o.run->spec, o.defaults, o.namespaceInfo, *o.tenancy);
}

std::optional<crd::AcceleratorClaim> acceleratorClaimOf(const crd::TrainingRun& run,
                                                        const crd::TrainingRunStatus& status) {
  if (run.spec.suspend || isFinishedPhase(status.phase) || status.phase == Phase::Invalid) return std::nullopt;
  if (crd::acceleratorsOf(run.spec) == 0) return std::nullopt;
  bool holding = !status.attempts.empty() && !status.attempts.back().jobName.empty();
  return crd::claimOf(run, holding);
}

bool checkpointRequired(const Observed& o) {
  return o.run && o.metadata.deletionTimestamp.empty() && !o.run->spec.suspend && o.job &&
         vertex::isTerminal(o.job->state) && !isFinishedPhase(o.status.phase);
}

Plan decide(const Observed& o, const DecideOptions& options) {
  static const crd::TrainingRun undecoded{};
  Draft d(o, o.run ? *o.run : undecoded);

  // Deletion first: even a run that no longer decodes can be deleted (its job is cancelled, as by default).
  if (!o.metadata.deletionTimestamp.empty()) {
    return finalize(d, !o.run || o.run->spec.deletionPolicy == crd::DeletionPolicy::Cancel, options);
  }
  // The CRD schema refuses almost everything decoding could, so a failure here means the schema and
  // the operator disagree: report it on the object rather than crash-loop.
  if (!o.run) return invalid(d, o.decodeError);

  // An invalid spec gets a condition and an Event, never a job, and no retries.
  auto findings = crd::validate(d.run);
  if (crd::hasErrors(findings)) {
    std::string message;
    for (const auto& f : findings) {
      if (f.severity == crd::Severity::Error) message += (message.empty() ? "" : "; ") + crd::formatFinding(f);
    }
    return invalid(d, message);
  }
  bool settled = isFinishedPhase(o.status.phase) && o.status.observedGeneration == o.metadata.generation;
  // Tenancy on every pass: serviceAccount and checkpointing.directory may be edited after the first
  // job. Before any job, a refusal makes the run Invalid. After it, the running job goes on (a rule
  // is not retroactive) but no new job starts and observe lists nothing for it.
  if (!settled) d.refused = tenancyOf(o).violation;
  bool noJobYet = o.status.attempts.empty() || o.status.attempts.back().jobName.empty();
  if (d.refused && noJobYet) return tenantViolation(d, *d.refused);
  if (o.status.observedGeneration != o.metadata.generation) {
    for (const auto& f : findings) d.plan.events.push_back(warningEvent("SpecWarning", crd::formatFinding(f)));
  }
  if (d.refused) {
    std::string message = d.refused->message + "; the running job goes on, but no new job starts and no "
                                               "checkpoint is listed until the spec is back inside the rule";
    if (!conditionIs(d, ConditionType::Valid, "False", Reason::TenantPolicyViolation)) {
      d.plan.events.push_back(warningEvent("TenantPolicyViolation", message));
    }
    d.condition(ConditionType::Valid, false, Reason::TenantPolicyViolation, message);
  } else {
    d.condition(ConditionType::Valid, true, Reason::SpecValid);
  }
  checkpointsReadable(d);

  // A Vertex error that keeps vto from seeing this run's job is reported, and does not stall other runs.
  if (o.vertexUnavailable) {
    d.condition(ConditionType::Ready, false, Reason::VertexError, o.vertexUnavailable->message);
  } else if (const auto* ready = controller::findStatusCondition(d.next.conditions, "Ready");
             ready != nullptr && ready->reason == reasonName(Reason::VertexError)) {
    controller::removeStatusCondition(d.next.conditions, "Ready");
  }

  if (settled) return finished(d);

  // The finalizer goes on before any job exists, so a deletion can never orphan a job by accident.
  d.plan.addFinalizer = !o.hasFinalizer;
  if (d.next.attempts.empty()) {
    d.next.attempts.push_back(crd::Attempt{1, "", "", "", "", "", "", ""});
    d.next.attemptCount = std::max(d.next.attemptCount, 1);
  }
  if (d.run.spec.suspend) return suspend(d, options);

  bool recorded = !d.current().jobName.empty();
  if (!o.job && recorded && o.jobNotFound) {
    // Never replace a recorded job silently: that is how duplicates and lost work happen.
    d.phase(Phase::Failed, "the Vertex job " + d.current().jobName + " no longer exists (deleted outside vto); "
                           "delete and re-create the TrainingRun to train again");
    d.next.completionTime = d.now();
    d.condition(ConditionType::Failed, true, Reason::JobNotFound, d.next.message);
    return finished(d);
  }
  if (!o.job && recorded) {
    // Vertex cannot be read right now (the Ready condition says why), or the first poll is about to
    // bring the job: keep what we know, look again.
    d.plan.requeueAfter = o.awaitingFirstPoll ? options.firstPollWait : options.resyncPeriod;
    return finish(d);
  }
  if (!o.job) return create(d, options);
  if (isSuspensionCancel(*o.job, d.current())) {
    // Unsuspended: the same path as a resume after a failure, without spending the resume budget.
    if (d.refused) return tenantViolation(d, *d.refused);
    if (!o.checkpointListed) {
      return retryCheckpointListing(d, "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) +
                                           " to resume from");
    }
    d.current().state = std::string(vertex::jobStateName(o.job->state));
    d.current().endTime = timeOrEmpty(o.job->endTime);
    startNextAttempt(d, "the run was unsuspended");
    return create(d, options);
  }

  applyJobState(d, *o.job);
  // The newest checkpoint, while the job runs and once more when it ends (its final checkpoint).
  if (o.checkpoint) d.next.lastCheckpoint = crd::CheckpointRef{o.checkpoint->uri, o.checkpoint->updateTime};
  if (o.job->state == vertex::JobState::Failed || o.job->state == vertex::JobState::Expired) {
    return afterFailure(d, *o.job, options);
  }
  if (isFinishedPhase(d.next.phase)) return finished(d);
  if (o.job->state == vertex::JobState::Cancelling) {
    d.plan.requeueAfter = options.cancelPollPeriod;
  } else {
    d.plan.requeueAfter = options.resyncPeriod;
    if (d.next.phase == Phase::Running && o.nextCheckpointAt) {
      d.plan.requeueAfter = std::min(options.resyncPeriod, std::max<Clock::duration>(*o.nextCheckpointAt - o.now, std::chrono::seconds(1)));
    }
  }
  return finish(d);
}

Plan recordCreatedJob(const Observed& o, Plan plan, const CachedJob& job, bool adopted) {
  static const crd::TrainingRun undecoded{};
  Draft d(o, o.run ? *o.run : undecoded);
  d.next = plan.status ? *plan.status : o.status;  // no planned status: it equals the stored one
  d.plan = std::move(plan);
  d.plan.status.reset();
  auto& attempt = d.current();
  if (attempt.startTime.empty()) attempt.startTime = d.now();
  if (!adopted) d.plan.events.push_back(normalEvent("JobCreated", "created " + std::string(vertex::kindName(vertex::jobKindOf(job.name))) +
                                                        " " + job.name + " for attempt " + std::to_string(attempt.attempt)));
  applyJobState(d, job);
  // The JobCreated Event already tells the user; the job's first state (queued) is in status. One
  // Event per run at submission, not two.
  return finish(d, false);
}

}  // namespace vto::reconcilers
