#include "controller/own_writes.h"

#include <algorithm>

#include "controller/object_cache.h"
#include "controller/workqueue.h"

namespace vto::controller {

namespace {
void keepLast(std::vector<std::string>& versions, size_t count) {
  if (versions.size() > count) versions.erase(versions.begin(), versions.end() - static_cast<long>(count));
}
}  // namespace

void OwnWrites::record(const ObjectKey& key, const std::string& replacedVersion, const std::string& resourceVersion) {
  record(key, std::vector<std::string>{replacedVersion}, resourceVersion);
}

void OwnWrites::record(const ObjectKey& key, const std::vector<std::string>& replacedVersions,
                       const std::string& resourceVersion) {
  if (resourceVersion.empty()) return;
  std::lock_guard guard(mutex_);
  auto& writes = writes_[key];
  writes.echoes.push_back(resourceVersion);
  keepLast(writes.echoes, kMaxVersionsPerObject);
  for (const auto& replaced : replacedVersions) {
    if (!replaced.empty()) writes.replaced.push_back(replaced);
  }
  keepLast(writes.replaced, kMaxVersionsPerObject);
}

bool OwnWrites::behind(const nlohmann::json& cached) {
  auto version = versionOf(cached);
  std::lock_guard guard(mutex_);
  auto found = writes_.find(keyOf(cached));
  if (found == writes_.end()) return false;
  const auto& replaced = found->second.replaced;
  if (std::find(replaced.begin(), replaced.end(), version) != replaced.end()) {
    found->second.deferred = true;
    return true;
  }
  // Our last write or a newer version: the cache has caught up (an echo it has already passed, when
  // the watch was quicker than our record of the answer, is not waited for any longer).
  writes_.erase(found);
  return false;
}

bool OwnWrites::waitingFor(const nlohmann::json& cached) const {
  auto version = versionOf(cached);
  std::lock_guard guard(mutex_);
  auto found = writes_.find(keyOf(cached));
  if (found == writes_.end()) return false;
  const auto& replaced = found->second.replaced;
  return std::find(replaced.begin(), replaced.end(), version) != replaced.end();
}

bool OwnWrites::consume(const nlohmann::json& object) {
  auto version = versionOf(object);
  std::lock_guard guard(mutex_);
  auto found = writes_.find(keyOf(object));
  if (found == writes_.end()) return false;
  auto& echoes = found->second.echoes;
  auto match = std::find(echoes.begin(), echoes.end(), version);
  if (match == echoes.end()) return false;
  // Watch events come in order: the echoes of writes before this one have passed.
  echoes.erase(echoes.begin(), match + 1);
  if (!echoes.empty()) return true;  // still behind our last write: a deferred pass waits on
  bool deferred = found->second.deferred;
  writes_.erase(found);  // the cache holds our last write
  return !deferred;      // a pass that deferred to this echo runs now
}

void OwnWrites::forget(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  writes_.erase(key);
}

size_t OwnWrites::size() const {
  std::lock_guard guard(mutex_);
  return writes_.size();
}

Informer::Handler enqueueUnlessOwnWrite(WorkQueue& queue, OwnWrites& ownWrites) {
  return [&queue, &ownWrites](const nlohmann::json& object) {
    if (!ownWrites.consume(object)) queue.add(keyOf(object));
  };
}

}  // namespace vto::controller
