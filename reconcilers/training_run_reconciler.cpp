#include "reconcilers/training_run_reconciler.h"

#include <algorithm>

#include "controller/time_format.h"
#include "crd/labels.h"
#include "crd/validation.h"
#include <spdlog/spdlog.h>

#include "reconcilers/conditions.h"
#include "reconcilers/failure_class.h"
#include "reconcilers/resume_policy.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

using controller::Result;
using crd::Phase;

namespace {
// Written into an attempt's message when vto cancels its job for `suspend: true`, so that a later pass
// can tell a suspension from a cancellation made outside vto.
constexpr const char* kSuspendedMessage = "cancelled by vto: the run was suspended";

bool isFinishedPhase(std::optional<Phase> phase) {
  return phase == Phase::Succeeded || phase == Phase::Failed || phase == Phase::Cancelled;
}

vertex::JobKind vertexKind(crd::JobKind kind) {
  return kind == crd::JobKind::HyperparameterTuningJob ? vertex::JobKind::HyperparameterTuning
                                                        : vertex::JobKind::Custom;
}

std::string timeOrEmpty(const std::optional<Clock::time_point>& t) { return t ? controller::rfc3339(*t) : ""; }

// The last path segment of a resource name: the numeric job id.
std::string lastSegment(const std::string& name) { return name.substr(name.rfind('/') + 1); }

// Best trial of a HyperparameterTuningJob by the study's first metric and its goal.
std::optional<crd::BestTrial> bestTrialOf(const crd::TrainingRunSpec& spec, const nlohmann::json& job) {
  if (!spec.hyperparameterTuning || spec.hyperparameterTuning->metrics.empty() || !job.contains("trials")) {
    return std::nullopt;
  }
  const auto& metric = spec.hyperparameterTuning->metrics.front();
  bool maximize = metric.goal == crd::MetricGoal::Maximize;
  std::optional<crd::BestTrial> best;
  double bestValue = 0;
  for (const auto& trial : job["trials"]) {
    if (!trial.contains("finalMeasurement")) continue;
    crd::BestTrial candidate;
    candidate.id = trial.value("id", "");
    for (const auto& m : trial["finalMeasurement"].value("metrics", nlohmann::json::array())) {
      if (m.contains("value") && m["value"].is_number()) candidate.metrics[m.value("metricId", "")] = m["value"].get<double>();
    }
    auto value = candidate.metrics.find(metric.metricId);
    if (value == candidate.metrics.end()) continue;
    for (const auto& p : trial.value("parameters", nlohmann::json::array())) {
      candidate.parameters[p.value("parameterId", "")] = p.value("value", nlohmann::json());
    }
    if (!best || (maximize ? value->second > bestValue : value->second < bestValue)) {
      bestValue = value->second;
      best = std::move(candidate);
    }
  }
  return best;
}
}  // namespace

const controller::Resource& trainingRunResource() {
  static const controller::Resource resource{"vto.dev", "v1alpha1", "trainingruns", true};
  return resource;
}

std::string consoleUrl(const std::string& jobName) {
  auto where = vertex::locationOf(jobName);
  return "https://console.cloud.google.com/vertex-ai/locations/" + where.location + "/training/" +
         lastSegment(jobName) + "/cpu?project=" + where.project;
}

// Everything one reconcile pass works on.
struct TrainingRunReconciler::Pass {
  nlohmann::json object;     // as cached, metadata.resourceVersion kept current by our own writes
  crd::TrainingRun run;
  crd::TrainingRunStatus old;   // as observed at the start of the pass
  crd::TrainingRunStatus next;  // what this pass computes
  std::string now;
  Clock::time_point nowTime;
  std::optional<Phase> announced;  // the phase the user last heard about (an Event per transition)

  crd::Attempt& current() { return next.attempts.back(); }
  void setCondition(const char* type, bool status, const std::string& reason, const std::string& message = "") {
    reconcilers::setCondition(next.conditions,
                              crd::Condition{type, status ? "True" : "False", reason, message, "", run.metadata.generation},
                              old.conditions, now);
  }
};

TrainingRunReconciler::TrainingRunReconciler(const controller::ObjectCache& runs, controller::KubeClient& kube,
                                             vertex::VertexClient& vertex, vertex::GcsClient& gcs, JobCache& jobs,
                                             controller::EventRecorder& events, const Clock& clock,
                                             TrainingRunReconcilerOptions options, metrics::TrainingRunMetrics* metrics)
    : runs_(runs),
      kube_(kube),
      vertex_(vertex),
      gcs_(gcs),
      jobs_(jobs),
      events_(events),
      clock_(clock),
      options_(options),
      metrics_(metrics) {}

Result TrainingRunReconciler::reconcile(const controller::ObjectKey& key) {
  auto cached = runs_.get(key);
  if (!cached) return {};  // deleted: the finalizer already did its work
  Pass pass;
  pass.object = *cached;
  pass.nowTime = clock_.now();
  pass.now = controller::rfc3339(pass.nowTime);
  try {
    pass.old = crd::decodeTrainingRunStatus(pass.object.value("status", nlohmann::json::object()), "status");
  } catch (const std::exception&) {
    pass.old = {};  // a status we cannot read is rebuilt from what we observe
  }
  pass.announced = pass.old.phase;

  // 1. Decode strictly. The CRD schema refuses almost everything this could, so a failure here means
  //    the schema and the operator disagree: report it on the object rather than crash-looping.
  try {
    pass.run = crd::decodeTrainingRun(pass.object);
  } catch (const std::exception& e) {
    pass.run.metadata = crd::decodeObjectMeta(pass.object.value("metadata", nlohmann::json::object()), "metadata");
    pass.next.attempts = pass.old.attempts;
    return markInvalid(pass, e.what());
  }
  pass.next.observedGeneration = pass.run.metadata.generation;
  // The attempt history is the one thing Vertex cannot tell us cheaply, so it is carried forward.
  pass.next.attempts = pass.old.attempts;
  pass.next.attemptCount = pass.old.attemptCount;
  pass.next.resumes = pass.old.resumes;
  pass.next.lastCheckpoint = pass.old.lastCheckpoint;
  pass.next.bestTrial = pass.old.bestTrial;
  pass.next.startTime = pass.old.startTime.empty() ? pass.now : pass.old.startTime;
  pass.next.completionTime = pass.old.completionTime;
  pass.next.job = pass.old.job;

  // 2. Deletion: cancel the job (deletionPolicy Cancel), then let the object go.
  if (!pass.run.metadata.deletionTimestamp.empty()) return finalize(pass);

  // 3. Validate: an invalid spec gets a condition and an Event, never a job, and no retries.
  auto findings = crd::validate(pass.run);
  if (crd::hasErrors(findings)) {
    std::string message;
    for (const auto& f : findings) {
      if (f.severity != crd::Severity::Error) continue;
      message += (message.empty() ? "" : "; ") + crd::formatFinding(f);
    }
    return markInvalid(pass, message);
  }
  if (pass.old.observedGeneration != pass.run.metadata.generation) {
    for (const auto& f : findings) events_.event(pass.object, controller::EventType::Warning, "SpecWarning", crd::formatFinding(f));
  }
  pass.setCondition("Valid", true, "SpecValid");

  // 4. A finished run only waits for its TTL.
  if (isFinishedPhase(pass.old.phase) && pass.old.observedGeneration == pass.run.metadata.generation) {
    pass.next.phase = pass.old.phase;
    pass.next.message = pass.old.message;
    pass.next.conditions = pass.old.conditions;
    return finished(pass);
  }

  // 5. The finalizer goes on before any job exists, so a deletion can never orphan a job by accident.
  ensureFinalizer(pass);

  if (pass.next.attempts.empty()) {
    pass.next.attempts.push_back(crd::Attempt{1, "", "", "", "", "", "", ""});
    pass.next.attemptCount = std::max(pass.next.attemptCount, 1);
  }

  if (pass.run.spec.suspend) return suspend(pass);

  // 6. Find the current attempt's job, or create it.
  bool recorded = !pass.current().jobName.empty();
  auto job = findJob(pass);
  if (!job && recorded) {
    // Never replace a recorded job silently: that is how duplicates and lost work happen.
    pass.next.phase = Phase::Failed;
    pass.next.message = "the Vertex job " + pass.current().jobName + " no longer exists (deleted outside vto); "
                        "delete and re-create the TrainingRun to train again";
    pass.next.completionTime = pass.now;
    pass.setCondition("Failed", true, "JobNotFound", pass.next.message);
    writeStatus(pass);
    transitionEvent(pass);
    return finished(pass);
  }
  if (!job) {
    // A cancelled-for-suspension attempt is followed by a fresh attempt once the run is resumed.
    job = createJob(pass);
  } else if (job->state == vertex::JobState::Cancelled && pass.current().message == kSuspendedMessage) {
    // Unsuspended: the same path as a resume after a failure, without spending the resume budget.
    pass.current().state = std::string(vertex::jobStateName(job->state));
    pass.current().endTime = timeOrEmpty(job->endTime);
    job = startNextAttempt(pass, "the run was unsuspended");
  }

  // 7. Map what Vertex says to phase and conditions; a failed attempt may be resumed.
  applyJobState(pass, *job);
  if (job->state == vertex::JobState::Failed || job->state == vertex::JobState::Expired) {
    if (auto wait = afterFailure(pass, *job)) {
      writeStatus(pass);
      transitionEvent(pass);
      return *wait;
    }
  }
  // The newest checkpoint, while the job runs and once more when it ends (its final checkpoint).
  bool running = pass.next.phase == Phase::Running;
  if (running || (isFinishedPhase(pass.next.phase) && !isFinishedPhase(pass.old.phase))) refreshCheckpoint(pass);

  // 8. Write status if it changed, tell the user, and come back when something is due.
  writeStatus(pass);
  transitionEvent(pass);
  if (isFinishedPhase(pass.next.phase)) {
    if (metrics_ != nullptr) metrics_->forgetRun(pass.run.metadata.namespace_, pass.run.metadata.name);
    return finished(pass);
  }
  if (job->state == vertex::JobState::Cancelling) return Result{options_.cancelPollPeriod};
  return Result{running ? std::min(options_.resyncPeriod, options_.checkpointPollPeriod) : options_.resyncPeriod};
}

std::optional<Result> TrainingRunReconciler::afterFailure(Pass& pass, vertex::Job& job) {
  auto failure = classifyFailure(job.state, job.error);
  auto& attempt = pass.current();
  attempt.failureClass = failureClassName(failure);
  std::string what = "attempt " + std::to_string(attempt.attempt) + " failed (" + attempt.failureClass + ")" +
                     (job.error && !job.error->message.empty() ? ": " + job.error->message : "");
  auto decision = decideResume(pass.run.spec.checkpointing, failure, pass.next.resumes);
  if (!decision.resume) {
    pass.next.message = what + "; not resumed: " + decision.why;
    bool budget = decision.why.find("maxResumes") != std::string::npos;
    pass.setCondition("Failed", true, budget ? "ResumeBudgetExhausted" : "JobFailed", pass.next.message);
    if (budget && pass.announced != Phase::Failed) {
      events_.event(pass.object, controller::EventType::Warning, "ResumeBudgetExhausted", pass.next.message);
    }
    return std::nullopt;  // stays Failed (applyJobState set it)
  }
  // Vertex's endTime at full precision (status keeps whole seconds), else the end as status recorded it.
  auto failedAt = job.endTime ? *job.endTime : vertex::parseTimestamp(attempt.endTime);
  auto resumeAt = failedAt + decision.backoff;
  if (pass.nowTime < resumeAt) {
    auto wait = std::chrono::duration_cast<std::chrono::seconds>(resumeAt - pass.nowTime).count();
    pass.next.phase = Phase::Resuming;
    pass.next.message = what + "; resuming in " + std::to_string(wait) + "s from the latest checkpoint";
    pass.next.completionTime.clear();
    pass.setCondition("Running", false, "Resuming", pass.next.message);
    pass.setCondition("Failed", false, "Resuming");
    return Result{resumeAt - pass.nowTime};
  }
  pass.next.resumes++;
  if (metrics_ != nullptr) metrics_->resumed(attempt.failureClass);
  job = startNextAttempt(pass, "attempt " + std::to_string(attempt.attempt) + " failed (" + attempt.failureClass + ")");
  applyJobState(pass, job);
  return std::nullopt;
}

vertex::Job TrainingRunReconciler::startNextAttempt(Pass& pass, const std::string& why) {
  auto checkpoint = newestCheckpoint(pass);  // throws when storage cannot be read: retried, never guessed
  int next = pass.current().attempt + 1;
  pass.next.attempts.push_back(crd::Attempt{next, "", "", "", "", "", "", checkpoint ? checkpoint->uri : ""});
  pass.next.attemptCount++;
  if (pass.next.attempts.size() > crd::kMaxAttemptsInStatus) pass.next.attempts.erase(pass.next.attempts.begin());
  if (checkpoint) pass.next.lastCheckpoint = crd::CheckpointRef{checkpoint->uri, checkpoint->updateTime};
  events_.event(pass.object, controller::EventType::Normal, "Resumed",
                why + ": attempt " + std::to_string(next) +
                    (checkpoint ? " resumes from " + checkpoint->uri
                                : " starts from scratch (no checkpoint yet under " +
                                      crd::checkpointDirectoryOf(pass.run.spec) + ")"));
  return createJob(pass);
}

std::optional<Checkpoint> TrainingRunReconciler::newestCheckpoint(const Pass& pass) {
  return findLatestCheckpoint(gcs_, crd::checkpointDirectoryOf(pass.run.spec), clock_).latest;
}

void TrainingRunReconciler::refreshCheckpoint(Pass& pass) {
  try {
    auto checkpoint = newestCheckpoint(pass);
    if (!checkpoint) return;
    pass.next.lastCheckpoint = crd::CheckpointRef{checkpoint->uri, checkpoint->updateTime};
    if (metrics_ != nullptr && !checkpoint->updateTime.empty()) {
      auto age = std::chrono::duration<double>(pass.nowTime - vertex::parseTimestamp(checkpoint->updateTime)).count();
      metrics_->checkpointAge(pass.run.metadata.namespace_, pass.run.metadata.name, std::max(0.0, age));
    }
  } catch (const std::exception& e) {
    // Status is still right without it; the next pass tries again.
    spdlog::warn("{}/{}: cannot list checkpoints: {}", pass.run.metadata.namespace_, pass.run.metadata.name, e.what());
  }
}

Result TrainingRunReconciler::markInvalid(Pass& pass, const std::string& message) {
  pass.next.observedGeneration = pass.run.metadata.generation;
  pass.next.phase = Phase::Invalid;
  pass.next.message = message;
  pass.next.startTime = pass.old.startTime;
  pass.setCondition("Valid", false, "SpecInvalid", message);
  bool news = pass.old.phase != Phase::Invalid || pass.old.message != message;
  writeStatus(pass);
  if (news) events_.event(pass.object, controller::EventType::Warning, "InvalidSpec", message);
  return {};  // nothing to retry: an edit of the spec brings the run back
}

void TrainingRunReconciler::ensureFinalizer(Pass& pass) {
  auto finalizers = pass.object["metadata"].value("finalizers", nlohmann::json::array());
  if (std::find(finalizers.begin(), finalizers.end(), kFinalizer) != finalizers.end()) return;
  finalizers.push_back(kFinalizer);
  // resourceVersion makes the merge patch conditional: a stale cache gets a conflict and a retry.
  nlohmann::json patch = {{"metadata",
                           {{"finalizers", finalizers}, {"resourceVersion", pass.run.metadata.resourceVersion}}}};
  auto updated = kube_.patch(trainingRunResource(), pass.run.metadata.namespace_, pass.run.metadata.name,
                             controller::PatchType::Merge, patch);
  pass.object["metadata"] = updated["metadata"];
  pass.run.metadata.resourceVersion = updated["metadata"].value("resourceVersion", "");
}

Result TrainingRunReconciler::finalize(Pass& pass) {
  auto finalizers = pass.object["metadata"].value("finalizers", nlohmann::json::array());
  auto ours = std::find(finalizers.begin(), finalizers.end(), kFinalizer);
  if (ours == finalizers.end()) return {};
  if (pass.run.spec.deletionPolicy == crd::DeletionPolicy::Cancel && !pass.next.attempts.empty()) {
    // Includes a job created just before a crash that status never recorded.
    if (auto job = findJob(pass); job && !vertex::isTerminal(job->state)) {
      if (job->state != vertex::JobState::Cancelling) {
        cancel(job->name);
        events_.event(pass.object, controller::EventType::Normal, "CancellingJob",
                      "the TrainingRun is being deleted: cancelling " + job->name);
      }
      pass.next.phase = Phase::Cancelling;
      pass.next.message = "deleting: waiting for " + job->name + " to be cancelled";
      pass.next.conditions = pass.old.conditions;
      writeStatus(pass);
      return Result{options_.cancelPollPeriod};
    }
  }
  finalizers.erase(ours);
  nlohmann::json patch = {{"metadata",
                           {{"finalizers", finalizers}, {"resourceVersion", pass.run.metadata.resourceVersion}}}};
  try {
    kube_.patch(trainingRunResource(), pass.run.metadata.namespace_, pass.run.metadata.name,
                controller::PatchType::Merge, patch);
  } catch (const controller::ApiError& e) {
    if (!e.isNotFound()) throw;
  }
  return {};
}

Result TrainingRunReconciler::suspend(Pass& pass) {
  auto job = findJob(pass);
  pass.setCondition("Running", false, "Suspended", "spec.suspend is true");
  if (job && !vertex::isTerminal(job->state)) {
    if (job->state != vertex::JobState::Cancelling) {
      cancel(job->name);
      pass.current().message = kSuspendedMessage;
      events_.event(pass.object, controller::EventType::Normal, "Suspending", "cancelling " + job->name + " to suspend the run");
    }
    applyJobState(pass, *job);
    pass.next.phase = Phase::Cancelling;
    pass.next.message = "suspending: waiting for " + job->name + " to be cancelled";
    writeStatus(pass);
    return Result{options_.cancelPollPeriod};
  }
  if (job) {
    applyJobState(pass, *job);
    // Resuming after this attempt starts a new one; a job that ended on its own keeps its outcome.
    if (job->state == vertex::JobState::Cancelled) pass.current().message = kSuspendedMessage;
  }
  if (!job || job->state == vertex::JobState::Cancelled) {
    pass.next.phase = Phase::Suspended;
    pass.next.message = "suspended; set spec.suspend to false to continue from the latest checkpoint";
    pass.setCondition("Running", false, "Suspended", "spec.suspend is true");
  }
  writeStatus(pass);
  transitionEvent(pass);
  return isFinishedPhase(pass.next.phase) ? finished(pass) : Result{};
}

Result TrainingRunReconciler::finished(Pass& pass) {
  const auto& ttl = pass.run.spec.ttlSecondsAfterFinished;
  if (!ttl || pass.next.completionTime.empty()) return {};
  auto completed = vertex::parseTimestamp(pass.next.completionTime);
  auto expires = completed + std::chrono::seconds(*ttl);
  if (pass.nowTime < expires) return Result{expires - pass.nowTime};
  try {
    kube_.remove(trainingRunResource(), pass.run.metadata.namespace_, pass.run.metadata.name);
  } catch (const controller::ApiError& e) {
    if (!e.isNotFound()) throw;
  }
  return {};
}

std::optional<vertex::Job> TrainingRunReconciler::findJob(Pass& pass) {
  if (pass.next.attempts.empty()) return std::nullopt;
  auto& attempt = pass.current();
  if (!attempt.jobName.empty()) return observe(attempt.jobName);
  // Not in status: a crash may have come between create and the status write. Adopt what exists.
  auto placement = crd::placementOf(pass.run.spec, options_.defaults);
  if (placement.project.empty() || placement.location.empty()) return std::nullopt;
  vertex::ListOptions list;
  list.filter = std::string("labels.") + crd::kRunUidLabel + "=\"" + crd::sanitizeLabelValue(pass.run.metadata.uid) +
                "\" AND labels." + crd::kAttemptLabel + "=\"" + std::to_string(attempt.attempt) + "\"";
  auto page = vertex_.listJobs({placement.project, placement.location},
                               vertexKind(crd::jobKindOf(pass.run.spec)), list);
  if (page.jobs.empty()) return std::nullopt;
  // Oldest first: should two ever exist, every pass adopts the same one.
  auto oldest = std::min_element(page.jobs.begin(), page.jobs.end(), [](const auto& a, const auto& b) {
    return a.createTime.value_or(Clock::time_point::max()) < b.createTime.value_or(Clock::time_point::max());
  });
  attempt.jobName = oldest->name;
  jobs_.put(*oldest);
  return *oldest;
}

std::optional<vertex::Job> TrainingRunReconciler::observe(const std::string& jobName) {
  if (auto cached = jobs_.get(jobName)) return cached;
  try {
    auto job = vertex_.getJob(jobName);
    jobs_.put(job);
    return job;
  } catch (const vertex::ApiError& e) {
    if (e.notFound()) return std::nullopt;
    throw;
  }
}

void TrainingRunReconciler::cancel(const std::string& jobName) {
  try {
    vertex_.cancelJob(jobName);
  } catch (const vertex::ApiError& e) {
    if (!e.notFound()) throw;  // already gone counts as cancelled
  }
  jobs_.erase(jobName);  // the next pass reads the CANCELLING/CANCELLED state from Vertex
}

vertex::Job TrainingRunReconciler::createJob(Pass& pass) {
  auto placement = crd::placementOf(pass.run.spec, options_.defaults);
  if (placement.project.empty() || placement.location.empty()) {
    markInvalid(pass, "spec.project and spec.location: set them, or start the operator with --default-project "
                      "and --default-location");
    throw controller::TerminalError("no project/location for " + pass.run.metadata.name);
  }
  auto& attempt = pass.current();
  auto body = crd::renderJob(pass.run, attempt.attempt, attempt.resumedFrom);
  vertex::Job job;
  try {
    job = vertex_.createJob({placement.project, placement.location}, vertexKind(crd::jobKindOf(pass.run.spec)), body);
  } catch (const vertex::ApiError& e) {
    if (e.retryable()) throw;  // paced and retried by the client already; back off and come again
    // Vertex refused the job itself (a bad argument, a missing permission): retrying cannot help.
    std::string advice = e.httpStatus() == 403
                             ? " (grant the operator's service account roles/aiplatform.user on the project)"
                             : "";
    pass.next.phase = Phase::Failed;
    pass.next.message = "Vertex AI refused the job: " + e.message() + advice;
    pass.next.completionTime = pass.now;
    pass.setCondition("Submitted", false, "JobRejected", pass.next.message);
    pass.setCondition("Failed", true, "JobRejected", pass.next.message);
    writeStatus(pass);
    transitionEvent(pass);
    throw controller::TerminalError(pass.next.message);
  }
  attempt.jobName = job.name;
  if (attempt.startTime.empty()) attempt.startTime = pass.now;
  jobs_.put(job);
  if (metrics_ != nullptr) metrics_->jobCreated(crd::jobKindName(crd::jobKindOf(pass.run.spec)));
  // Write the job name at once: from here on a crash finds the job through status.
  pass.next.phase = Phase::Submitted;
  pass.next.message = "attempt " + std::to_string(attempt.attempt) + " submitted as " + job.name;
  pass.setCondition("Submitted", true, "JobCreated", job.name);
  applyJobState(pass, job);
  writeStatus(pass);
  events_.event(pass.object, controller::EventType::Normal, "JobCreated",
                "created " + std::string(crd::jobKindName(crd::jobKindOf(pass.run.spec))) + " " + job.name +
                    " for attempt " + std::to_string(attempt.attempt));
  return job;
}

void TrainingRunReconciler::applyJobState(Pass& pass, const vertex::Job& job) {
  auto& attempt = pass.current();
  std::string state(vertex::jobStateName(job.state));
  attempt.jobName = job.name;
  attempt.state = state;
  if (job.startTime) attempt.startTime = timeOrEmpty(job.startTime);
  if (job.endTime) attempt.endTime = timeOrEmpty(job.endTime);
  // Vertex stamps endTime on every ending; should it ever be missing, the first pass that saw the end
  // stands in, so that the resume backoff counts from a fixed point.
  if (vertex::isTerminal(job.state) && attempt.endTime.empty()) attempt.endTime = pass.now;

  crd::JobRef ref;
  ref.name = job.name;
  ref.id = lastSegment(job.name);
  ref.kind = crd::jobKindName(crd::jobKindOf(pass.run.spec));
  ref.state = state;
  ref.consoleUrl = consoleUrl(job.name);
  ref.createTime = timeOrEmpty(job.createTime);
  ref.startTime = timeOrEmpty(job.startTime);
  ref.endTime = timeOrEmpty(job.endTime);
  if (job.raw.contains("webAccessUris") && job.raw["webAccessUris"].is_object()) {
    for (const auto& [k, v] : job.raw["webAccessUris"].items()) {
      if (v.is_string()) ref.webAccessUris[k] = v.get<std::string>();
    }
  }
  pass.next.job = ref;
  if (auto best = bestTrialOf(pass.run.spec, job.raw)) pass.next.bestTrial = best;

  std::string attemptText = "attempt " + std::to_string(attempt.attempt);
  std::string errorText = job.error ? job.error->message : "";
  pass.setCondition("Submitted", true, "JobCreated", job.name);
  switch (job.state) {
    case vertex::JobState::Unspecified:
      pass.next.phase = Phase::Submitted;
      pass.next.message = attemptText + " submitted";
      pass.setCondition("Running", false, "JobSubmitted");
      break;
    case vertex::JobState::Queued:
    case vertex::JobState::Pending:
      pass.next.phase = Phase::Queued;
      pass.next.message = attemptText + " waiting for resources (" + state + ")";
      pass.setCondition("Running", false, "JobQueued", state);
      break;
    case vertex::JobState::Running:
    case vertex::JobState::Paused:
    case vertex::JobState::Updating:
      pass.next.phase = Phase::Running;
      pass.next.message = attemptText + " running";
      pass.setCondition("Running", true, "JobRunning");
      break;
    case vertex::JobState::Succeeded:
    case vertex::JobState::PartiallySucceeded:
      pass.next.phase = Phase::Succeeded;
      pass.next.message = attemptText + " succeeded";
      pass.next.completionTime = attempt.endTime.empty() ? pass.now : attempt.endTime;
      pass.setCondition("Running", false, "JobSucceeded");
      break;
    case vertex::JobState::Failed:
    case vertex::JobState::Expired:
      pass.next.phase = Phase::Failed;
      pass.next.message = attemptText + " failed: " + (errorText.empty() ? state : errorText);
      attempt.message = errorText;
      pass.next.completionTime = attempt.endTime.empty() ? pass.now : attempt.endTime;
      pass.setCondition("Running", false, "JobFailed", errorText);
      break;
    case vertex::JobState::Cancelling:
      pass.next.phase = Phase::Cancelling;
      pass.next.message = attemptText + " is being cancelled";
      pass.setCondition("Running", false, "JobCancelling");
      break;
    case vertex::JobState::Cancelled:
      pass.next.phase = Phase::Cancelled;
      pass.next.message = attemptText + " was cancelled" + (errorText.empty() ? "" : ": " + errorText);
      pass.next.completionTime = attempt.endTime.empty() ? pass.now : attempt.endTime;
      pass.setCondition("Running", false, "JobCancelled");
      break;
  }
  bool succeeded = pass.next.phase == Phase::Succeeded;
  bool failed = pass.next.phase == Phase::Failed || pass.next.phase == Phase::Cancelled;
  pass.setCondition("Succeeded", succeeded, succeeded ? "JobSucceeded" : "NotFinished");
  pass.setCondition("Failed", failed, failed ? (pass.next.phase == Phase::Cancelled ? "JobCancelled" : "JobFailed") : "NoFailure",
                    failed ? pass.next.message : "");
  if (!isFinishedPhase(pass.next.phase)) pass.next.completionTime.clear();
}

void TrainingRunReconciler::writeStatus(Pass& pass) {
  // Validation first, then the lifecycle conditions, always in one order: stable output, no spurious writes.
  static const std::vector<std::string> order = {"Valid", "Submitted", "Running", "Succeeded", "Failed"};
  std::stable_sort(pass.next.conditions.begin(), pass.next.conditions.end(), [](const auto& a, const auto& b) {
    return std::find(order.begin(), order.end(), a.type) < std::find(order.begin(), order.end(), b.type);
  });
  auto encoded = crd::encodeTrainingRunStatus(pass.next);
  if (pass.object.contains("status") && crd::encodeTrainingRunStatus(pass.old) == encoded) return;
  nlohmann::json object = pass.object;
  object["status"] = encoded;
  auto updated = kube_.updateStatus(trainingRunResource(), pass.run.metadata.namespace_, object);
  pass.object["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"];
  pass.run.metadata.resourceVersion = updated["metadata"].value("resourceVersion", "");
  pass.object["status"] = encoded;
  pass.old = pass.next;  // a second write in the same pass compares against what is stored now
}

void TrainingRunReconciler::transitionEvent(Pass& pass) {
  if (!pass.next.phase || pass.next.phase == pass.announced) return;
  pass.announced = pass.next.phase;
  auto type = controller::EventType::Normal;
  std::string reason;
  switch (*pass.next.phase) {
    case Phase::Queued: reason = "JobQueued"; break;
    case Phase::Running: reason = "JobRunning"; break;
    case Phase::Succeeded: reason = "Succeeded"; break;
    case Phase::Suspended: reason = "Suspended"; break;
    case Phase::Resuming: reason = "Resuming"; break;
    case Phase::Failed: reason = "Failed"; type = controller::EventType::Warning; break;
    case Phase::Cancelled: reason = "Cancelled"; type = controller::EventType::Warning; break;
    default: return;  // Submitted and Cancelling have their own events where they happen
  }
  events_.event(pass.object, type, reason, pass.next.message);
}

}  // namespace vto::reconcilers
