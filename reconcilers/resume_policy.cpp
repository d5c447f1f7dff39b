#include "reconcilers/resume_policy.h"

#include <algorithm>

namespace vto::reconcilers {

ResumeDecision decideResume(const crd::Checkpointing& checkpointing, FailureClass failure, int resumesSoFar) {
  const std::string name = failureClassName(failure);
  if (!checkpointing.resumeOnFailure) return {false, {}, "checkpointing.resumeOnFailure is false"};
  const auto& on = checkpointing.resumeOn;
  bool any = std::find(on.begin(), on.end(), crd::FailureClass::AnyFailure) != on.end();
  bool listed = false;
  for (auto c : on) {
    listed = listed || (c == crd::FailureClass::Preemption && failure == FailureClass::Preemption) ||
             (c == crd::FailureClass::Stockout && failure == FailureClass::Stockout) ||
             (c == crd::FailureClass::InternalError && failure == FailureClass::InternalError);
  }
  if (!any && !listed) {
    return {false, {}, name + " is not in checkpointing.resumeOn" +
                           (failure == FailureClass::UserError ? " (the training code failed; fix it, or add AnyFailure)" : "")};
  }
  if (resumesSoFar >= checkpointing.maxResumes) {
    return {false, {}, "the resume budget is spent (checkpointing.maxResumes: " + std::to_string(checkpointing.maxResumes) +
                           "); raise it to let vto try again", true};
  }
  // resumeBackoff doubles with each resume, capped at an hour.
  int64_t backoff = checkpointing.resumeBackoffSeconds;
  for (int i = 0; i < resumesSoFar && backoff < crd::kMaxResumeBackoffSeconds; ++i) backoff *= 2;
  return {true, std::chrono::seconds(std::min(backoff, crd::kMaxResumeBackoffSeconds)), ""};
}

}  // namespace vto::reconcilers
