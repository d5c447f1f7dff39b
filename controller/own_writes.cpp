#include "controller/own_writes.h"

#include <algorithm>

#include "controller/workqueue.h"

namespace vto::controller {

void OwnWrites::record(const ObjectKey& key, const std::string& resourceVersion) {
  if (resourceVersion.empty()) return;
  std::lock_guard guard(mutex_);
  auto& versions = versions_[key];
  if (versions.size() == kMaxVersionsPerObject) versions.erase(versions.begin());
  versions.push_back(resourceVersion);
}

bool OwnWrites::consume(const nlohmann::json& object) {
  auto version = object.value("/metadata/resourceVersion"_json_pointer, std::string());
  std::lock_guard guard(mutex_);
  auto found = versions_.find(keyOf(object));
  if (found == versions_.end()) return false;
  auto& versions = found->second;
  auto match = std::find(versions.begin(), versions.end(), version);
  if (match == versions.end()) return false;
  // Watch events come in order: the echoes of writes before this one have passed.
  versions.erase(versions.begin(), match + 1);
  if (versions.empty()) versions_.erase(found);
  return true;
}

void OwnWrites::forget(const ObjectKey& key) {
  std::lock_guard guard(mutex_);
  versions_.erase(key);
}

size_t OwnWrites::size() const {
  std::lock_guard guard(mutex_);
  return versions_.size();
}

Informer::Handler enqueueUnlessOwnWrite(WorkQueue& queue, OwnWrites& ownWrites) {
  return [&queue, &ownWrites](const nlohmann::json& object) {
    if (!ownWrites.consume(object)) queue.add(keyOf(object));
  };
}

}  // namespace vto::controller
