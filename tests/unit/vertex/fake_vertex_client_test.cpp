// The fake that other layers' unit tests rely on must behave like the real client in what they use.
#include "tests/fakes/vertex_fake_client.h"

#include <gtest/gtest.h>

namespace vto::testing {
namespace {

using vertex::JobKind;
using vertex::JobState;

TEST(FakeVertexClient, CreatesListsByLabelsAndCancels) {
  FakeVertexClient fake;
  vto::Location where{"my-project", "us-central1"};
  auto a = fake.createJob(where, JobKind::Custom, {{"displayName", "a"}, {"labels", {{"uid", "1"}, {"attempt", "1"}}}});
  fake.createJob(where, JobKind::Custom, {{"displayName", "b"}, {"labels", {{"uid", "1"}, {"attempt", "2"}}}});
  EXPECT_EQ(a.state, JobState::Queued);
  auto page = fake.listJobs(where, JobKind::Custom, {R"(labels.uid="1" AND labels.attempt="1")", 0, ""});
  ASSERT_EQ(page.jobs.size(), 1u);
  EXPECT_EQ(page.jobs[0].name, a.name);
  EXPECT_TRUE(fake.listJobs(where, JobKind::HyperparameterTuning, {}).jobs.empty());
  fake.setState(a.name, JobState::Running);
  EXPECT_EQ(fake.listJobs(where, JobKind::Custom, {R"(state="JOB_STATE_RUNNING")", 0, ""}).jobs.size(), 1u);
  fake.cancelJob(a.name);
  EXPECT_EQ(fake.getJob(a.name).state, JobState::Cancelling);
  EXPECT_EQ(fake.listJobs(where, JobKind::Custom, {"labels.uid:*", 0, ""}).jobs.size(), 2u) << "the budgets' reading of a shared place";
  EXPECT_THROW(fake.listJobs(where, JobKind::Custom, {"labels.uid~\"a\"", 0, ""}), std::invalid_argument);
}

TEST(FakeVertexClient, QueuedErrorsAndNotFound) {
  FakeVertexClient fake;
  fake.failNextCall(vertex::ApiError(429, "RESOURCE_EXHAUSTED", "quota"));
  EXPECT_THROW(fake.getJob("projects/p/locations/l/customJobs/1"), vertex::ApiError);
  try {
    fake.getJob("projects/p/locations/l/customJobs/1");
  } catch (const vertex::ApiError& error) {
    EXPECT_TRUE(error.isNotFound());
  }
}

}  // namespace
}  // namespace vto::testing
