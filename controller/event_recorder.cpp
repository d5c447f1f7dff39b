#include "controller/event_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <optional>

#include "base/json_fields.h"
#include "base/rfc3339.h"

namespace vto::controller {

const Resource& eventResource() {
  static const Resource events{"", "v1", "events", true};
  return events;
}

namespace {

const char* typeName(EventType type) { return type == EventType::Warning ? "Warning" : "Normal"; }

}  // namespace

KubeEventRecorder::KubeEventRecorder(KubeClient& client, const Clock& clock, std::string component,
                                     std::string instance, EventRecorderOptions options)
    : client_(client),
      clock_(clock),
      component_(std::move(component)),
      instance_(std::move(instance)),
      options_(std::move(options)) {
  for (size_t i = 0; i < static_cast<size_t>(std::max(options_.writers, 1)); ++i) writers_.emplace_back([this, i] { drain(i); });
}

KubeEventRecorder::~KubeEventRecorder() {
  {
    std::lock_guard guard(mutex_);
    stopping_ = true;
  }
  wakeFirst_.notify_all();
  wake_.notify_all();
  for (auto& writer : writers_) writer.join();
}

void KubeEventRecorder::event(const nlohmann::json& object, EventType type,
                              const std::string& reason, const std::string& message) {
  try {
    std::string key = stringField(object, "kind") + "/" + metadataField(object, "namespace") + "/" + metadataField(object, "name") +
                      "/" + metadataField(object, "uid") + "/" + typeName(type) + "/" + reason + "/" + message;
    auto now = clock_.now();
    std::unique_lock lock(mutex_);
    auto queued = queued_.find(key);
    if (queued != queued_.end()) {  // not written yet: this repeat rides along with it
      ++queued->second->repeats;
      queued->second->last = now;
      return;
    }
    if (queue_.size() >= options_.queueCapacity || stopping_) {
      lock.unlock();
      countDropped(1, reason + " on " + metadataField(object, "namespace") + "/" + metadataField(object, "name"));
      return;
    }
    // Only what the Event names; the rest of the object is not kept.
    nlohmann::json involved = {{"apiVersion", stringField(object, "apiVersion")},
                               {"kind", stringField(object, "kind")},
                               {"name", metadataField(object, "name")},
                               {"namespace", metadataField(object, "namespace")},
                               {"uid", metadataField(object, "uid")},
                               {"resourceVersion", metadataField(object, "resourceVersion")}};
    queue_.push_back(Pending{key, std::move(involved), type, reason, message, now, now, 1});
    queued_[key] = std::prev(queue_.end());
    // Under a backlog every writer that may take it is woken; otherwise the first alone (waking
    // writers that would go back to sleep costs a context switch each per Event).
    if (queue_.size() > options_.backlogPerWriter) {
      wake_.notify_all();
      wakeFirst_.notify_one();
      return;
    }
  } catch (const std::exception& error) {
    spdlog::warn("could not queue event {}: {}", reason, error.what());
    return;
  }
  wakeFirst_.notify_one();
}

void KubeEventRecorder::flush() {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && writing_.empty(); });
}

uint64_t KubeEventRecorder::dropped() const {
  std::lock_guard guard(mutex_);
  return dropped_;
}

void KubeEventRecorder::countDropped(uint64_t count, const std::string& latest) {
  uint64_t before, after;
  {
    std::lock_guard guard(mutex_);
    before = dropped_;
    dropped_ += count;
    after = dropped_;
  }
  if (options_.onDropped) options_.onDropped(count);
  // Logged when the total passes 1, 2, 4, 8, ...: a full queue means a slow API server, not a log flood.
  if (std::bit_floor(after) > before) {
    spdlog::warn("event queue full ({} events): dropped {} event(s) so far, the latest {}", options_.queueCapacity,
                 after, latest);
  }
}

std::list<KubeEventRecorder::Pending>::iterator KubeEventRecorder::nextWritable() {
  // Each key is queued at most once and at most one per writer is held, so this skips few entries.
  return std::find_if(queue_.begin(), queue_.end(), [this](const Pending& p) { return !writing_.contains(p.key); });
}

bool KubeEventRecorder::mayWrite(size_t index) const {
  return index == 0 || stopping_ || queue_.size() > index * options_.backlogPerWriter;
}

void KubeEventRecorder::wakeWriters() {
  wakeFirst_.notify_all();
  wake_.notify_all();
}

void KubeEventRecorder::drain(size_t index) {
  std::unique_lock lock(mutex_);
  auto& wake = index == 0 ? wakeFirst_ : wake_;
  while (true) {
    auto next = queue_.end();
    wake.wait(lock, [&] {
      next = mayWrite(index) ? nextWritable() : queue_.end();
      return next != queue_.end() || (stopping_ && queue_.empty());
    });
    if (next == queue_.end()) return;  // stopping, and everything is written
    Pending pending = std::move(*next);
    queued_.erase(pending.key);
    queue_.erase(next);
    writing_.insert(pending.key);
    lock.unlock();
    bool written = true;
    try {
      write(pending);
    } catch (const std::exception& error) {
      written = false;
      spdlog::warn("could not record event {} on {}/{}: {}", pending.reason,
                   stringField(pending.involvedObject, "namespace"), stringField(pending.involvedObject, "name"),
                   error.what());
    }
    lock.lock();
    writing_.erase(pending.key);
    // Shutting down with the API server failing: do not wait out a timeout per queued event.
    uint64_t abandoned = 0;
    if (stopping_ && !written && !queue_.empty()) {
      abandoned = queue_.size();
      queue_.clear();
      queued_.clear();
    }
    if (queue_.empty() && writing_.empty()) drained_.notify_all();
    // A repeat of this key queued meanwhile may go now, and stopping writers may finish. (Not on
    // every write: that would wake every idle writer per Event.)
    if (stopping_ || queued_.contains(pending.key)) wakeWriters();
    if (abandoned > 0) {
      lock.unlock();
      countDropped(abandoned, "queued at shutdown, the API server failing");
      lock.lock();
    }
  }
}

void KubeEventRecorder::write(const Pending& pending) {
  std::optional<Recorded> existing;  // a copy: this writer holds the key, no other touches its entry
  {
    std::lock_guard guard(recordedMutex_);
    auto found = recorded_.find(pending.key);
    if (found != recorded_.end()) {
      if (pending.first - found->second.writtenAt <= options_.aggregationWindow) {
        existing = found->second;
      } else {
        recorded_.erase(found);
      }
    }
  }
  if (existing) {
    if (bumpExisting(*existing, pending)) {
      remember(pending.key, *existing);
      return;
    }
    std::lock_guard guard(recordedMutex_);
    recorded_.erase(pending.key);
  }
  createNew(pending);
}

bool KubeEventRecorder::bumpExisting(Recorded& recorded, const Pending& pending) {
  try {
    client_.patch(eventResource(), recorded.ns, recorded.eventName, PatchType::Merge,
                  {{"count", recorded.count + pending.repeats}, {"lastTimestamp", rfc3339(pending.last)}});
    recorded.count += pending.repeats;
    recorded.writtenAt = pending.last;
    return true;
  } catch (const ApiError& error) {
    if (error.isNotFound()) return false;  // expired (events live an hour): record it anew
    throw;
  }
}

void KubeEventRecorder::createNew(const Pending& pending) {
  const auto& involved = pending.involvedObject;
  std::string ns = stringField(involved, "namespace");
  if (ns.empty()) ns = "default";
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", stringField(involved, "name") + "." + uniqueSuffix(pending.first)}, {"namespace", ns}}},
      {"involvedObject", involved},
      {"type", typeName(pending.type)},
      {"reason", pending.reason},
      {"message", pending.message},
      {"source", {{"component", component_}, {"host", instance_}}},
      {"reportingComponent", component_},
      {"reportingInstance", instance_},
      {"firstTimestamp", rfc3339(pending.first)},
      {"lastTimestamp", rfc3339(pending.last)},
      {"count", pending.repeats}};
  auto name = event["metadata"]["name"].get<std::string>();
  client_.createVersion(eventResource(), ns, event);  // the answer is not read: the name is ours
  remember(pending.key, {std::move(name), ns, pending.repeats, pending.last});
}

void KubeEventRecorder::remember(const std::string& key, Recorded recorded) {
  std::lock_guard guard(recordedMutex_);
  if (recorded_.size() >= options_.maxRemembered) {
    // Forget what can no longer aggregate; if everything still can, forget the oldest half.
    auto now = clock_.now();
    std::erase_if(recorded_, [&](const auto& entry) {
      return now - entry.second.writtenAt > options_.aggregationWindow;
    });
    if (recorded_.size() >= options_.maxRemembered) {
      std::vector<Clock::time_point> times;
      times.reserve(recorded_.size());
      for (const auto& [_, entry] : recorded_) times.push_back(entry.writtenAt);
      auto middle = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
      std::nth_element(times.begin(), middle, times.end());
      auto cutoff = *middle;
      std::erase_if(recorded_, [&](const auto& entry) { return entry.second.writtenAt <= cutoff; });
    }
  }
  recorded_[key] = std::move(recorded);
}

// Unique like client-go's (the object's name and the time in hex nanoseconds), and never repeated
// by this process even when two events share a timestamp.
std::string KubeEventRecorder::uniqueSuffix(Clock::time_point at) {
  std::lock_guard guard(recordedMutex_);
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  lastSuffix_ = std::max<int64_t>(nanos, lastSuffix_ + 1);
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, "%llx", static_cast<unsigned long long>(lastSuffix_));
  return suffix;
}

}  // namespace vto::controller
