// What GitOps tools and people read of a run: kstatus's conditions and status.progress, both derived
// from what decide already computed (no extra reads).
#include <algorithm>
#include <cmath>

#include "controller/conditions.h"
#include "reconcilers/jobs/checkpoints.h"
#include "reconcilers/trainingrun/decide.h"
#include "reconcilers/trainingrun/draft.h"

namespace vto::reconcilers {

using crd::Phase;

namespace {

// Gates that hold a run until a person changes something (a budget, a bucket, Kueue's setup) are
// Stalled; those that clear by themselves (capacity, the tenant's quota, a Vertex error, Kueue's queue)
// are not. Named as strings: a gate's reason may come from a room that does not share this file's
// Reason enum.
bool gateNeedsAChange(const std::string& reason) {
  return reason == "BudgetExceeded" || reason == "OutputBucketNotFound" || reason == "KueueUnavailable";
}

const crd::Condition* find(const HealthInput& in, ConditionType type) {
  return controller::findStatusCondition(in.conditions, conditionTypeName(type));
}

crd::Condition make(ConditionType type, bool status, std::string reason, std::string message) {
  return crd::Condition{conditionTypeName(type), status ? "True" : "False", std::move(reason), std::move(message),
                        std::nullopt, 0};
}

}  // namespace

Health healthOf(const HealthInput& in) {
  std::string phase = in.phase ? crd::enumName(*in.phase, crd::phaseNames()) : "Pending";
  const auto* registered = find(in, ConditionType::ModelRegistered);
  bool registrationPending = in.phase == Phase::Succeeded && in.modelWanted &&
                             (registered == nullptr || registered->status != "True");
  // Why the run is not ready: the gate's reason, else what ended it, else its phase.
  std::string why = phase;
  if (in.readyGate) {
    why = in.readyGate->reason;
  } else if (in.phase == Phase::Invalid) {
    if (const auto* valid = find(in, ConditionType::Valid); valid && valid->status == "False") why = valid->reason;
  } else if (in.phase == Phase::Failed || in.phase == Phase::Cancelled) {
    if (const auto* failed = find(in, ConditionType::Failed); failed && failed->status == "True") why = failed->reason;
  } else if (registrationPending) {
    why = registered ? registered->reason : "Registering";
  }

  bool stalled = in.phase == Phase::Invalid || in.phase == Phase::Failed || in.phase == Phase::Cancelled ||
                 (in.readyGate && gateNeedsAChange(in.readyGate->reason));
  bool done = in.phase == Phase::Succeeded && !registrationPending;
  bool reconciling = !stalled && !done && in.phase != Phase::Suspended;

  Health h;
  if (in.readyGate) {
    h.ready = *in.readyGate;
  } else {
    h.ready = make(ConditionType::Ready, done, done ? "Succeeded" : why, in.message);
  }
  h.reconciling = make(ConditionType::Reconciling, reconciling, reconciling ? why : phase, reconciling ? in.message : "");
  h.stalled = make(ConditionType::Stalled, stalled, stalled ? why : "NotStalled", stalled ? in.message : "");
  return h;
}

namespace {
// An ETA further out than this is not one: it is left out rather than written as a date.
constexpr std::chrono::duration<double> kLongestEta = std::chrono::hours(24 * 365 * 10);
}  // namespace

std::optional<crd::Progress> progressOf(const crd::TrainingRunSpec& spec, const crd::TrainingRunStatus& status) {
  const auto& checkpoint = status.history.lastCheckpoint;
  if (!checkpoint) return std::nullopt;
  auto directory = crd::checkpointDirectoryOf(spec);
  auto step = checkpointStep(directory, checkpoint->uri);
  if (!step) return std::nullopt;
  crd::Progress progress;
  progress.step = *step;
  progress.totalSteps = spec.checkpointing.totalSteps;
  // A step is whatever number a tenant's checkpoint name holds (up to 18 digits): no product may overflow.
  if (progress.totalSteps) {
    progress.percent = *step >= *progress.totalSteps
                           ? 100
                           : static_cast<int32_t>(static_cast<__int128>(*step) * 100 / *progress.totalSteps);
  }
  // The rate is this attempt's alone (a resumed attempt may run on other machines): the steps from the
  // checkpoint it resumed from to its newest one, over the time since it started. A checkpoint older
  // than the attempt's start is an earlier attempt's: no rate yet.
  if (status.history.attempts.empty()) return progress;
  const auto& attempt = status.history.attempts.back();
  long long from = attempt.resumedFrom.empty() ? 0 : checkpointStep(directory, attempt.resumedFrom).value_or(0);
  if (!attempt.startTime || !checkpoint->updateTime || *checkpoint->updateTime <= *attempt.startTime || *step <= from) {
    return progress;
  }
  double seconds = std::chrono::duration<double>(*checkpoint->updateTime - *attempt.startTime).count();
  double perStep = seconds / static_cast<double>(*step - from);
  progress.secondsPerStep = std::round(perStep * 10) / 10;  // a tenth of a second: no write per jitter
  if (status.phase == Phase::Running && progress.totalSteps && *step < *progress.totalSteps) {
    auto remaining = std::chrono::duration<double>(perStep * static_cast<double>(*progress.totalSteps - *step));
    if (!(remaining < kLongestEta)) return progress;  // no date a person could wait for (or write as RFC 3339)
    progress.eta = trainingrun::wholeSeconds(*checkpoint->updateTime +
                                             std::chrono::duration_cast<Clock::duration>(remaining));
  }
  return progress;
}

}  // namespace vto::reconcilers
