#pragma once
// Kubernetes Events about an object, so that `kubectl describe` tells the user what happened.
// Recording never blocks the caller on the API server: events go into a bounded queue that a few
// threads write out (never two writes of the same event at once, so aggregation stays exact). Repeats of the same event (same object, type, reason and message) are
// aggregated as client-go's broadcaster does: one Event whose count grows and whose lastTimestamp
// moves, not a flood; repeats still queued merge into one write.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "controller/kube_client.h"

namespace vto::controller {

enum class EventType { Normal, Warning };

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  // `object` is the involved object as read from the API (apiVersion, kind, metadata). `reason` is
  // UpperCamelCase (e.g. JobCreated); `message` is a sentence for humans. Never throws: events are
  // best effort and must not fail a reconcile.
  virtual void event(const nlohmann::json& object, EventType type, const std::string& reason,
                     const std::string& message) = 0;
};

struct EventRecorderOptions {
  // Distinct events waiting to be written; beyond it new ones are dropped (and counted), because a
  // reconcile must never wait for an Event. Repeats of a queued event do not take a place. 1,024
  // dropped at least 512 of 2,000 Events when 1,000 runs were submitted on a loaded machine; an entry
  // is a few hundred bytes, so 8,192 cost about 2-4 MiB at most.
  size_t queueCapacity = 8192;
  // A repeat within this time of the last write bumps the existing Event's count; a later one
  // starts a new Event (client-go's correlator works the same way, with ten minutes).
  Clock::duration aggregationWindow = std::chrono::minutes(10);
  // Events remembered for aggregation (bounded memory); the oldest are forgotten first.
  size_t maxRemembered = 4096;
  // Threads writing Events. One writer managed ~90 Events a second against a busy API server and
  // dropped 2,048 of 10,000 JobCreated Events when 10,000 runs were submitted at once; each writer
  // holds at most one kube connection.
  int writers = 4;
  // Writers beyond the first join only while more than this many Events per writer wait. Events are
  // history, written behind the work they describe: when 1,000 runs arrive at once, four writers kept
  // four Event writes in flight beside the eight reconciles' job writes, and took that share of a busy
  // API server from them. A backlog (10,000 runs) still gets every writer. 0: all writers always.
  size_t backlogPerWriter = 256;
  // Called with the number of events just dropped (outside the recorder's lock): cmd/ counts them
  // as vto_events_dropped_total, so that a full queue shows on a dashboard, not only in the log.
  std::function<void(uint64_t)> onDropped{};
};

// Writes core/v1 Events (what `kubectl describe` and `kubectl get events` show) through a KubeClient.
class KubeEventRecorder final : public EventRecorder {
 public:
  // `component` is the reporting controller (e.g. "vto"), `instance` this process (e.g. the pod name).
  KubeEventRecorder(KubeClient& client, const Clock& clock, std::string component,
                    std::string instance, EventRecorderOptions options = {});
  // Writes what is still queued (giving up on the rest at the first failure), then stops.
  ~KubeEventRecorder() override;
  KubeEventRecorder(const KubeEventRecorder&) = delete;
  KubeEventRecorder& operator=(const KubeEventRecorder&) = delete;

  // Queues the event and returns at once.
  void event(const nlohmann::json& object, EventType type, const std::string& reason,
             const std::string& message) override;
  // Waits until every event queued so far has been written (or failed).
  void flush();
  // Events dropped because the queue was full (or because shutdown found the API server failing).
  uint64_t dropped() const;

 private:
  struct Pending {
    std::string key;  // the aggregation key
    nlohmann::json involvedObject;
    EventType type;
    std::string reason;
    std::string message;
    Clock::time_point first;
    Clock::time_point last;
    int repeats = 1;
  };
  struct Recorded {
    std::string eventName;
    std::string ns;
    int count;
    Clock::time_point writtenAt;
  };

  void drain(size_t index);
  // Whether writer `index` takes work now (the first always; the others only under a backlog).
  bool mayWrite(size_t index) const;
  void wakeWriters();
  // The first queued event whose key no writer holds, or queue_.end().
  std::list<Pending>::iterator nextWritable();
  void countDropped(uint64_t count, const std::string& latest);  // `latest`: which, for the log
  void write(const Pending& pending);
  bool bumpExisting(Recorded& recorded, const Pending& pending);
  void createNew(const Pending& pending);
  void remember(const std::string& key, Recorded recorded);
  std::string uniqueSuffix(Clock::time_point at);

  KubeClient& client_;
  const Clock& clock_;
  std::string component_;
  std::string instance_;
  EventRecorderOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wakeFirst_;  // the first writer: something queued, or stop
  std::condition_variable wake_;       // the other writers: a backlog, or stop
  std::condition_variable drained_;  // flush(): the queue is empty and nothing is being written
  std::list<Pending> queue_;
  std::unordered_map<std::string, std::list<Pending>::iterator> queued_;  // by aggregation key
  std::unordered_set<std::string> writing_;  // keys a writer holds (at most one per writer)
  bool stopping_ = false;
  uint64_t dropped_ = 0;

  // What was written, for aggregation; shared by the writers. A key's entry is only touched by the
  // writer that holds the key.
  std::mutex recordedMutex_;
  std::unordered_map<std::string, Recorded> recorded_;  // by aggregation key
  int64_t lastSuffix_ = 0;

  std::vector<std::thread> writers_;  // last: they start after everything above exists
};

// The Event resource (core/v1).
const Resource& eventResource();

}  // namespace vto::controller
