#include "base/rfc3339.h"
#include "vertex/json_codec.h"

#include <gtest/gtest.h>

#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

TEST(JsonCodec, JobStateFromNameOrNumber) {
  EXPECT_EQ(jobStateFromJson("JOB_STATE_RUNNING"), JobState::Running);
  EXPECT_EQ(jobStateFromJson(3), JobState::Running);
  EXPECT_EQ(jobStateFromJson(11), JobState::PartiallySucceeded);
  // Unknown (future) states decode as unspecified instead of failing the whole job.
  EXPECT_EQ(jobStateFromJson("RUNNING"), JobState::Unspecified);
  EXPECT_EQ(jobStateFromJson(12), JobState::Unspecified);
  EXPECT_EQ(jobStateFromJson(nlohmann::json::object()), JobState::Unspecified);
  EXPECT_EQ(jobStateName(JobState::Cancelled), "JOB_STATE_CANCELLED");
  EXPECT_TRUE(isTerminal(JobState::Failed));
  EXPECT_FALSE(isTerminal(JobState::Cancelling));
}

TEST(JsonCodec, Int64FromStringOrNumber) {
  EXPECT_EQ(int64FromJson("9007199254740993"), 9007199254740993LL);
  EXPECT_EQ(int64FromJson(42), 42);
  EXPECT_THROW(int64FromJson("42x"), std::invalid_argument);
  EXPECT_THROW(int64FromJson(1.5), std::invalid_argument);
}

TEST(JsonCodec, TimestampsRoundTripAndAcceptOffsets) {
  auto time = parseRfc3339("2026-05-18T10:00:00.123456789Z");
  EXPECT_EQ(rfc3339Millis(time), "2026-05-18T10:00:00.123Z");
  EXPECT_EQ(parseRfc3339("2026-05-18T12:00:00+02:00"), parseRfc3339("2026-05-18T10:00:00Z"));
  EXPECT_THROW(parseRfc3339("2026-05-18 10:00"), std::invalid_argument);
}

TEST(ApiErrorParsing, ReadsGooglesErrorModel) {
  auto error = parseApiError(403, R"({"error": {"code": 403,
     "message": "Permission 'aiplatform.customJobs.create' denied",
     "status": "PERMISSION_DENIED",
     "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "IAM_PERMISSION_DENIED"}]}})");
  EXPECT_EQ(error.httpStatus(), 403);
  EXPECT_EQ(error.status(), "PERMISSION_DENIED");
  EXPECT_EQ(error.message(), "Permission 'aiplatform.customJobs.create' denied");
  EXPECT_EQ(error.details()[0]["reason"], "IAM_PERMISSION_DENIED");
  EXPECT_FALSE(error.retryable());
}

TEST(ApiErrorParsing, FallsBackToTheHttpStatusForOtherBodies) {
  auto error = parseApiError(503, "<html>upstream connect error</html>");
  EXPECT_EQ(error.status(), "UNAVAILABLE");
  EXPECT_TRUE(error.retryable());
  EXPECT_TRUE(parseApiError(429, "").retryable());
  EXPECT_TRUE(parseApiError(500, "{}").retryable());
  EXPECT_FALSE(parseApiError(400, "{}").retryable());
}

TEST(ApiErrorParsing, BuildsTheBodyTheEmulatorSends) {
  auto body = makeErrorBody(8, "quota");
  EXPECT_EQ(body["error"]["code"], 429);
  EXPECT_EQ(body["error"]["status"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(rpcCodeNumber("UNAUTHENTICATED"), 16);
}

}  // namespace
}  // namespace vto::vertex
