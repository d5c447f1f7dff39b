#pragma once
// The resourceVersion each of a controller's own writes produced, until its watch event arrives.
// That event shows the controller nothing it did not decide itself, so enqueueUnlessOwnWrite skips
// it: one reconcile per real change, not one per change plus one more per write it made. One
// reconcile may write twice (a finalizer, then status): each write's echo is skipped.
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/informer.h"
#include "controller/object_key.h"

namespace vto::controller {

class WorkQueue;

class OwnWrites {
 public:
  // Our write left the object at `key` at `resourceVersion` (after the writes recorded before it;
  // the oldest record is dropped past kMaxVersionsPerObject).
  void record(const ObjectKey& key, const std::string& resourceVersion);
  // True when `object` is exactly a version one of our writes produced; that record and the older
  // ones are forgotten.
  bool consume(const nlohmann::json& object);
  // The object is gone: its record too.
  void forget(const ObjectKey& key);
  size_t size() const;

 private:
  static constexpr size_t kMaxVersionsPerObject = 4;
  mutable std::mutex mutex_;
  std::map<ObjectKey, std::vector<std::string>> versions_;  // oldest first
};

// enqueueKey(queue), except for the echo of our own write.
Informer::Handler enqueueUnlessOwnWrite(WorkQueue& queue, OwnWrites& ownWrites);

}  // namespace vto::controller
