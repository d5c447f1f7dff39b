#pragma once
// Kubernetes Events about an object, so that `kubectl describe` tells the user what happened.
// Repeats of the same event (same object, type, reason and message) are aggregated as
// client-go does: one Event whose count grows and whose lastTimestamp moves, not a flood.
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

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

// Writes core/v1 Events (what `kubectl describe` and `kubectl get events` show) through a KubeClient.
class KubeEventRecorder final : public EventRecorder {
 public:
  // `component` is the reporting controller (e.g. "vto"), `instance` this process (e.g. the pod name).
  KubeEventRecorder(KubeClient& client, const Clock& clock, std::string component,
                    std::string instance);
  void event(const nlohmann::json& object, EventType type, const std::string& reason,
             const std::string& message) override;

 private:
  struct Recorded {
    std::string eventName;
    int count;
  };
  bool bumpExisting(const std::string& ns, Recorded& recorded, const std::string& now);
  void createNew(const nlohmann::json& object, const std::string& aggregationKey, EventType type,
                 const std::string& reason, const std::string& message, const std::string& now);

  KubeClient& client_;
  const Clock& clock_;
  std::string component_;
  std::string instance_;
  std::mutex mutex_;
  std::map<std::string, Recorded> recorded_;  // by aggregation key
};

// The Event resource (core/v1).
const Resource& eventResource();

}  // namespace vto::controller
