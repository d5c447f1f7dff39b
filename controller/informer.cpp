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
  auto now = watchNow().time_since_epoch().count();
  for (size_t i = 0; i < options_.namespaces.size(); ++i) lastAlive_[i] = now;
}

std::chrono::steady_clock::duration Informer::quietFor() const {
  auto oldest = std::numeric_limits<std::int64_t>::max();
  for (size_t i = 0; i < options_.namespaces.size(); ++i) oldest = std::min<std::int64_t>(oldest, lastAlive_[i]);
  auto since = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(oldest));
  return std::max(watchNow() - since, std::chrono::steady_clock::duration::zero());
}

bool Informer::stale() const { return quietFor() > 2 * options_.watchIdleTimeout; }

Informer::~Informer() { stop(); }

void Informer::addHandler(Handler handler) { handlers_.push_back(std::move(handler)); }

void Informer::start() {
  if (!watchers_.empty()) return;
  auto now = watchNow().time_since_epoch().count();
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

// The 429 of a watch cache that is not ready yet (k8s.io/apiserver's cacher), not of a throttled client.
bool initializing(const ApiError& error) {
  return error.status().code == 429 && error.status().message.find("storage is (re)initializing") != std::string::npos;
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

// One namespace's watches, one after another, and what each leaves to the next. Every time that
// measures a watch (its signs of life, how long it stayed open) is on the watch clock: a network's
// silence is real time. The injected clock only paces the retries between watches.
struct Informer::Stream {
  Stream(size_t index, const std::string& ns, std::string scope, Clock::duration backoff)
      : index(index), ns(ns), scope(std::move(scope)), backoff(backoff) {}
  size_t index;
  const std::string& ns;
  std::string scope;            // for the log: the resource, and its namespace if any
  std::string resourceVersion;  // empty: the next step is a full sync (streamed, or listed)
  bool synced = false;
  bool watchedBefore = false;
  Clock::duration backoff;
  std::optional<std::chrono::steady_clock::time_point> openedAt;  // when the current watch was accepted
  // During a streamed sync: until the bookmark that ends the initial events, and what they brought
  // (the rest of the cache is gone).
  bool initial = false;
  std::set<ObjectKey> seen;
  bool listNext = false;  // a streamed sync was refused for now: the next sync lists
};

std::chrono::steady_clock::time_point Informer::watchNow() const {
  return options_.watchClock ? options_.watchClock() : std::chrono::steady_clock::now();
}

std::chrono::steady_clock::time_point Informer::alive(size_t index) {
  auto now = watchNow();
  lastAlive_[index] = now.time_since_epoch().count();
  return now;
}

void Informer::markSynced(Stream& stream) {
  ++listCount_;
  if (!stream.synced) {
    stream.synced = true;
    ++synced_;
  }
}

void Informer::run(size_t index, std::stop_token stop) {
  const std::string& ns = options_.namespaces[index];
  Stream stream(index, ns, options_.resource.resource + (ns.empty() ? "" : " in " + ns), options_.minBackoff);
  while (!stop.stop_requested()) {
    // A sync streamed through the watch itself: no list request and no page held in memory.
    bool streaming = stream.resourceVersion.empty() && streamInitialEvents_ && !stream.listNext;
    try {
      watchOnce(stream, streaming, stop);
    } catch (const ApiError& error) {
      if (streaming && refusesStreaming(error)) {
        // An API server without the WatchList feature (before 1.32, or 1.33) refuses the parameters:
        // list from now on.
        spdlog::info("informer {}: the API server does not stream the initial list ({}); listing instead",
                     stream.scope, error.what());
        streamInitialEvents_ = false;
        continue;
      }
      if (streaming && initializing(error)) {
        // The API server's cache of this resource is still filling (a fresh CRD, a restarted server):
        // it refuses watches for a second but serves a list from etcd. client-go's reflector lists
        // then too, rather than wait.
        spdlog::info("informer {}: {}; listing this once", stream.scope, error.what());
        stream.listNext = true;
        continue;
      }
      if (error.isGone()) {
        spdlog::info("informer {}: resourceVersion {} is too old, syncing again", stream.scope, stream.resourceVersion);
        stream.resourceVersion.clear();
        continue;
      }
      // A throttled server says how long to stay away; never come back sooner than that.
      auto delay = nextDelay(stream, error.retryAfter().value_or(std::chrono::seconds(0)));
      spdlog::warn("informer {}: {}; retrying in {} ms", stream.scope, error.what(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
      pause(delay, stop);
    } catch (const std::exception& error) {
      spdlog::warn("informer {}: {}; retrying", stream.scope, error.what());
      pause(nextDelay(stream, Clock::duration::zero()), stop);
    }
  }
}

void Informer::watchOnce(Stream& stream, bool streaming, std::stop_token stop) {
  stream.openedAt.reset();
  if (stream.resourceVersion.empty() && !streaming) {
    relist(stream.ns, stream.resourceVersion);
    stream.listNext = false;
    alive(stream.index);
    markSynced(stream);
  }
  WatchOptions watch;
  watch.labelSelector = options_.labelSelector;
  watch.resourceVersion = stream.resourceVersion;
  watch.timeoutSeconds = jitteredTimeoutSeconds(options_.watchTimeoutSeconds);
  watch.idleTimeout = options_.watchIdleTimeout;
  watch.sendInitialEvents = streaming;
  // Opening is not working: a server that accepts a watch and fails it at once must still be
  // backed off from. Only an event, or a watch open for its idle limit, resets the backoff.
  watch.onOpen = [&] { stream.openedAt = alive(stream.index); };
  if (stream.watchedBefore) ++watchRestarts_;
  stream.watchedBefore = true;
  stream.initial = streaming;
  stream.seen.clear();
  client_.watch(options_.resource, stream.ns, watch, [&](WatchEvent&& event) { apply(stream, std::move(event)); }, stop);
  if (!stop.stop_requested()) alive(stream.index);  // the server ended the watch: it is there
}

void Informer::apply(Stream& stream, WatchEvent&& event) {
  if (event.type == "ERROR") {
    throw ApiError(parseStatus(event.object.value("code", 500), event.object.dump()));
  }
  alive(stream.index);
  auto rv = versionOf(event.object);
  if (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED") {
    if (options_.transform) options_.transform(event.object);
    if (event.type == "DELETED") {
      cache_.erase(keyOf(event.object));
      notify(event.object);
    } else if (stream.initial) {
      auto one = nlohmann::json::array();
      one.push_back(std::move(event.object));
      for (const auto& changed : cache_.merge(std::move(one), stream.seen)) notify(*changed);
    } else {
      cache_.upsert(event.object);
      notify(event.object);
    }
  } else if (stream.initial && event.type == "BOOKMARK" && endsInitialEvents(event.object)) {
    for (const auto& gone : cache_.dropUnseen(stream.ns, stream.seen)) notify(*gone);
    stream.initial = false;
    markSynced(stream);
  }
  // BOOKMARK carries only the resourceVersion: the point to resume from. Not before the initial
  // events have ended: a watch cut off in the middle of them syncs again.
  if (!rv.empty() && !stream.initial) stream.resourceVersion = rv;
  stream.backoff = options_.minBackoff;  // the connection works
}

// The wait before the next watch (never shorter than `atLeast`), doubling the backoff for the one
// after. A watch that stayed open for its idle limit was working (a quiet resource with no bookmark
// ends that way every time): it starts again from the least backoff, or a quiet informer would back
// off up to its maximum and go stale with nothing wrong.
Clock::duration Informer::nextDelay(Stream& stream, Clock::duration atLeast) {
  if (stream.openedAt && watchNow() - *stream.openedAt >= options_.watchIdleTimeout) stream.backoff = options_.minBackoff;
  auto delay = std::max(stream.backoff, atLeast);
  stream.backoff = std::min(stream.backoff * 2, options_.maxBackoff);
  return delay;
}

Informer::Handler enqueueKey(WorkQueue& queue) {
  return [&queue](const nlohmann::json& object) { queue.add(keyOf(object)); };
}

}  // namespace vto::controller
