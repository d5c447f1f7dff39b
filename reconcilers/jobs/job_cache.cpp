#include "reconcilers/jobs/job_cache.h"

#include "base/rfc3339.h"
#include "base/utf8.h"
#include "crd/labels.h"
#include "crd/render.h"

namespace vto::reconcilers {

bool CachedJob::operator==(const CachedJob& other) const {
  auto trialKey = [](const std::optional<vertex::Trial>& t) {
    return t ? std::make_tuple(true, t->id, t->parameters.dump(), t->metrics)
             : std::make_tuple(false, std::string(), std::string(), std::map<std::string, double>());
  };
  auto errorKey = [](const std::optional<vertex::RpcStatus>& e) {
    return e ? std::make_tuple(true, e->code, e->message) : std::make_tuple(false, 0, std::string());
  };
  return name == other.name && state == other.state && createTime == other.createTime &&
         startTime == other.startTime && endTime == other.endTime && updateTime == other.updateTime &&
         errorKey(error) == errorKey(other.error) && labels == other.labels &&
         trialKey(bestTrial) == trialKey(other.bestTrial) && webAccessUris == other.webAccessUris &&
         trialSpans == other.trialSpans && readAt == other.readAt;
}

namespace {
// Impostors remembered at once, whatever others create in the project.
constexpr size_t kMaxImpostors = 1024;

// Trials without a startTime have not started and cost nothing yet.
std::vector<std::pair<Clock::time_point, std::optional<Clock::time_point>>> trialSpansOf(const nlohmann::json& raw) {
  std::vector<std::pair<Clock::time_point, std::optional<Clock::time_point>>> spans;
  auto trials = raw.find("trials");
  if (trials == raw.end() || !trials->is_array()) return spans;
  for (const auto& trial : *trials) {
    if (!trial.is_object()) continue;
    auto start = trial.find("startTime");
    if (start == trial.end() || !start->is_string()) continue;
    auto started = parseRfc3339OrNone(start->get_ref<const std::string&>());
    if (!started) continue;
    std::optional<Clock::time_point> ended;
    if (auto end = trial.find("endTime"); end != trial.end() && end->is_string())
      ended = parseRfc3339OrNone(end->get_ref<const std::string&>());
    spans.emplace_back(*started, ended);
  }
  return spans;
}
}  // namespace

CachedJob cachedJobOf(const vertex::Job& job, Clock::time_point readAt) {
  CachedJob cached{job.name,  job.state,  job.createTime, job.startTime,     job.endTime,          job.updateTime,
                   job.error, job.labels, job.bestTrial,  job.webAccessUris, trialSpansOf(job.raw), readAt};
  // Vertex's error quotes the job's own output (an exit message, a Python exception): it reaches
  // status, conditions and Events only escaped.
  if (cached.error) cached.error->message = escapeControls(cached.error->message);
  return cached;
}

governance::JobTimes timesOf(const CachedJob& job) {
  governance::JobTimes times{job.startTime, job.endTime, vertex::isTerminal(job.state), {}};
  for (const auto& [start, end] : job.trialSpans) times.trials.push_back({start, end});
  return times;
}

std::optional<CachedJob> JobCache::get(const std::string& jobName) const {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(jobName);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

bool JobCache::trusts(const vertex::Job& job) const {
  if (ownership_ == nullptr || ownership_->trusts(job.labels, job.createTime)) return true;
  std::lock_guard lock(mutex_);
  return adopted_.contains(job.name);
}

void JobCache::adopt(const std::string& jobName, const std::string& runUid) {
  constexpr size_t kMaxAdopted = 10000;
  std::lock_guard lock(mutex_);
  if (adopted_.size() >= kMaxAdopted && !adopted_.contains(jobName)) adopted_.erase(adopted_.begin());
  adopted_[jobName] = runUid;
}

std::string JobCache::adopterOf(const std::string& jobName) const {
  std::lock_guard lock(mutex_);
  auto found = adopted_.find(jobName);
  return found == adopted_.end() ? "" : found->second;
}

std::optional<std::string> JobCache::recordImpostor(const vertex::Job& job) {
  // Another cluster's jobs are legitimately there: not impostors, just not ours.
  if (ownership_ == nullptr || ownership_->ownerOf(job.labels, job.createTime) != JobOwner::Forged) return std::nullopt;
  auto uid = labelOf(job.labels, crd::kRunUidLabel);
  if (uid.empty()) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (impostors_.count(job.name)) return std::nullopt;
  // Bounded whatever others create: past the bound a new impostor is still ignored, only not warned about.
  if (impostors_.size() >= kMaxImpostors) return std::nullopt;
  impostors_.emplace(job.name, Impostor{uid, false});
  return uid;
}

std::vector<std::string> JobCache::impostorsOf(const std::string& uid) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, impostor] : impostors_) {
    if (impostor.uid == uid && !impostor.reported) names.push_back(name);
  }
  return names;
}

void JobCache::impostorsReported(const std::string& uid, const std::vector<std::string>& names) {
  std::lock_guard lock(mutex_);
  for (const auto& name : names) {
    auto found = impostors_.find(name);
    if (found != impostors_.end() && found->second.uid == uid) found->second.reported = true;
  }
}

bool JobCache::put(const vertex::Job& job, Clock::time_point readAt) {
  if (!trusts(job)) {
    // Relabelled after vto cached it counts no more either.
    erase(job.name);
    if (auto uid = recordImpostor(job); uid && impostorListener_) impostorListener_(*uid);
    return false;
  }
  std::optional<CachedJob> changedTo;
  {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = jobs_.try_emplace(job.name, cachedJobOf(job, readAt));
    bool wasUnfinished = false;
    if (!inserted) {
      CachedJob& held = it->second;
      // A read that started before the one held is older whatever its update time says. (Update times
      // are not an order: an update can be stamped behind one already seen.)
      if (readAt < held.readAt) return false;
      bool changed = held.state != job.state || held.updateTime != job.updateTime;
      wasUnfinished = !vertex::isTerminal(held.state);
      held = cachedJobOf(job, readAt);
      if (!changed) return false;
    }
    countUnfinished(it->second, wasUnfinished, !vertex::isTerminal(job.state));
    if (listener_) changedTo = it->second;
  }
  if (changedTo) listener_(job.name, &*changedTo);
  return true;
}

void JobCache::erase(const std::string& jobName) {
  bool erased = false;
  {
    std::lock_guard lock(mutex_);
    auto found = jobs_.find(jobName);
    if (found != jobs_.end()) {
      countUnfinished(found->second, !vertex::isTerminal(found->second.state), false);
      jobs_.erase(found);
      erased = true;
    }
  }
  if (erased && listener_) listener_(jobName, nullptr);
}

namespace {
// The run a job was made for, by namespace and name (its labels), whatever its uid was.
std::string namesakeKey(const std::map<std::string, std::string>& labels) {
  auto ns = labelOf(labels, crd::kNamespaceLabel), name = labelOf(labels, crd::kNameLabel);
  return ns.empty() || name.empty() ? "" : ns + "/" + name;
}
}  // namespace

void JobCache::countUnfinished(const CachedJob& job, bool before, bool after) {
  if (before == after) return;
  const auto& name = job.name;
  auto prefix = name.substr(0, name.rfind('/') + 1);
  auto namesake = namesakeKey(job.labels);
  if (after) {
    ++unfinishedByPrefix_[prefix];
    if (!namesake.empty()) unfinishedByNamesake_[namesake].insert(name);
  } else {
    if (--unfinishedByPrefix_[prefix] <= 0) unfinishedByPrefix_.erase(prefix);
    if (auto found = unfinishedByNamesake_.find(namesake); found != unfinishedByNamesake_.end()) {
      found->second.erase(name);
      if (found->second.empty()) unfinishedByNamesake_.erase(found);
    }
  }
}

std::vector<CachedJob> JobCache::unfinishedNamesakes(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::vector<CachedJob> out;
  auto found = unfinishedByNamesake_.find(crd::sanitizeLabelValue(ns) + "/" + crd::sanitizeLabelValue(name));
  if (found == unfinishedByNamesake_.end()) return out;
  for (const auto& jobName : found->second) {
    if (auto job = jobs_.find(jobName); job != jobs_.end()) out.push_back(job->second);
  }
  return out;
}

std::vector<std::string> JobCache::unfinishedPrefixes() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> prefixes;
  for (const auto& [prefix, count] : unfinishedByPrefix_) prefixes.push_back(prefix);
  return prefixes;
}

std::optional<bool> JobCache::ended(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto found = jobs_.find(name);
  if (found == jobs_.end()) return std::nullopt;
  return vertex::isTerminal(found->second.state);
}

size_t JobCache::size() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

std::vector<CachedJob> JobCache::unfinishedReadBefore(const std::string& prefix, Clock::time_point before) const {
  std::lock_guard lock(mutex_);
  std::vector<CachedJob> out;
  for (auto it = jobs_.lower_bound(prefix); it != jobs_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    if (!vertex::isTerminal(it->second.state) && it->second.readAt < before) out.push_back(it->second);
  }
  return out;
}

std::vector<CachedJob> JobCache::unfinishedAdoptedReadBefore(const std::string& prefix, Clock::time_point before) const {
  std::lock_guard lock(mutex_);
  std::vector<CachedJob> out;
  for (auto it = adopted_.lower_bound(prefix); it != adopted_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    auto job = jobs_.find(it->first);
    if (job != jobs_.end() && !vertex::isTerminal(job->second.state) && job->second.readAt < before) out.push_back(job->second);
  }
  return out;
}

bool JobCache::setPollFailure(const std::string& prefix, std::optional<VertexFailure> failure) {
  std::lock_guard lock(mutex_);
  auto found = pollFailures_.find(prefix);
  if (!failure) {
    if (found == pollFailures_.end()) return false;
    pollFailures_.erase(found);
    return true;
  }
  if (found != pollFailures_.end() && found->second == *failure) return false;
  pollFailures_[prefix] = std::move(*failure);
  return true;
}

void JobCache::markListed(const std::string& prefix) {
  std::lock_guard lock(mutex_);
  listed_.insert(prefix);
}

bool JobCache::listed(const std::string& prefix) const {
  std::lock_guard lock(mutex_);
  return listed_.count(prefix) > 0;
}

std::optional<VertexFailure> JobCache::pollFailure(const std::string& prefix) const {
  std::lock_guard lock(mutex_);
  auto found = pollFailures_.find(prefix);
  if (found == pollFailures_.end()) return std::nullopt;
  return found->second;
}

}  // namespace vto::reconcilers
