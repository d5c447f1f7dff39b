#include "reconcilers/jobs/poll_targets.h"

#include "vertex/vertex_client.h"

namespace vto::reconcilers {

std::string PollTarget::jobPrefix() const { return where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/"; }

std::optional<PollTarget> pollTargetOfJob(const std::string& jobName) {
  auto name = vertex::parseResourceName(jobName);
  if (!name || !name->kind || !name->operationId.empty()) return std::nullopt;
  return PollTarget{name->where, *name->kind};
}

std::string followedJobOf(const crd::TrainingRunStatus& status) {
  const auto& attempts = status.history.attempts;
  if (crd::isFinished(status.phase) || attempts.empty()) return "";
  return attempts.back().jobName;
}

void PollTargets::update(const controller::ObjectKey& key, const crd::TrainingRun* decoded) {
  std::optional<PollTarget> target;
  if (decoded != nullptr) target = pollTargetOfJob(followedJobOf(decoded->status));
  std::lock_guard lock(mutex_);
  auto known = byRun_.find(key);
  if (known != byRun_.end()) {
    if (target && known->second == *target) return;
    if (--runs_[known->second] == 0) runs_.erase(known->second);
    byRun_.erase(known);
  }
  if (target) {
    byRun_[key] = *target;
    ++runs_[*target];
  }
}

std::map<std::string, PollTarget> PollTargets::current() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, PollTarget> out;
  for (const auto& [target, count] : runs_) out[target.jobPrefix()] = target;
  return out;
}

}  // namespace vto::reconcilers
