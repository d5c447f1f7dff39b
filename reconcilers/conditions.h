#pragma once
// metav1.Condition bookkeeping, as apimachinery's meta.SetStatusCondition does it: a condition
// keeps its lastTransitionTime while its status stays the same.
#include <string>
#include <vector>

#include "crd/training_run.h"

namespace vto::reconcilers {

// Sets `condition` in `conditions` (replacing one of the same type). Its lastTransitionTime is
// taken from `previous` when the status there is the same, else it is `now`.
void setCondition(std::vector<crd::Condition>& conditions, crd::Condition condition,
                  const std::vector<crd::Condition>& previous, const std::string& now);

const crd::Condition* findCondition(const std::vector<crd::Condition>& conditions, const std::string& type);

}  // namespace vto::reconcilers
