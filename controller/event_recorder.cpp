#include "controller/event_recorder.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "controller/time_format.h"

namespace vto::controller {

const Resource& eventResource() {
  static const Resource events{"", "v1", "events", true};
  return events;
}

namespace {

// Enough remembered events to aggregate a busy controller's repeats; older ones simply start anew.
constexpr size_t kMaxRemembered = 4096;

std::string meta(const nlohmann::json& object, const char* field) {
  return object.value(nlohmann::json::json_pointer(std::string("/metadata/") + field), std::string());
}

}  // namespace

KubeEventRecorder::KubeEventRecorder(KubeClient& client, const Clock& clock, std::string component,
                                     std::string instance)
    : client_(client), clock_(clock), component_(std::move(component)), instance_(std::move(instance)) {}

void KubeEventRecorder::event(const nlohmann::json& object, EventType type,
                              const std::string& reason, const std::string& message) {
  const std::string typeName = type == EventType::Warning ? "Warning" : "Normal";
  const std::string key = object.value("kind", "") + "/" + meta(object, "namespace") + "/" +
                          meta(object, "name") + "/" + meta(object, "uid") + "/" + typeName + "/" +
                          reason + "/" + message;
  const std::string now = rfc3339(clock_.now());
  std::lock_guard guard(mutex_);
  try {
    auto found = recorded_.find(key);
    if (found != recorded_.end() && bumpExisting(meta(object, "namespace"), found->second, now)) return;
    createNew(object, key, type, reason, message, now);
  } catch (const std::exception& error) {
    spdlog::warn("could not record event {} on {}/{}: {}", reason, meta(object, "namespace"),
                 meta(object, "name"), error.what());
  }
}

bool KubeEventRecorder::bumpExisting(const std::string& ns, Recorded& recorded,
                                     const std::string& now) {
  try {
    client_.patch(eventResource(), ns, recorded.eventName, PatchType::Merge,
                  {{"count", recorded.count + 1}, {"lastTimestamp", now}});
    ++recorded.count;
    return true;
  } catch (const ApiError& error) {
    if (error.isNotFound()) return false;  // expired (events live an hour): record it anew
    throw;
  }
}

void KubeEventRecorder::createNew(const nlohmann::json& object, const std::string& aggregationKey,
                                  EventType type, const std::string& reason,
                                  const std::string& message, const std::string& now) {
  const std::string ns = meta(object, "namespace").empty() ? "default" : meta(object, "namespace");
  // Unique like client-go's: the object's name and the time in hex nanoseconds.
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, "%llx",
                static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                    clock_.now().time_since_epoch())
                                                    .count()));
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", meta(object, "name") + "." + suffix}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", object.value("apiVersion", "")},
        {"kind", object.value("kind", "")},
        {"name", meta(object, "name")},
        {"namespace", meta(object, "namespace")},
        {"uid", meta(object, "uid")},
        {"resourceVersion", meta(object, "resourceVersion")}}},
      {"type", type == EventType::Warning ? "Warning" : "Normal"},
      {"reason", reason},
      {"message", message},
      {"source", {{"component", component_}, {"host", instance_}}},
      {"reportingComponent", component_},
      {"reportingInstance", instance_},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  auto created = client_.create(eventResource(), ns, event);
  if (recorded_.size() >= kMaxRemembered) recorded_.clear();
  recorded_[aggregationKey] = {created.value("/metadata/name"_json_pointer, std::string()), 1};
}

}  // namespace vto::controller
