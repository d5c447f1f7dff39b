#pragma once
// Keeps an ObjectCache in step with the API server for one resource: list, then watch from the
// list's resourceVersion (with bookmarks so the resume point stays fresh). A dropped connection
// resumes from the last resourceVersion seen; 410 Gone (history compacted) means a full relist;
// while the API server is unreachable it retries with exponential backoff on the injected clock.
// Each change is passed to the handlers, which typically enqueue the object's key.
#include <atomic>
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
  int watchTimeoutSeconds = 300;
  Clock::duration minBackoff = std::chrono::milliseconds(200);
  Clock::duration maxBackoff = std::chrono::seconds(30);
  // Applied to every listed or watched object before it is cached or handed to a handler (a cache
  // transform); null keeps objects whole.
  std::function<void(nlohmann::json&)> transform = stripUnreadFields;
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
  // How many full syncs (streamed or listed) have completed: one per namespace at start, one more per 410.
  int listCount() const { return listCount_; }

 private:
  void run(const std::string& ns, std::stop_token stop);
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
};

// A handler that adds the object's namespace/name to `queue`.
Informer::Handler enqueueKey(WorkQueue& queue);

}  // namespace vto::controller
