#pragma once
// metav1.Condition bookkeeping, as apimachinery's meta.SetStatusCondition does it. Generic over the
// condition struct (any type with metav1.Condition's fields: type, status, reason, message,
// lastTransitionTime, observedGeneration, all strings but the generation), so every kind's status
// uses the same rules: a condition keeps its lastTransitionTime while its status stays the same.
#include <algorithm>
#include <string_view>
#include <vector>

#include "base/clock.h"

namespace vto::controller {

template <class Condition>
const Condition* findStatusCondition(const std::vector<Condition>& conditions, std::string_view type) {
  auto found = std::find_if(conditions.begin(), conditions.end(), [&](const auto& c) { return c.type == type; });
  return found == conditions.end() ? nullptr : &*found;
}

template <class Condition>
bool isStatusConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  const auto* found = findStatusCondition(conditions, type);
  return found != nullptr && found->status == "True";
}

// Sets `condition` in `conditions`, replacing the one of the same type. lastTransitionTime is kept
// from the replaced condition when the status did not change, else it is `now`. Returns whether
// anything changed (false: a status write would be a no-op for this condition).
template <class Condition>
bool setStatusCondition(std::vector<Condition>& conditions, Condition condition, Clock::time_point now) {
  auto found = std::find_if(conditions.begin(), conditions.end(), [&](const auto& c) { return c.type == condition.type; });
  // metav1.Time: whole seconds.
  auto transition = std::chrono::floor<std::chrono::seconds>(now);
  if (found == conditions.end()) {
    condition.lastTransitionTime = transition;
    conditions.push_back(std::move(condition));
    return true;
  }
  condition.lastTransitionTime = found->status == condition.status && found->lastTransitionTime
                                     ? found->lastTransitionTime
                                     : transition;
  bool changed = found->status != condition.status || found->reason != condition.reason ||
                 found->message != condition.message || found->lastTransitionTime != condition.lastTransitionTime ||
                 found->observedGeneration != condition.observedGeneration;
  *found = std::move(condition);
  return changed;
}

// Removes the condition of `type`; returns whether there was one.
template <class Condition>
bool removeStatusCondition(std::vector<Condition>& conditions, std::string_view type) {
  auto kept = std::remove_if(conditions.begin(), conditions.end(), [&](const auto& c) { return c.type == type; });
  bool removed = kept != conditions.end();
  conditions.erase(kept, conditions.end());
  return removed;
}

}  // namespace vto::controller
