#include "controller/informer.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <optional>
#include <random>

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
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      cache_(options_.indexedLabel),
      streamInitialEvents_(options_.streamInitialEvents) {
  if (options_.namespaces.empty()) options_.namespaces.push_back("");  // "" = all namespaces
  lastAlive_ = std::make_unique<std::atomic<std::int64_t>[]>(options_.namespaces.size());
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  for (size_t i = 0; i < options_.namespaces.size(); ++i) lastAlive_[i] = now;
}

std::chrono::steady_clock::duration Informer::quietFor() const {
  auto oldest = std::numeric_limits<std::int64_t>::max();
  for (size_t i = 0; i < options_.namespaces.size(); ++i) oldest = std::min<std::int64_t>(oldest, lastAlive_[i]);
  auto since = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(oldest));
  return std::max(std::chrono::steady_clock::now() - since, std::chrono::steady_clock::duration::zero());
}

bool Informer::stale() const { return quietFor() > 2 * options_.watchIdleTimeout; }

Informer::~Informer() { stop(); }

void Informer::addHandler(Handler handler) { handlers_.push_back(std::move(handler)); }

void Informer::start() {
  if (!watchers_.empty()) return;
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  for (size_t i = 0; i < options_.namespaces.size(); ++i) {
    lastAlive_[i] = now;
    watchers_.emplace_back([this, i](std::stop_token stop) { run(i, stop); });
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
}

namespace {
// What a server without the WatchList feature answers to sendInitialEvents: 422 from 1.27 on (the
// parameter is forbidden there), 400 for a parameter it cannot read, 501 from a client that cannot.
bool refusesStreaming(const ApiError& error) {
  auto code = error.status().code;
  return code == 400 || code == 422 || code == 501;
}

bool endsInitialEvents(const nlohmann::json& bookmark) {
  return bookmark.value("/metadata/annotations/k8s.io~1initial-events-end"_json_pointer, std::string()) == "true";
}
}  // namespace

namespace {
// client-go's reflector: a timeout between the minimum and twice it, so watches started together
// (every replica after a rollout, every namespace of one informer) do not end together.
int jitteredTimeoutSeconds(int minimum) {
  thread_local std::mt19937 random{std::random_device{}()};
  return std::uniform_int_distribution<int>(minimum, 2 * minimum)(random);
}
}  // namespace

void Informer::run(size_t index, std::stop_token stop) {
  const std::string& ns = options_.namespaces[index];
  auto alive = [this, index] { lastAlive_[index] = std::chrono::steady_clock::now().time_since_epoch().count(); };
  bool watchedBefore = false;
  const std::string scope = options_.resource.resource + (ns.empty() ? "" : " in " + ns);
  std::string resourceVersion;  // empty: the next step is a full sync (streamed, or listed)
  bool synced = false;
  auto markSynced = [&] {
    ++listCount_;
    if (!synced) {
      synced = true;
      ++synced_;
    }
  };
  Clock::duration backoff = options_.minBackoff;
  std::optional<Clock::time_point> openedAt;  // when the current watch was accepted
  // The wait before the next attempt (never shorter than `atLeast`), doubling the backoff for the one
  // after. A watch that stayed open for its idle limit was working (a quiet resource with no bookmark
  // ends that way every time): it starts again from the least backoff, or a quiet informer would back
  // off up to its maximum and go stale with nothing wrong.
  auto nextDelay = [&](Clock::duration atLeast) {
    if (openedAt && clock_.now() - *openedAt >= options_.watchIdleTimeout) backoff = options_.minBackoff;
    auto delay = std::max(backoff, atLeast);
    backoff = std::min(backoff * 2, options_.maxBackoff);
    return delay;
  };
  while (!stop.stop_requested()) {
    openedAt.reset();
    // A sync streamed through the watch itself: no list request and no page held in memory.
    bool streaming = resourceVersion.empty() && streamInitialEvents_;
    try {
      if (resourceVersion.empty() && !streaming) {
        relist(ns, resourceVersion);
        alive();
        markSynced();
      }
      WatchOptions watch;
      watch.labelSelector = options_.labelSelector;
      watch.resourceVersion = resourceVersion;
      watch.timeoutSeconds = jitteredTimeoutSeconds(options_.watchTimeoutSeconds);
      watch.idleTimeout = options_.watchIdleTimeout;
      watch.sendInitialEvents = streaming;
      // Opening is not working: a server that accepts a watch and fails it at once must still be
      // backed off from. Only an event, or a watch open for its idle limit, resets the backoff.
      watch.onOpen = [&] {
        alive();
        openedAt = clock_.now();
      };
      if (watchedBefore) ++watchRestarts_;
      watchedBefore = true;
      bool initial = streaming;  // until the bookmark that ends the initial events
      std::set<ObjectKey> seen;  // what the initial events brought: the rest of the cache is gone
      client_.watch(
          options_.resource, ns, watch,
          [&](WatchEvent&& event) {
            if (event.type == "ERROR") {
              throw ApiError(parseStatus(event.object.value("code", 500), event.object.dump()));
            }
            alive();
            auto rv = versionOf(event.object);
            if (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED") {
              if (options_.transform) options_.transform(event.object);
              if (event.type == "DELETED") {
                cache_.erase(keyOf(event.object));
                notify(event.object);
              } else if (initial) {
                auto one = nlohmann::json::array();
                one.push_back(std::move(event.object));
                for (const auto& changed : cache_.merge(std::move(one), seen)) notify(*changed);
              } else {
                cache_.upsert(event.object);
                notify(event.object);
              }
            } else if (initial && event.type == "BOOKMARK" && endsInitialEvents(event.object)) {
              for (const auto& gone : cache_.dropUnseen(ns, seen)) notify(*gone);
              initial = false;
              markSynced();
            }
            // BOOKMARK carries only the resourceVersion: the point to resume from. Not before the
            // initial events have ended: a watch cut off in the middle of them syncs again.
            if (!rv.empty() && !initial) resourceVersion = rv;
            backoff = options_.minBackoff;  // the connection works
          },
          stop);
      if (!stop.stop_requested()) alive();  // the server ended the watch: it is there
    } catch (const ApiError& error) {
      if (streaming && refusesStreaming(error)) {
        // An API server without the WatchList feature (before 1.32, or 1.33) refuses the parameters:
        // list from now on.
        spdlog::info("informer {}: the API server does not stream the initial list ({}); listing instead", scope,
                     error.what());
        streamInitialEvents_ = false;
        continue;
      }
      if (error.isGone()) {
        spdlog::info("informer {}: resourceVersion {} is too old, syncing again", scope, resourceVersion);
        resourceVersion.clear();
        continue;
      }
      // A throttled server says how long to stay away; never come back sooner than that.
      auto delay = nextDelay(error.retryAfter().value_or(std::chrono::seconds(0)));
      spdlog::warn("informer {}: {}; retrying in {} ms", scope, error.what(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
      pause(delay, stop);
    } catch (const std::exception& error) {
      spdlog::warn("informer {}: {}; retrying", scope, error.what());
      pause(nextDelay(Clock::duration::zero()), stop);
    }
  }
}

Informer::Handler enqueueKey(WorkQueue& queue) {
  return [&queue](const nlohmann::json& object) { queue.add(keyOf(object)); };
}

}  // namespace vto::controller
