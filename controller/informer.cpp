#include "controller/informer.h"

#include <spdlog/spdlog.h>

#include "controller/workqueue.h"

namespace vto::controller {

void stripUnreadFields(nlohmann::json& object) {
  if (!object.is_object()) return;
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return;
  metadata->erase("managedFields");
  auto annotations = metadata->find("annotations");
  if (annotations != metadata->end() && annotations->is_object()) {
    annotations->erase("kubectl.kubernetes.io/last-applied-configuration");
    if (annotations->empty()) metadata->erase(annotations);
  }
}

Informer::Informer(KubeClient& client, const Clock& clock, InformerOptions options)
    : client_(client), clock_(clock), options_(std::move(options)), cache_(options_.indexedLabel) {
  if (options_.namespaces.empty()) options_.namespaces.push_back("");  // "" = all namespaces
}

Informer::~Informer() { stop(); }

void Informer::addHandler(Handler handler) { handlers_.push_back(std::move(handler)); }

void Informer::start() {
  if (!watchers_.empty()) return;
  for (const auto& ns : options_.namespaces) {
    watchers_.emplace_back([this, ns](std::stop_token stop) { run(ns, stop); });
  }
}

void Informer::stop() {
  for (auto& watcher : watchers_) watcher.request_stop();
  {
    std::lock_guard guard(pauseMutex_);
    pauseWake_.notify_all();
  }
  watchers_.clear();  // jthread joins
}

bool Informer::hasSynced() const {
  return synced_ >= static_cast<int>(options_.namespaces.size());
}

void Informer::notify(const nlohmann::json& object) {
  for (const auto& handler : handlers_) handler(object);
}

void Informer::pause(Clock::duration delay, std::stop_token stop) {
  auto deadline = clock_.now() + delay;
  std::unique_lock lock(pauseMutex_);
  while (!stop.stop_requested() && clock_.now() < deadline) {
    clock_.waitUntil(lock, pauseWake_, deadline);
  }
}

void Informer::relist(const std::string& ns, std::string& resourceVersion) {
  ListOptions options;
  options.labelSelector = options_.labelSelector;
  options.limit = options_.pageSize;
  // Page by page, each page stripped and merged into the cache as it arrives: only one page is
  // ever held parsed (holding the whole list was the operator's peak memory at start-up).
  std::set<ObjectKey> seen;
  std::string listVersion;
  bool first = true;
  do {
    auto page = client_.list(options_.resource, ns, options);
    if (first) listVersion = page.resourceVersion;
    first = false;
    if (options_.transform) {
      for (auto& item : page.items) options_.transform(item);
    }
    for (const auto& changed : cache_.merge(std::move(page.items), seen)) notify(*changed);
    options.continueToken = page.continueToken;
    options.resourceVersion.clear();  // continued pages come from the first page's snapshot
  } while (!options.continueToken.empty());
  for (const auto& gone : cache_.dropUnseen(ns, seen)) notify(*gone);
  resourceVersion = listVersion;
  ++listCount_;
}

void Informer::run(const std::string& ns, std::stop_token stop) {
  const std::string scope = options_.resource.resource + (ns.empty() ? "" : " in " + ns);
  std::string resourceVersion;  // empty: the next step is a full list
  bool synced = false;
  Clock::duration backoff = options_.minBackoff;
  while (!stop.stop_requested()) {
    try {
      if (resourceVersion.empty()) {
        relist(ns, resourceVersion);
        if (!synced) {
          synced = true;
          ++synced_;
        }
      }
      WatchOptions watch;
      watch.labelSelector = options_.labelSelector;
      watch.resourceVersion = resourceVersion;
      watch.timeoutSeconds = options_.watchTimeoutSeconds;
      client_.watch(
          options_.resource, ns, watch,
          [&](WatchEvent&& event) {
            if (event.type == "ERROR") {
              throw ApiError(parseStatus(event.object.value("code", 500), event.object.dump()));
            }
            auto rv = event.object.value("/metadata/resourceVersion"_json_pointer, std::string());
            if (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED") {
              if (options_.transform) options_.transform(event.object);
              if (event.type == "DELETED") {
                cache_.erase(keyOf(event.object));
              } else {
                cache_.upsert(event.object);
              }
              notify(event.object);
            }
            // BOOKMARK carries only the resourceVersion: the point to resume from.
            if (!rv.empty()) resourceVersion = rv;
            backoff = options_.minBackoff;  // the connection works
          },
          stop);
    } catch (const ApiError& error) {
      if (error.isGone()) {
        spdlog::info("informer {}: resourceVersion {} is too old, listing again", scope,
                     resourceVersion);
        resourceVersion.clear();
        continue;
      }
      // A throttled server says how long to stay away; never come back sooner than that.
      auto delay = std::max<Clock::duration>(backoff, error.retryAfter().value_or(std::chrono::seconds(0)));
      spdlog::warn("informer {}: {}; retrying in {} ms", scope, error.what(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
      pause(delay, stop);
      backoff = std::min(backoff * 2, options_.maxBackoff);
    } catch (const std::exception& error) {
      spdlog::warn("informer {}: {}; retrying", scope, error.what());
      pause(backoff, stop);
      backoff = std::min(backoff * 2, options_.maxBackoff);
    }
  }
}

Informer::Handler enqueueKey(WorkQueue& queue) {
  return [&queue](const nlohmann::json& object) { queue.add(keyOf(object)); };
}

}  // namespace vto::controller
