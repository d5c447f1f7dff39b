#pragma once
// The resourceVersion each of a controller's own writes produced, until its watch event arrives.
// That event shows the controller nothing it did not decide itself, so enqueueUnlessOwnWrite skips
// it: one reconcile per real change, not one per change plus one more per write it made.
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/informer.h"
#include "controller/object_key.h"

namespace vto::controller {

class WorkQueue;

class OwnWrites {
 public:
  // Our write left the object at `key` at `resourceVersion` (replacing an earlier record).
  void record(const ObjectKey& key, const std::string& resourceVersion);
  // True, and forgotten, when `object` is exactly the version our last write to it produced.
  bool consume(const nlohmann::json& object);
  // The object is gone: its record too.
  void forget(const ObjectKey& key);
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<ObjectKey, std::string> versions_;
};

// enqueueKey(queue), except for the echo of our own write.
Informer::Handler enqueueUnlessOwnWrite(WorkQueue& queue, OwnWrites& ownWrites);

}  // namespace vto::controller
