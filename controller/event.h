#pragma once
// An Event a reconciler decided to raise, as a value: decide() returns them in its Plan and act()
// records them, so what a pass tells the user is testable without a recorder.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/event_recorder.h"

namespace vto::controller {

struct Event {
  EventType type = EventType::Normal;
  std::string reason;   // UpperCamelCase, e.g. JobCreated
  std::string message;  // a sentence for humans
  bool operator==(const Event&) const = default;
};

inline Event normalEvent(std::string reason, std::string message) {
  return {EventType::Normal, std::move(reason), std::move(message)};
}
inline Event warningEvent(std::string reason, std::string message) {
  return {EventType::Warning, std::move(reason), std::move(message)};
}

// Records `events` about `object` in order (best effort, as EventRecorder::event).
inline void recordEvents(EventRecorder& recorder, const nlohmann::json& object, const std::vector<Event>& events) {
  for (const auto& e : events) recorder.event(object, e.type, e.reason, e.message);
}

}  // namespace vto::controller
