#include "reconcilers/trainingrun/resume_policy.h"

#include <gtest/gtest.h>

namespace vto::reconcilers {
namespace {

TEST(DecideResume, ResumesListedClassesWithDoublingBackoffCappedAtAnHour) {
  crd::Checkpointing c;  // defaults: Preemption, Stockout, InternalError; 3 resumes; 60 s
  c.maxResumes = 10;
  EXPECT_EQ(decideResume(c, crd::FailureClass::Preemption, 0).backoff, std::chrono::seconds(60));
  EXPECT_EQ(decideResume(c, crd::FailureClass::Stockout, 1).backoff, std::chrono::seconds(120));
  EXPECT_EQ(decideResume(c, crd::FailureClass::InternalError, 3).backoff, std::chrono::seconds(480));
  EXPECT_EQ(decideResume(c, crd::FailureClass::Preemption, 9).backoff, std::chrono::seconds(3600));
}

TEST(DecideResume, UserErrorFailsUnlessAnyFailure) {
  crd::Checkpointing c;
  auto decision = decideResume(c, crd::FailureClass::UserError, 0);
  EXPECT_FALSE(decision.resume);
  EXPECT_NE(decision.why.find("AnyFailure"), std::string::npos);
  c.resumeOn = {crd::FailureClass::AnyFailure};
  EXPECT_TRUE(decideResume(c, crd::FailureClass::UserError, 0).resume);
  EXPECT_TRUE(decideResume(c, crd::FailureClass::Unknown, 0).resume);
}

TEST(DecideResume, TheBudgetRunsOut) {
  crd::Checkpointing c;
  c.maxResumes = 2;
  EXPECT_TRUE(decideResume(c, crd::FailureClass::Preemption, 1).resume);
  auto spent = decideResume(c, crd::FailureClass::Preemption, 2);
  EXPECT_FALSE(spent.resume);
  EXPECT_NE(spent.why.find("maxResumes: 2"), std::string::npos);
}

TEST(DecideResume, ResumeOnFailureFalseNeverResumes) {
  crd::Checkpointing c;
  c.resumeOnFailure = false;
  EXPECT_FALSE(decideResume(c, crd::FailureClass::Preemption, 0).resume);
}

}  // namespace
}  // namespace vto::reconcilers
