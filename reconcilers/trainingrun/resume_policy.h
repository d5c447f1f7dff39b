#pragma once
// Whether and when a failed attempt is resumed, from spec.checkpointing alone: a pure function, so
// the decision is the same on every pass and after every restart.
#include <chrono>
#include <string>

#include "crd/training_run.h"

namespace vto::reconcilers {

struct ResumeDecision {
  bool resume = false;
  std::chrono::seconds backoff{0};  // wait this long after the failure before the next attempt
  std::string why;                   // for the user when not resuming
  bool budgetSpent = false;          // not resuming because checkpointing.maxResumes is reached
};

// `resumesSoFar`: attempts already started after failures.
ResumeDecision decideResume(const crd::Checkpointing& checkpointing, crd::FailureClass failure, int resumesSoFar);

}  // namespace vto::reconcilers
