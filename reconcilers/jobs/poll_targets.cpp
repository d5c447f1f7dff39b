#include "reconcilers/jobs/poll_targets.h"

#include <algorithm>

#include "crd/render.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

std::string PollTarget::jobPrefix() const { return where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/"; }

std::optional<PollTarget> pollTargetOfJob(const std::string& jobName) {
  auto name = vertex::parseResourceName(jobName);
  if (!name || !name->kind || !name->operationId.empty()) return std::nullopt;
  return PollTarget{name->where, *name->kind};
}

bool isInTheRunsPlace(const crd::TrainingRunSpec& spec, const Location& defaults, const std::string& jobName) {
  auto target = pollTargetOfJob(jobName);
  if (!target || target->kind != crd::jobKindOf(spec)) return false;
  auto own = crd::locationOf(spec, defaults);
  if (own.project.empty() || target->where.project != own.project) return false;
  if (target->where.location == own.location) return true;
  if (!spec.capacity) return false;
  // A fallback replaces the location or keeps the spec's (crd::specAt).
  return std::any_of(spec.capacity->fallbacks.begin(), spec.capacity->fallbacks.end(),
                     [&](const crd::Fallback& fallback) { return fallback.location == target->where.location; });
}

std::string followedJobOf(const crd::TrainingRunStatus& status) {
  const auto& attempts = status.history.attempts;
  if (crd::isFinished(status.phase) || attempts.empty()) return "";
  return attempts.back().jobName;
}

namespace {
// A run that may still create its first job: alive, valid, not suspended, with no job recorded.
bool awaitsItsFirstJob(const crd::TrainingRun& run) {
  const auto& status = run.status;
  if (crd::isFinished(status.phase) || status.phase == crd::Phase::Invalid || run.spec.suspend ||
      !run.metadata.deletionTimestamp.empty())
    return false;
  const auto& attempts = status.history.attempts;
  return attempts.empty() || (attempts.size() == 1 && attempts.front().jobName.empty());
}
}  // namespace

bool PollTargets::update(const controller::ObjectKey& key, const crd::TrainingRun* decoded) {
  std::optional<PollTarget> target;
  if (decoded != nullptr) {
    auto job = followedJobOf(decoded->status);
    target = pollTargetOfJob(job);
    if (target && !isProjectNumber(target->where.project) && !isInTheRunsPlace(decoded->spec, defaults_, job)) {
      target.reset();  // status is writable by others: it steers no listing elsewhere
    }
    // A run that has no job yet: where its first job goes, so that what a run of the same name left
    // there is known before it creates one.
    if (job.empty() && !target && awaitsItsFirstJob(*decoded)) {
      auto where = crd::locationOf(decoded->spec, defaults_);
      if (isProjectId(where.project) && isVertexRegion(where.location)) target = PollTarget{where, crd::jobKindOf(decoded->spec)};
    }
  }
  std::lock_guard lock(mutex_);
  auto known = byRun_.find(key);
  if (known != byRun_.end()) {
    if (target && known->second == *target) return false;
    if (--runs_[known->second] == 0) runs_.erase(known->second);
    byRun_.erase(known);
  }
  if (!target) return false;
  byRun_[key] = *target;
  return ++runs_[*target] == 1;
}

std::vector<controller::ObjectKey> PollTargets::runsAt(const std::string& prefix) const {
  std::lock_guard lock(mutex_);
  std::vector<controller::ObjectKey> keys;
  for (const auto& [key, target] : byRun_) {
    if (target.jobPrefix() == prefix) keys.push_back(key);
  }
  return keys;
}

std::map<std::string, PollTarget> PollTargets::current() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, PollTarget> out;
  for (const auto& [target, count] : runs_) out[target.jobPrefix()] = target;
  return out;
}

}  // namespace vto::reconcilers
