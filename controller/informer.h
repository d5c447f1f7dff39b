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

struct InformerOptions {
  Resource resource{};
  std::vector<std::string> namespaces{};  // empty: all namespaces (one watch); else one watch each
  std::string labelSelector{};
  std::string indexedLabel{};  // see ObjectCache
  int pageSize = 500;
  int watchTimeoutSeconds = 300;
  Clock::duration minBackoff = std::chrono::milliseconds(200);
  Clock::duration maxBackoff = std::chrono::seconds(30);
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
  // How many full lists have been made (one per namespace at start, one more per 410).
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
  std::mutex pauseMutex_;
  std::condition_variable pauseWake_;
  std::vector<std::jthread> watchers_;
};

// A handler that adds the object's namespace/name to `queue`.
Informer::Handler enqueueKey(WorkQueue& queue);

}  // namespace vto::controller
