#pragma once
// Keeps an ObjectCache in step with the API server for one resource: list, then watch from the
// list's resourceVersion (with bookmarks so the resume point stays fresh). A dropped connection
// resumes from the last resourceVersion seen; 410 Gone (history compacted) means a full relist;
// while the API server is unreachable it retries with exponential backoff on the injected clock.
// Each change is passed to the handlers, which typically enqueue the object's key.
//
// A watch knows it is alive: the API server sends a bookmark every minute, so a watch that brings
// no byte for `watchIdleTimeout` is dead (a silent partition, a NAT that forgot the flow, a hung
// server) and is restarted from the last resourceVersion. A watch is measured on one clock, the
// steady clock (InformerOptions::watchClock): how long it has been quiet (no event, bookmark or
// accepted watch) and how long it stayed open, against the idle limit. A network's silence is real
// time, whatever the operator's clock says; the injected clock only paces the retries.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "controller/kube_client.h"
#include "controller/object_cache.h"

namespace vto::controller {

class WorkQueue;

// The default InformerOptions::transform: drops what vto never reads from a cached object, as
// controller-runtime's TransformStripManagedFields does: metadata.managedFields and kubectl's
// last-applied-configuration annotation (a second copy of the whole spec). Objects from the cache
// are therefore never to be PUT back to the main resource (that would erase the annotation);
// status updates and patches are unaffected (the API server keeps managedFields a write omits).
void stripUnreadFields(nlohmann::json& object);

struct InformerOptions {
  Resource resource{};
  std::vector<std::string> namespaces{};  // empty: all namespaces (one watch); else one watch each
  std::string labelSelector{};
  std::string indexedLabel{};  // see ObjectCache
  // Objects per list page: one page is held parsed at a time (a TrainingRun with its status and
  // managedFields is ~15 KiB parsed, so 100 bound a relist to a few MiB; client-go uses 500).
  int pageSize = 100;
  // Sync through a watch that streams the current objects first (WatchOptions::sendInitialEvents)
  // instead of listing; an API server that refuses it is listed instead, from then on.
  bool streamInitialEvents = true;
  // The server ends each watch after a random time between this and twice this (client-go's
  // jitter), so that watches started together do not all restart together.
  int watchTimeoutSeconds = 300;
  // No byte for this long (the API server's bookmarks come every minute) and the watch is dead:
  // closed and started again from the last resourceVersion. A watch quiet for twice this is stale
  // (stale(), /readyz, vto_informer_watch_stale).
  std::chrono::milliseconds watchIdleTimeout{std::chrono::seconds(90)};
  Clock::duration minBackoff = std::chrono::milliseconds(200);
  Clock::duration maxBackoff = std::chrono::seconds(30);
  // Applied to every listed or watched object before it is cached or handed to a handler (a cache
  // transform); null keeps objects whole.
  std::function<void(nlohmann::json&)> transform = stripUnreadFields;
  // Whether the manager's readiness waits for this informer's sync and fails while its watch is stale.
  // False for a resource another product may install later (Kueue's Workloads): its absence is told
  // where it matters, not by making the whole operator unready.
  bool gatesReadiness = true;
  // The steady clock every watch is measured on (signs of life, how long a watch stayed open); null:
  // std::chrono::steady_clock. Tests inject one.
  std::function<std::chrono::steady_clock::time_point()> watchClock{};
};

class Informer {
 public:
  // Receives the object that changed (for a deletion, its last known state).
  using Handler = std::function<void(const nlohmann::json& object)>;

  Informer(KubeClient& client, const Clock& clock, InformerOptions options);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers are added before start().
  void addHandler(Handler handler);
  void start();
  void stop();

  // True once every namespace's first list is in the cache.
  bool hasSynced() const;
  const ObjectCache& cache() const { return cache_; }
  bool gatesReadiness() const { return options_.gatesReadiness; }
  // How many full syncs (streamed or listed) have completed: one per namespace at start, one more per 410.
  int listCount() const { return listCount_; }

  // The resource watched (the metrics' `informer` label).
  const std::string& name() const { return options_.resource.resource; }
  // The longest any of its watches has gone without a sign of life: an event, a bookmark, the
  // server accepting a watch or ending one cleanly, a completed list. Real time (steady clock).
  std::chrono::steady_clock::duration quietFor() const;
  // Quiet for more than twice the idle limit: the restart after the first one did not bring the
  // watch back. The API server may be unreachable; the cache is no longer current.
  bool stale() const;
  // Watches started again after one ended (timeout, idle limit, error, 410).
  long watchRestarts() const { return watchRestarts_; }

 private:
  struct Stream;  // one namespace's watches (informer.cpp)
  void run(size_t index, std::stop_token stop);
  // Syncs if no resourceVersion is left (listing, unless `streaming`), then one watch until it ends.
  void watchOnce(Stream& stream, bool streaming, std::stop_token stop);
  void apply(Stream& stream, WatchEvent&& event);
  void markSynced(Stream& stream);
  Clock::duration nextDelay(Stream& stream, Clock::duration atLeast);
  std::chrono::steady_clock::time_point watchNow() const;
  // A sign of life of namespace `index`'s watch, now (returned).
  std::chrono::steady_clock::time_point alive(size_t index);
  void relist(const std::string& ns, std::string& resourceVersion);
  void notify(const nlohmann::json& object);
  // Waits on the clock until `delay` has passed or stop is requested.
  void pause(Clock::duration delay, std::stop_token stop);

  KubeClient& client_;
  const Clock& clock_;
  InformerOptions options_;
  ObjectCache cache_;
  std::vector<Handler> handlers_;
  std::atomic<int> synced_{0};
  std::atomic<int> listCount_{0};
  // Whether to sync through a streamed watch (InformerOptions::streamInitialEvents), until the API
  // server refuses it once.
  std::atomic<bool> streamInitialEvents_{true};
  std::mutex pauseMutex_;
  std::condition_variable pauseWake_;
  std::vector<std::jthread> watchers_;
  // Per namespace: steady-clock nanoseconds of its last sign of life.
  std::unique_ptr<std::atomic<std::int64_t>[]> lastAlive_;
  std::atomic<long> watchRestarts_{0};
};

// A handler that adds the object's namespace/name to `queue`.
Informer::Handler enqueueKey(WorkQueue& queue);

}  // namespace vto::controller
