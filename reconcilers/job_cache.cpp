#include "reconcilers/job_cache.h"

namespace vto::reconcilers {

std::optional<vertex::Job> JobCache::get(const std::string& jobName) const {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(jobName);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

bool JobCache::put(const vertex::Job& job) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = jobs_.try_emplace(job.name, job);
  if (inserted) return true;
  vertex::Job& held = it->second;
  // A get that raced with a newer list must not move the job back in time.
  if (held.updateTime && job.updateTime && *job.updateTime < *held.updateTime) return false;
  bool changed = held.state != job.state || held.updateTime != job.updateTime;
  held = job;
  return changed;
}

void JobCache::erase(const std::string& jobName) {
  std::lock_guard lock(mutex_);
  jobs_.erase(jobName);
}

size_t JobCache::size() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

}  // namespace vto::reconcilers
