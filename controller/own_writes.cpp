#include "controller/own_writes.h"

#include "controller/workqueue.h"

namespace vto::controller {

void OwnWrites::record(const ObjectKey& key, const std::string& resourceVersion) {
  if (resourceVersion.empty()) return;
  std::lock_guard guard(mutex_);
  versions_[key] = resourceVersion;
}

bool OwnWrites::consume(const nlohmann::json& object) {
  auto version = object.value("/metadata/resourceVersion"_json_pointer, std::string());
  std::lock_guard guard(mutex_);
  auto found = versions_.find(keyOf(object));
  if (found == versions_.end() || found->second != version) return false;
  versions_.erase(found);
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
