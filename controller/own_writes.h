#pragma once
// A controller's own writes, until the informer's cache has caught up with them.
//
// 1. Their watch events: that event shows the controller nothing it did not decide itself, so
//    enqueueUnlessOwnWrite skips it (one reconcile per real change, not one more per write made). One
//    reconcile may write twice (a finalizer, then status): each write's echo is skipped.
// 2. A pass that starts before the echo arrives (another trigger came in between: a job seen by the
//    poller, a wake-up) would decide on the version our write replaced, write again and get 409
//    Conflict, or add the finalizer twice. behind() tells it so; it returns at once, and the echo of
//    our last write, instead of being skipped, brings the key back when the cache holds it. This is
//    sound because every recorded write was conditional on the version it replaced (its
//    resourceVersion precondition): from that version to ours no one else wrote.
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
  // Our write, conditional on `replacedVersion`, left the object at `key` at `resourceVersion`.
  void record(const ObjectKey& key, const std::string& replacedVersion, const std::string& resourceVersion);
  // The same for a write that found the object at several versions before it applied (a conflict,
  // a fresh read, a write again): none of them may be decided on any more.
  void record(const ObjectKey& key, const std::vector<std::string>& replacedVersions, const std::string& resourceVersion);
  // True when `cached` is a version our own writes have replaced (the cache is behind them): the
  // caller defers, and the echo of our last write will be reconciled rather than skipped. Once the
  // cache holds our last write or anything newer, the record is dropped and this is false.
  bool behind(const nlohmann::json& cached);
  // behind() for a reader that does not reconcile the object (a poller, another controller reading it):
  // the same answer, without marking a pass as waiting for the echo.
  bool waitingFor(const nlohmann::json& cached) const;
  // True when `object` is exactly a version one of our writes produced and nothing waits for it; that
  // record and the older ones are forgotten.
  bool consume(const nlohmann::json& object);
  // The object is gone: its record too.
  void forget(const ObjectKey& key);
  size_t size() const;

 private:
  static constexpr size_t kMaxVersionsPerObject = 4;
  struct Writes {
    std::vector<std::string> echoes;    // our versions whose watch events are still to come, oldest first
    std::vector<std::string> replaced;  // versions our writes replaced, in the order written
    bool deferred = false;              // a pass returned because the cache was behind
  };
  mutable std::mutex mutex_;
  std::map<ObjectKey, Writes> writes_;
};

// enqueueKey(queue), except for the echo of our own write.
Informer::Handler enqueueUnlessOwnWrite(WorkQueue& queue, OwnWrites& ownWrites);

}  // namespace vto::controller
