#pragma once
// A controller's own writes, until the informer's cache has caught up with them.
//
// 1. Their watch events: that event shows the controller nothing it did not decide itself, so
//    enqueueUnlessOwnWrite skips it (one reconcile per real change, not one more per write made). One
//    reconcile may write twice (a finalizer, then status): each write's echo is skipped.
// 2. Reading them back: a pass that starts before the echo arrives (another trigger came in between:
//    a job seen by the poller, a wake-up) would decide on the version our write replaced, write it
//    again and get 409 Conflict, or add the finalizer twice. latest() hands that pass the object as
//    written instead. This is sound because every recorded write was conditional on the version it
//    replaced (its resourceVersion precondition): from that version to ours no one else wrote.
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/informer.h"
#include "controller/object_cache.h"
#include "controller/object_key.h"

namespace vto::controller {

class WorkQueue;

class OwnWrites {
 public:
  // Our write, conditional on `replacedVersion`, left the object as `written` (at the answer's
  // resourceVersion).
  void record(const std::string& replacedVersion, CachedObject written);
  // The object as it is now as far as this controller knows: `cached`, unless `cached` is a version
  // our own writes have replaced (the cache is behind them); then the object as last written. Once
  // the cache holds our last write or anything newer, the record is dropped.
  CachedObject latest(CachedObject cached);
  // True when `object` is exactly a version one of our writes produced; that record and the older
  // ones are forgotten.
  bool consume(const nlohmann::json& object);
  // The object is gone: its record too.
  void forget(const ObjectKey& key);
  size_t size() const;

 private:
  static constexpr size_t kMaxVersionsPerObject = 4;
  struct Writes {
    std::vector<std::string> echoes;    // our versions whose watch events are still to come, oldest first
    std::vector<std::string> replaced;  // versions our writes replaced, in the order written
    CachedObject latest;                // the object as our last write left it
  };
  mutable std::mutex mutex_;
  std::map<ObjectKey, Writes> writes_;
};

// enqueueKey(queue), except for the echo of our own write.
Informer::Handler enqueueUnlessOwnWrite(WorkQueue& queue, OwnWrites& ownWrites);

}  // namespace vto::controller
