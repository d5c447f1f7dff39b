#include "reconcilers/trainingrun/resume_policy.h"

#include <algorithm>

namespace vto::reconcilers {

ResumeDecision decideResume(const crd::Checkpointing& checkpointing, crd::FailureClass failure, int resumesSoFar) {
  using crd::FailureClass;
  const std::string name = crd::enumName(failure, crd::failureClassNames());
  if (!checkpointing.resumeOnFailure) return {false, {}, "checkpointing.resumeOnFailure is false"};
  const auto& on = checkpointing.resumeOn;
  bool listed = std::find(on.begin(), on.end(), FailureClass::AnyFailure) != on.end() ||
                std::find(on.begin(), on.end(), failure) != on.end();
  if (!listed) {
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
