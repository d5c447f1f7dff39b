#include "reconcilers/jobs/failure_class.h"

#include <gtest/gtest.h>

namespace vto::reconcilers {
namespace {

struct Case {
  vertex::JobState state;
  int code;
  const char* message;
  crd::FailureClass expected;
};

// Messages as Vertex AI and Compute Engine write them into CustomJob.error.
const Case kCases[] = {
    {vertex::JobState::Failed, 14, "The replica workerpool0-0 was preempted: the VM was reclaimed by Compute Engine.",
     crd::FailureClass::Preemption},
    {vertex::JobState::Failed, 13, "Job failed: The VM was preempted.", crd::FailureClass::Preemption},
    {vertex::JobState::Failed, 8, "Resources are insufficient in region: us-central1. Please try a different region.",
     crd::FailureClass::Stockout},
    {vertex::JobState::Failed, 8,
     "The zone 'us-central1-a' does not have enough resources available to fulfill the request.",
     crd::FailureClass::Stockout},
    {vertex::JobState::Failed, 8,
     "Quota exceeded for aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus with base model",
     crd::FailureClass::Stockout},
    {vertex::JobState::Failed, 3, "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.",
     crd::FailureClass::UserError},
    {vertex::JobState::Failed, 13, "Internal error occurred. Please retry.", crd::FailureClass::InternalError},
    {vertex::JobState::Failed, 14, "", crd::FailureClass::InternalError},
    {vertex::JobState::Failed, 4, "", crd::FailureClass::Timeout},
    {vertex::JobState::Failed, 8, "", crd::FailureClass::Stockout},
    {vertex::JobState::Failed, 7, "Permission denied on the output bucket", crd::FailureClass::Unknown},
};

TEST(ClassifyFailure, RealMessagesLandInTheirClass) {
  for (const auto& c : kCases) {
    EXPECT_EQ(classifyFailure(c.state, vertex::RpcStatus{c.code, c.message}), c.expected)
        << c.message << " -> " << crd::enumName(classifyFailure(c.state, vertex::RpcStatus{c.code, c.message}), crd::failureClassNames());
  }
}

TEST(ClassifyFailure, AnExpiredJobTimedOut) {
  EXPECT_EQ(classifyFailure(vertex::JobState::Expired, std::nullopt), crd::FailureClass::Timeout);
}

TEST(ClassifyFailure, NoErrorIsUnknown) {
  EXPECT_EQ(classifyFailure(vertex::JobState::Failed, std::nullopt), crd::FailureClass::Unknown);
}

}  // namespace
}  // namespace vto::reconcilers
