#pragma once
// An EventRecorder for unit tests: keeps every Event a reconciler raised, in order.
#include <algorithm>
#include <string>
#include <vector>

#include "controller/event_recorder.h"

namespace vto::testing {

class RecordingEvents final : public controller::EventRecorder {
 public:
  void event(const nlohmann::json&, controller::EventType type, const std::string& reason,
             const std::string& message) override {
    types.push_back(type);
    reasons.push_back(reason);
    messages.push_back(message);
  }
  bool has(const std::string& reason) const { return std::find(reasons.begin(), reasons.end(), reason) != reasons.end(); }
  bool hasWarning(const std::string& reason) const {
    for (size_t i = 0; i < reasons.size(); ++i)
      if (reasons[i] == reason && types[i] == controller::EventType::Warning) return true;
    return false;
  }
  std::vector<controller::EventType> types;
  std::vector<std::string> reasons, messages;
};

}  // namespace vto::testing
