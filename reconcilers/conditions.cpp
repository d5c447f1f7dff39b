#include "reconcilers/conditions.h"

#include <algorithm>

namespace vto::reconcilers {

const crd::Condition* findCondition(const std::vector<crd::Condition>& conditions, const std::string& type) {
  auto it = std::find_if(conditions.begin(), conditions.end(), [&](const auto& c) { return c.type == type; });
  return it == conditions.end() ? nullptr : &*it;
}

void setCondition(std::vector<crd::Condition>& conditions, crd::Condition condition,
                  const std::vector<crd::Condition>& previous, const std::string& now) {
  const crd::Condition* before = findCondition(previous, condition.type);
  condition.lastTransitionTime =
      before != nullptr && before->status == condition.status && !before->lastTransitionTime.empty()
          ? before->lastTransitionTime
          : now;
  auto it = std::find_if(conditions.begin(), conditions.end(), [&](const auto& c) { return c.type == condition.type; });
  if (it != conditions.end()) {
    *it = std::move(condition);
  } else {
    conditions.push_back(std::move(condition));
  }
}

}  // namespace vto::reconcilers
