#include "reconcilers/trainingrun/decide.h"

#include <algorithm>
#include <charconv>

#include "controller/conditions.h"
#include "crd/placement.h"
#include "crd/validation.h"
#include "reconcilers/jobs/failure_class.h"
#include "reconcilers/trainingrun/capacity.h"
#include "reconcilers/trainingrun/draft.h"
#include "reconcilers/trainingrun/resume_policy.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

using controller::normalEvent;
using controller::warningEvent;
using crd::Phase;
using namespace trainingrun;

namespace {

// Written into an attempt's message when vto cancels its job for `suspend: true`, so that a later pass
// can tell a suspension from a cancellation made outside vto.
constexpr const char* kSuspendedMessage = "cancelled by vto: the run was suspended";

bool isSuspensionCancel(const CachedJob& job, const crd::Attempt& attempt) {
  return job.state == vertex::JobState::Cancelled && attempt.message == kSuspendedMessage;
}

// The same when vto cancels a job because Kueue evicted the run's Workload: the run then waits for
// Kueue again, and resumes from its newest checkpoint once admitted.
constexpr const char* kEvictedMessage = "cancelled by vto: Kueue evicted the run's Workload";

// Kueue's Evicted condition on the Workload of a run that is Kueue's, while it stands.
const WorkloadCondition* evictionOf(const Observed& o) {
  if (!queueNameOf(o.metadata) || !o.kueue.workload) return nullptr;
  const auto* evicted = o.kueue.workload->condition("Evicted");
  return evicted != nullptr && evicted->status == "True" ? evicted : nullptr;
}

// The attempt's message says it; or the pass that cancelled the job never wrote status (the operator
// died after Vertex took the cancel) and the eviction still stands: it stays True until Kueue admits
// the Workload again, which needs the release that only follows this job's end.
bool isEvictionCancel(const Observed& o, const CachedJob& job, const crd::Attempt& attempt) {
  return job.state == vertex::JobState::Cancelled && (attempt.message == kEvictedMessage || evictionOf(o) != nullptr);
}

// Nothing retrying can fix until the spec is edited: no job, no retries.
Plan invalid(Draft& d, const std::string& message, Reason reason = Reason::SpecInvalid, const char* event = "InvalidSpec") {
  bool news = d.o.status.phase != Phase::Invalid || d.o.status.message != message;
  d.phase(Phase::Invalid, message, Told::ByOwnEvent);
  d.condition(ConditionType::Valid, false, reason, message);
  if (news) d.plan.events.push_back(warningEvent(event, message));
  return finish(d);
}

// A run outside its tenant's rule: like an invalid spec (no job, no retries, an edit brings it back),
// refused before any Vertex or GCS call.
Plan tenantViolation(Draft& d, const governance::TenancyViolation& violation) {
  // One Event: this one says more than decide's "the running job goes on" for the same refusal.
  std::erase_if(d.plan.events, [](const controller::Event& e) { return e.reason == "TenantPolicyViolation"; });
  return invalid(d, violation.message, Reason::TenantPolicyViolation, "TenantPolicyViolation");
}

// CheckpointsReadable from this pass's listing, if there was one, else as it was; a Warning when it
// turns False.
void checkpointsReadable(Draft& d) {
  const auto& checkpoints = d.o.checkpoints;
  if (checkpoints.error) {
    Reason reason = checkpoints.forbidden ? Reason::CheckpointsForbidden : Reason::CheckpointListFailed;
    std::string message = "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) + ": " +
                          *checkpoints.error +
                          "; a resume will start from scratch until the operator's service account may list "
                          "it (grant roles/storage.objectViewer on the bucket)";
    if (!conditionIs(d, ConditionType::CheckpointsReadable, "False", reason)) {
      d.plan.events.push_back(warningEvent("CheckpointsUnreadable", message));
    }
    d.condition(ConditionType::CheckpointsReadable, false, reason, message);
  } else if (checkpoints.listed) {
    d.condition(ConditionType::CheckpointsReadable, true, Reason::CheckpointsListed);
  } else {
    d.keepCondition(ConditionType::CheckpointsReadable);
  }
}

// A resume needs the listing that failed: tell the user (CheckpointsReadable=False) and retry the
// pass with backoff, with nothing else done. Never guessed: a resume from the wrong checkpoint loses work.
Plan retryCheckpointListing(const Draft& d, std::string why) {
  Draft told(d.o, d.run);
  told.keepLastKnown();
  told.next.conditions = d.next.conditions;
  told.readyGate = d.readyGate;
  checkpointsReadable(told);
  told.plan.failure = PassFailure{false, std::move(why)};
  return finish(told);
}

// Deletion: with deletionPolicy Cancel, cancel the job and wait for it to end; then let the object go.
Plan finalize(Draft& d, bool cancel, const DecideOptions& options) {
  if (!d.o.hasFinalizer) return std::move(d.plan);
  const auto& job = d.o.vertex.job;
  if (cancel && job && !vertex::isTerminal(job->state)) {
    d.keepLastKnown();
    if (job->state != vertex::JobState::Cancelling) {
      d.plan.cancelJob = job->name;
      d.plan.events.push_back(normalEvent("CancellingJob", "the TrainingRun is being deleted: cancelling " + job->name));
    }
    d.phase(Phase::Cancelling, "deleting: waiting for " + job->name + " to be cancelled", Told::ByOwnEvent);
    d.plan.requeueAfter = options.cancelPollPeriod;
    return finish(d);
  }
  d.plan.removeFinalizer = true;
  // Its Workload goes with it, now: its quota returns at once, with or without a garbage collector.
  if (d.o.kueue.workload) d.plan.deleteWorkload = d.o.kueue.workload->name;
  return std::move(d.plan);
}

// Starts the next attempt from the newest checkpoint (or from scratch when there is none).
void startNextAttempt(Draft& d, const std::string& why) {
  auto& history = d.next.history;
  int next = d.current().attempt + 1;
  const auto& checkpoint = d.o.checkpoints.latest;
  crd::Attempt attempt;
  attempt.attempt = next;
  attempt.placement = d.current().placement;  // a preemption resumes where it ran
  attempt.resumedFrom = checkpoint ? checkpoint->uri : "";
  history.attempts.push_back(attempt);
  history.attemptCount++;
  if (history.attempts.size() > crd::kMaxAttemptsInStatus) history.attempts.erase(history.attempts.begin());
  if (checkpoint) history.lastCheckpoint = crd::CheckpointRef{checkpoint->uri, checkpoint->updateTime};
  d.plan.events.push_back(normalEvent(
      "Resumed", why + ": attempt " + std::to_string(next) +
                     (checkpoint ? " resumes from " + checkpoint->uri
                                 : " starts from scratch (no checkpoint yet under " +
                                       crd::checkpointDirectoryOf(d.run.spec) + ")")));
}

// The tenant's accelerator cap, first created first served: the message when the run must wait.
// `at` is the run on the placement about to be created, judged by the rule that allows that
// placement (a fallback on other accelerators may fall under another rule's cap than placement 0).
// When admitted under a capped rule, the plan carries the room for act to reserve.
std::optional<std::string> overAcceleratorCap(Draft& d, const crd::TrainingRun& at) {
  if (d.o.tenancy.rules == nullptr || d.o.tenancy.rules->empty()) return std::nullopt;
  auto candidate = governance::claimOf(at, false);
  if (candidate.accelerators == 0) return std::nullopt;
  auto governing = governance::decideTenancy(at.spec, d.o.defaults, d.o.tenancy.ns, *d.o.tenancy.rules).governingRule;
  if (!governing) return std::nullopt;  // refused: tenancyOf already made the run Invalid
  const auto& rule = (*d.o.tenancy.rules)[*governing];
  if (!rule.maxAccelerators) return std::nullopt;
  if (auto unlisted = d.o.tenancy.unlistedCaps.find(*governing); unlisted != d.o.tenancy.unlistedCaps.end()) {
    return "waiting for the operator's first list of its unfinished jobs in " + unlisted->second +
           " since it started: a job whose run is gone still counts against " + rule.describe(*governing);
  }
  std::vector<governance::AcceleratorClaim> claims;
  for (const auto& [index, claim] : d.o.tenancy.otherClaims) {
    if (index == *governing) claims.push_back(claim);
  }
  auto admitted = governance::admit(candidate, claims, *rule.maxAccelerators, rule.describe(*governing));
  if (admitted.admitted) {
    d.plan.acceleratorReservation = AcceleratorReservation{
        *governing, candidate, governance::rulesAllowing(at.spec, d.o.defaults, *d.o.tenancy.rules), d.current().attempt};
    return std::nullopt;
  }
  return admitted.message;
}

// A run of the same namespace and name left this job unfinished (the run was re-applied into a
// rebuilt cluster, restored without its status, or deleted with deletionPolicy Orphan and applied
// again): this run follows it as its first attempt instead of paying for a second.
Plan adoptNamesake(Draft& d, const CachedJob& job) {
  auto& attempt = d.current();
  if (!attempt.startTime) attempt.startTime = d.now();
  auto uid = job.labels.find(crd::kRunUidLabel);
  auto attemptLabel = job.labels.find(crd::kAttemptLabel);
  d.plan.events.push_back(normalEvent(
      "JobAdopted", "adopted " + std::string(vertex::kindName(vertex::jobKindOf(job.name))) + " " + job.name +
                        ", still " + std::string(vertex::jobStateName(job.state)) + ", which a run of the same name (uid " +
                        (uid == job.labels.end() ? std::string("unknown") : uid->second) + ", attempt " +
                        (attemptLabel == job.labels.end() ? std::string("?") : attemptLabel->second) +
                        ") started: followed as attempt 1, no second job"));
  applyJobState(d, job);
  d.told = Told::ByOwnEvent;
  d.plan.requeueAfter = d.options.resyncPeriod;
  return finish(d);
}

// A run restored without its status (a backup keeps metadata, not status or uid) takes its history
// back from the jobs of the runs its metadata names: each its attempt again, numbered as it was, so a
// finished run stays finished with its job and cost, and an unfinished job is followed, not doubled.
Plan followJob(Draft& d, const CachedJob& job, const DecideOptions& options);

Plan restoreHistory(Draft& d, const DecideOptions& options) {
  const auto& jobs = d.o.vertex.restored;
  auto& attempts = d.next.history.attempts;
  attempts.clear();
  for (const auto& job : jobs) {
    crd::Attempt attempt;
    int labelled = 0;
    auto label = labelOf(job.labels, crd::kAttemptLabel);
    auto [end, error] = std::from_chars(label.data(), label.data() + label.size(), labelled);
    attempt.attempt = error == std::errc() && end == label.data() + label.size() && labelled > 0 ? labelled : 1;
    if (!attempts.empty() && attempt.attempt <= attempts.back().attempt) attempt.attempt = attempts.back().attempt + 1;
    attempts.push_back(attempt);
    applyJobState(d, job);
  }
  d.next.history.attemptCount = attempts.back().attempt;
  const auto& last = jobs.back();
  d.plan.events.push_back(normalEvent(
      "JobAdopted", "restored without status: took back " + std::to_string(jobs.size()) + " job(s) that earlier runs of "
                        "this name (uid " + labelOf(last.labels, crd::kRunUidLabel) + ") made; attempt " +
                        std::to_string(attempts.back().attempt) + " is " + last.name + ", " +
                        std::string(vertex::jobStateName(last.state)) + " (no new job)"));
  return followJob(d, last, options);
}

// spec.adoptJob names a job vto may not take (another run's, another cluster's, outside the run's
// place, gone): the run is Invalid and the job untouched, never cancelled or counted.
Plan adoptionRefused(Draft& d, const std::string& why) { return invalid(d, why, Reason::AdoptionRefused, "AdoptionRefused"); }

// spec.adoptJob: the job started outside vto is the run's first attempt, followed like its own.
Plan adoptNamedJob(Draft& d, const CachedJob& job, const DecideOptions& options) {
  auto& attempt = d.current();
  if (!attempt.startTime) attempt.startTime = d.now();
  d.plan.events.push_back(normalEvent("JobAdopted", "adopted " + std::string(vertex::kindName(vertex::jobKindOf(job.name))) +
                                                        " " + job.name + " (spec.adoptJob), " +
                                                        std::string(vertex::jobStateName(job.state)) +
                                                        ": followed as attempt 1, no new job"));
  return followJob(d, job, options);
}

// Vertex refused the job itself (a bad argument, a missing permission): retrying cannot help.
Plan createRejected(Draft& d, const VertexFailure& rejected) {
  std::string advice =
      rejected.httpStatus == 403 ? " (grant the operator's service account roles/aiplatform.user on the project)" : "";
  d.phase(Phase::Failed, "Vertex AI refused the job: " + rejected.message + advice);
  d.next.completionTime = d.now();
  d.condition(ConditionType::Submitted, false, Reason::JobRejected, d.next.message);
  d.condition(ConditionType::Failed, true, Reason::JobRejected, d.next.message);
  d.plan.failure = PassFailure{true, d.next.message};
  return finish(d);
}

// Plans the creation of the current attempt's job, once its gates are open; act records its name in
// status.
Plan create(Draft& d, const DecideOptions& options) {
  if (d.o.vertex.createRejected) return createRejected(d, *d.o.vertex.createRejected);
  if (d.refused) return tenantViolation(d, *d.refused);  // create is the one door to a new job
  // With spec.capacity, the attempt goes to the first placement not blocked, or waits for one.
  std::optional<size_t> refusedNow;
  if (d.run.spec.capacity) {
    if (const auto& quota = d.o.vertex.createQuotaExceeded) {
      refusedNow = placementOf(d);
      blockPlacement(d, "QuotaExceeded", *quota);
      d.current().placement.reset();
    }
    if (auto spent = failoverBudget(d)) return *spent;
    if (auto waiting = placementGate(d)) return *waiting;
  }
  auto& attempt = d.current();
  auto at = runAt(d.run, placementOf(d));
  auto where = crd::locationOf(at.spec, d.o.defaults);
  if (where.project.empty() || where.location.empty()) {
    d.plan.failure = PassFailure{true, "no project/location for " + d.o.metadata.name};
    return invalid(d, "spec.project and spec.location: set them, or start the operator with --default-project "
                      "and --default-location");
  }
  if (auto waiting = overAcceleratorCap(d, at)) {
    if (!conditionIs(d, ConditionType::Ready, "False", Reason::TenantQuotaExceeded)) {
      d.plan.events.push_back(normalEvent("TenantQuotaExceeded", *waiting));
    }
    d.phase(Phase::Queued, *waiting, Told::ByOwnEvent);
    d.condition(ConditionType::Ready, false, Reason::TenantQuotaExceeded, *waiting);
    d.plan.requeueAfter = options.quotaRecheckPeriod;
    return finish(d);
  }
  if (auto held = budgetGate(d, at, where)) return *held;
  // The output bucket must exist before attempt 1 (it may be created later: retried with backoff).
  if (d.o.outputBucketMissing) {
    std::string message = "the output bucket gs://" + *d.o.outputBucketMissing +
                          " does not exist: create it (or fix spec.baseOutputDirectory / "
                          "spec.checkpointing.directory); the run starts once it exists";
    if (!conditionIs(d, ConditionType::Ready, "False", Reason::OutputBucketNotFound)) {
      d.plan.events.push_back(warningEvent("OutputBucketNotFound", message));
    }
    d.phase(Phase::Pending, message, Told::ByOwnEvent);
    d.condition(ConditionType::Ready, false, Reason::OutputBucketNotFound, message);
    d.plan.failure = PassFailure{false, message};
    return finish(d);
  }
  // Kueue last: vto's own walls (the cap, the budget, the bucket) are decided at once, while an
  // admission may take hours; once Kueue admits, the job follows in the same pass.
  if (auto waiting = kueueGate(d, at)) return *waiting;
  if (d.run.spec.capacity) announceMove(d, placementOf(d), refusedNow);
  d.plan.createJob = CreateJob{attempt.attempt, attempt.resumedFrom, where, crd::jobKindOf(at.spec), placementOf(d)};
  d.phase(Phase::Submitted, "attempt " + std::to_string(attempt.attempt) + " submitted");
  d.plan.requeueAfter = options.resyncPeriod;
  return finish(d);
}

Plan suspend(Draft& d, const DecideOptions& options) {
  const auto& job = d.o.vertex.job;
  d.condition(ConditionType::Running, false, Reason::Suspended, "spec.suspend is true");
  if (job && !vertex::isTerminal(job->state)) {
    if (job->state != vertex::JobState::Cancelling) {
      d.plan.cancelJob = job->name;
      d.current().message = kSuspendedMessage;
      d.plan.events.push_back(normalEvent("Suspending", "cancelling " + job->name + " to suspend the run"));
    }
    applyJobState(d, *job);
    d.phase(Phase::Cancelling, "suspending: waiting for " + job->name + " to be cancelled", Told::ByOwnEvent);
    d.plan.requeueAfter = options.cancelPollPeriod;
    return finish(d);
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
  // No job runs: what Kueue admitted (or queued) goes back now; unsuspended, the run queues anew.
  if (d.o.kueue.workload) d.plan.deleteWorkload = d.o.kueue.workload->name;
  return crd::isFinished(d.next.phase) ? finished(d) : finish(d);
}

// The current attempt's placement had no capacity: it is blocked, and the next attempt goes to another
// at once (no backoff, no resume spent), from the newest checkpoint, or waits for one.
Plan elsewhere(Draft& d, const std::string& reason, const std::string& message, const std::string& why,
               const DecideOptions& options) {
  if (d.refused) return tenantViolation(d, *d.refused);  // a refused spec gets no listing and no job
  if (!d.o.checkpoints.listed) {
    return retryCheckpointListing(d, "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) +
                                         " to resume from; trying again");
  }
  blockPlacement(d, reason, message);
  startAttemptElsewhere(d, why);
  return create(d, options);
}

// After a FAILED/EXPIRED attempt: stay failed, wait out the resume backoff, or start the next attempt.
Plan afterFailure(Draft& d, const CachedJob& job, const DecideOptions& options) {
  auto failure = failureClassOf(d, job);
  auto& attempt = d.current();
  attempt.failureClass = failure;
  std::string why = "attempt " + std::to_string(attempt.attempt) + " failed (" +
                    crd::enumName(failure, crd::failureClassNames()) + ")";
  std::string what = why + (job.error && !job.error->message.empty() ? ": " + job.error->message : "");
  // No capacity where it ran: the next attempt goes elsewhere at once, without spending a resume.
  if (d.run.spec.capacity && lackedCapacity(d, job)) return elsewhere(d, "Stockout", job.error->message, what, options);
  auto decision = decideResume(d.run.spec.checkpointing, failure, d.next.history.resumes);
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
  auto failedAt = job.endTime ? *job.endTime : *attempt.endTime;
  auto resumeAt = failedAt + decision.backoff;
  if (d.o.now < resumeAt) {
    auto wait = std::chrono::duration_cast<std::chrono::seconds>(resumeAt - d.o.now).count();
    d.phase(Phase::Resuming, what + "; resuming in " + std::to_string(wait) + "s from the latest checkpoint");
    d.next.completionTime.reset();
    d.condition(ConditionType::Running, false, Reason::Resuming, d.next.message);
    d.condition(ConditionType::Failed, false, Reason::Resuming);
    d.plan.requeueAfter = resumeAt - d.o.now;
    return finish(d);
  }
  if (d.refused) return tenantViolation(d, *d.refused);  // a refused spec gets no listing and no job
  if (!d.o.checkpoints.listed) {
    return retryCheckpointListing(d, "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) +
                                         " to resume from; trying again");
  }
  d.next.history.resumes++;
  d.plan.resumedAfter = failure;
  startNextAttempt(d, why);
  return create(d, options);
}

// Told once per eviction, with the mark that makes its cancelled job the eviction's: by the pass that
// cancels, or by the first that finds the job cancelling or cancelled unmarked (the pass that asked
// died before its status write, and its Event with it).
void tellEviction(Draft& d, const CachedJob& job, const WorkloadCondition& eviction) {
  if (d.current().message == kEvictedMessage) return;
  d.current().message = kEvictedMessage;
  d.plan.evictedBy = eviction.reason;
  d.plan.events.push_back(warningEvent(
      "Preempted", "Kueue evicted Workload " + d.o.kueue.workload->name + " (" + eviction.reason + "): " +
                       eviction.message + "; cancelling " + job.name +
                       ", the run resumes from its newest checkpoint once Kueue admits it again"));
}

// Kueue evicted the run's Workload (a preemption, a stopped queue, a deactivation) while its job
// runs: the job is cancelled as for suspend, its checkpoints kept; the admission goes back once Vertex
// says the job ended (afterEviction).
Plan evict(Draft& d, const CachedJob& job, const WorkloadCondition& eviction, const DecideOptions& options) {
  if (job.state != vertex::JobState::Cancelling) d.plan.cancelJob = job.name;
  tellEviction(d, job, eviction);
  applyJobState(d, job);
  d.condition(ConditionType::Running, false, Reason::WaitingForKueue, "evicted by Kueue (" + eviction.reason + ")");
  d.phase(Phase::Cancelling, "evicted by Kueue (" + eviction.reason + "): waiting for " + job.name + " to be cancelled",
          Told::ByOwnEvent);
  d.plan.requeueAfter = options.cancelPollPeriod;
  return finish(d);
}

// Unsuspended (or a cost limit raised): the same path as a resume after a failure, without spending
// the resume budget.
Plan unsuspend(Draft& d, const CachedJob& job, const DecideOptions& options,
               const std::string& why = "the run was unsuspended") {
  if (d.refused) return tenantViolation(d, *d.refused);
  if (!d.o.checkpoints.listed) {
    return retryCheckpointListing(d, "cannot list checkpoints under " + crd::checkpointDirectoryOf(d.run.spec) +
                                         " to resume from");
  }
  // The suspension's cancelled job is as the suspension left it: its view stands; the next attempt
  // replaces it once created.
  d.next.job = d.o.status.job;
  for (auto type : {ConditionType::Submitted, ConditionType::Running, ConditionType::Succeeded, ConditionType::Failed}) {
    d.keepCondition(type);
  }
  d.current().state = std::string(vertex::jobStateName(job.state));
  d.current().endTime = wholeSeconds(job.endTime);
  startNextAttempt(d, why);
  return create(d, options);
}

// The job vto cancelled for an eviction has ended: the run waits for Kueue (its admission released,
// as Kueue's integrations release it), then resumes as a new attempt from its newest checkpoint.
Plan afterEviction(Draft& d, const CachedJob& job, const DecideOptions& options) {
  const auto& workload = d.o.kueue.workload;
  if (workload && workload->admitted()) return unsuspend(d, job, options, "Kueue admitted the run again");
  // The cancelled job's view stands until the next attempt replaces it.
  d.next.job = d.o.status.job;
  for (auto type : {ConditionType::Submitted, ConditionType::Running, ConditionType::Succeeded, ConditionType::Failed}) {
    d.keepCondition(type);
  }
  d.current().state = std::string(vertex::jobStateName(job.state));
  d.current().endTime = wholeSeconds(job.endTime);
  // Marked before the release (act's order), as Evicted clears at the re-admission that may follow it.
  if (const auto* eviction = evictionOf(d.o)) tellEviction(d, job, *eviction);
  if (auto waiting = kueueGate(d, runAt(d.run, placementOf(d)))) return *waiting;
  return unsuspend(d, job, options, "the run is no longer Kueue's");  // its label was removed meanwhile
}

// The current attempt's job as Vertex reports it: phase, conditions, a resume, or the end.
Plan followJob(Draft& d, const CachedJob& job, const DecideOptions& options) {
  applyJobState(d, job);
  if (d.run.spec.capacity && job.state == vertex::JobState::Cancelled && d.current().message == kQueueTimeoutMessage) {
    return elsewhere(d, "QueueTimeout", d.current().message,
                     "attempt " + std::to_string(d.current().attempt) + " waited past spec.capacity.maxQueueTime", options);
  }
  switch (costLimitStep(d, job)) {
    case CostLimitStep::Cancel: return cancelAtCostLimit(d, job);
    case CostLimitStep::Failed: return failedAtCostLimit(d);
    case CostLimitStep::Resume: return unsuspend(d, job, options, "spec.maxCostUsd was raised above the estimate");
    case CostLimitStep::None: break;
  }
  if (job.state == vertex::JobState::Running) capacityRecovered(d);
  // The newest checkpoint, while the job runs and once more when it ends (its final checkpoint).
  if (const auto& latest = d.o.checkpoints.latest) {
    d.next.history.lastCheckpoint = crd::CheckpointRef{latest->uri, latest->updateTime};
  }
  if (job.state == vertex::JobState::Failed || job.state == vertex::JobState::Expired) {
    return afterFailure(d, job, options);
  }
  if (crd::isFinished(d.next.phase)) return finished(d);
  if (job.state == vertex::JobState::Cancelling) {
    d.plan.requeueAfter = options.cancelPollPeriod;
  } else {
    d.plan.requeueAfter = options.resyncPeriod;
    if (d.next.phase == Phase::Running && d.o.checkpoints.nextLookAt) {
      d.plan.requeueAfter = std::min(options.resyncPeriod, std::max<Clock::duration>(*d.o.checkpoints.nextLookAt - d.o.now,
                                                                                      std::chrono::seconds(1)));
    }
  }
  watchQueueTime(d, job);
  return finish(d);
}

// Valid, with the warnings of a new generation: True, or False while the spec is outside its rule
// and a job already runs (it goes on; no new one starts).
void validity(Draft& d, const std::vector<crd::Finding>& findings) {
  if (d.o.status.observedGeneration != d.o.metadata.generation) {
    for (const auto& f : findings) d.plan.events.push_back(warningEvent("SpecWarning", crd::formatFinding(f)));
  }
  if (!d.refused) {
    d.condition(ConditionType::Valid, true, Reason::SpecValid);
    return;
  }
  std::string message = d.refused->message + "; the running job goes on, but no new job starts and no "
                                             "checkpoint is listed until the spec is back inside the rule";
  if (!conditionIs(d, ConditionType::Valid, "False", Reason::TenantPolicyViolation)) {
    d.plan.events.push_back(warningEvent("TenantPolicyViolation", message));
  }
  d.condition(ConditionType::Valid, false, Reason::TenantPolicyViolation, message);
}

// Ready=False while a Vertex error keeps vto from seeing this run's job (other runs are not affected).
void vertexReadiness(Draft& d) {
  const char* ready = conditionTypeName(ConditionType::Ready);
  if (d.o.vertex.unavailable) {
    d.condition(ConditionType::Ready, false, Reason::VertexError, d.o.vertex.unavailable->message);
  } else if (const auto* kept = controller::findStatusCondition(d.next.conditions, ready);
             kept != nullptr && kept->reason == reasonName(Reason::VertexError)) {
    controller::removeStatusCondition(d.next.conditions, ready);
  }
}

// The errors of crd::validate (the code `vto lint` runs), joined; nullopt when there are none.
std::optional<std::string> validationErrors(const std::vector<crd::Finding>& findings) {
  if (!crd::hasErrors(findings)) return std::nullopt;
  std::string message;
  for (const auto& f : findings) {
    if (f.severity == crd::Severity::Error) message += (message.empty() ? "" : "; ") + crd::formatFinding(f);
  }
  return message;
}

bool jobRecorded(const crd::TrainingRunStatus& status) {
  return !status.history.attempts.empty() && !status.history.attempts.back().jobName.empty();
}


}  // namespace

governance::TenancyDecision tenancyOf(const Observed& o) {
  if (o.tenancy.rules == nullptr || o.tenancy.rules->empty() || !o.run) return {};
  auto decision = governance::decideTenancy(o.run->spec, o.defaults, o.tenancy.ns, *o.tenancy.rules);
  // Every placement a run may move to is held to the rules before any job: a fallback outside them
  // refuses the run, named as the fallback's field.
  for (size_t i = 1; !decision.violation && i < crd::placementCount(o.run->spec); ++i) {
    crd::TrainingRunSpec at;
    try {
      at = crd::specAt(o.run->spec, i);
    } catch (const crd::DecodeError&) {
      continue;  // validation reports it
    }
    auto other = governance::decideTenancy(at, o.defaults, o.tenancy.ns, *o.tenancy.rules);
    if (!other.violation) continue;
    auto& violation = *other.violation;
    if (violation.field.rfind("spec.", 0) == 0) violation.field = crd::placementPath(i) + violation.field.substr(4);
    violation.message = crd::placementPath(i) + ": " + violation.message;
    return other;
  }
  return decision;
}

bool checkpointRequired(const Observed& o) {
  // A job cancelled for an eviction is resumed only once Kueue admits the run again: not listed before.
  bool awaitingKueue = !o.status.history.attempts.empty() && o.vertex.job &&
                       isEvictionCancel(o, *o.vertex.job, o.status.history.attempts.back()) &&
                       !(o.kueue.workload && o.kueue.workload->admitted());
  return o.run && o.metadata.deletionTimestamp.empty() && !o.run->spec.suspend && o.vertex.job &&
         vertex::isTerminal(o.vertex.job->state) && !awaitingKueue &&
         (!crd::isFinished(o.status.phase) || trainingrun::resumableAtCostLimit(o));
}

// Jobs that imitate this run's are ignored everywhere else; the user is told once which they are.
void warnAboutImpostors(Draft& d) {
  for (const auto& name : d.o.vertex.impostors) {
    d.plan.events.push_back(warningEvent(
        "ForeignJobIgnored", "the Vertex job " + name.substr(0, 200) +
                                 " carries this run's labels but was not made by this operator (no valid vto-owner "
                                 "tag for this cluster): it is never followed, adopted, counted or cancelled; find "
                                 "out who created it"));
    d.plan.impostorsWarned.push_back(name);
  }
}

Plan decide(const Observed& o, const DecideOptions& options) {
  static const crd::TrainingRun undecoded{};
  Draft d(o, o.run ? *o.run : undecoded);
  d.options = options;
  warnAboutImpostors(d);

  // Deletion first: even a run that no longer decodes can be deleted (its job is cancelled, as by default).
  if (!o.metadata.deletionTimestamp.empty()) {
    return finalize(d, !o.run || o.run->spec.deletionPolicy == crd::DeletionPolicy::Cancel, options);
  }
  // The CRD schema refuses almost everything decoding could, so a failure here means the schema and
  // the operator disagree: report it on the object rather than crash-loop. An invalid spec gets a
  // condition and an Event, never a job, and no retries.
  auto findings = o.run ? crd::validate(d.run) : std::vector<crd::Finding>{};
  auto invalidBecause = o.run ? validationErrors(findings) : std::optional(o.decodeError);
  if (invalidBecause) {
    d.keepLastKnown();
    return invalid(d, *invalidBecause);
  }
  bool recorded = jobRecorded(o.status);
  // Nothing new can be seen of the job: the run has ended, or Vertex cannot be read (the Ready
  // condition says why), or the first poll is about to bring the job.
  bool jobUnseen = recorded && !o.vertex.job && !o.vertex.notFound && !o.vertex.notOwned;
  if (ended(o) || jobUnseen) d.keepLastKnown();
  // Tenancy on every pass: serviceAccount and checkpointing.directory may be edited after the first
  // job. Before any job, a refusal makes the run Invalid. After it, the running job goes on (a rule
  // is not retroactive) but no new job starts and observe lists nothing for it.
  if (!ended(o)) d.refused = tenancyOf(o).violation;
  if (d.refused && !recorded) return tenantViolation(d, *d.refused);
  validity(d, findings);
  checkpointsReadable(d);
  vertexReadiness(d);
  // What recognises the run's jobs after a restore without status goes into its metadata, with the
  // finalizer in one patch (and once into runs the release before made).
  d.plan.runUids = crd::runUidsWithOwn(o.metadata);
  if (ended(o)) return finished(d);

  // The finalizer goes on before any job exists, so a deletion can never orphan a job by accident.
  d.plan.addFinalizer = !o.hasFinalizer;
  if (d.next.history.attempts.empty()) {
    crd::Attempt first;
    first.attempt = 1;
    d.next.history.attempts.push_back(first);
    d.next.history.attemptCount = std::max(d.next.history.attemptCount, 1);
  }
  // Before suspension: a restored run's unfinished job is its own again, and then suspended.
  if (!recorded && !o.vertex.restored.empty()) return restoreHistory(d, options);
  if (d.run.spec.suspend) return suspend(d, options);
  if (recorded && o.vertex.notFound) {
    // Never replace a recorded job silently: that is how duplicates and lost work happen.
    d.phase(Phase::Failed, "the Vertex job " + d.current().jobName + " no longer exists (deleted outside vto); "
                           "delete and re-create the TrainingRun to train again");
    d.next.completionTime = d.now();
    d.next.job = o.status.job;  // the last view of the job, which the message names
    d.condition(ConditionType::Failed, true, Reason::JobNotFound, d.next.message);
    return finished(d);
  }
  if (recorded && o.vertex.notOwned) {
    d.phase(Phase::Failed, "status names the Vertex job " + d.current().jobName + ", which vto did not create for this "
                           "run (outside the run's project and locations, or its vto-run-uid label is another run's): "
                           "vto neither reads, follows nor cancels it; delete "
                           "and re-create the TrainingRun, and keep trainingruns/status writable by the operator only");
    d.next.completionTime = d.now();
    d.condition(ConditionType::Failed, true, Reason::JobNotOwned, d.next.message);
    return finished(d);
  }
  if (jobUnseen) {
    d.plan.requeueAfter = o.vertex.awaitingFirstPoll ? options.firstPollWait : options.resyncPeriod;
    return finish(d);
  }
  if (!o.vertex.job && !recorded && d.current().attempt == 1 && !d.run.spec.adoptJob.empty()) {
    if (o.vertex.adoptionRefused) return adoptionRefused(d, *o.vertex.adoptionRefused);
    if (o.vertex.adoptable) return adoptNamedJob(d, *o.vertex.adoptable, options);
    // Never a job of its own before the one it names is read: it waits, and says why.
    d.phase(Phase::Pending, "reading spec.adoptJob " + d.run.spec.adoptJob + " before anything else" +
                                (o.vertex.unavailable ? ": " + o.vertex.unavailable->message : ""));
    d.plan.requeueAfter = options.firstPollWait;
    return finish(d);
  }
  if (!o.vertex.job && !recorded && d.current().attempt == 1) {
    if (o.vertex.namesake) return adoptNamesake(d, *o.vertex.namesake);
    if (o.vertex.placeUnlisted) {
      // The first list of the place since the start wakes it; a failing list is said in status.
      if (o.vertex.unavailable) {
        d.phase(Phase::Pending, "waiting for the first list of " + *o.vertex.placeUnlisted +
                                    " since the operator started (a job a run of this name left there would be "
                                    "adopted): " + o.vertex.unavailable->message);
        d.plan.requeueAfter = options.firstPollWait;
        return finish(d);
      }
      Plan wait;  // nothing written: a fresh run's first pass after a start costs no extra write
      wait.requeueAfter = options.firstPollWait;
      return wait;
    }
  }
  if (!o.vertex.job) return create(d, options);
  if (isSuspensionCancel(*o.vertex.job, d.current())) return unsuspend(d, *o.vertex.job, options);
  if (isEvictionCancel(o, *o.vertex.job, d.current())) return afterEviction(d, *o.vertex.job, options);
  if (const auto* eviction = evictionOf(o); eviction != nullptr && !vertex::isTerminal(o.vertex.job->state))
    return evict(d, *o.vertex.job, *eviction, options);
  return followJob(d, *o.vertex.job, options);
}

Plan recordCreatedJob(const Observed& o, Plan plan, const CachedJob& job, bool adopted) {
  static const crd::TrainingRun undecoded{};
  Draft d(o, o.run ? *o.run : undecoded);
  d.next = plan.status ? *plan.status : o.status;  // no planned status: it equals the stored one
  d.plan = std::move(plan);
  d.plan.status.reset();
  auto& attempt = d.current();
  if (!attempt.startTime) attempt.startTime = d.now();
  d.plan.jobCreated = !adopted;
  if (!adopted) d.plan.events.push_back(normalEvent("JobCreated", "created " + std::string(vertex::kindName(vertex::jobKindOf(job.name))) +
                                                        " " + job.name + " for attempt " + std::to_string(attempt.attempt)));
  applyJobState(d, job);
  // The JobCreated Event already tells the user; the job's first state (queued) is in status. One
  // Event per run at submission, not two.
  d.told = Told::ByOwnEvent;
  return finish(d);
}

}  // namespace vto::reconcilers
