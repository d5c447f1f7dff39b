#include "controller/api_error.h"

#include <gtest/gtest.h>

namespace vto::controller {
namespace {

TEST(ApiErrorTest, ParsesTheServersStatus) {
  auto status = parseStatus(409, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"configmaps \"x\" already exists","reason":"AlreadyExists",
    "details":{"name":"x","kind":"configmaps"},"code":409})");
  EXPECT_EQ(status.reason, "AlreadyExists");
  EXPECT_EQ(status.details["name"], "x");
  ApiError error(status);
  EXPECT_TRUE(error.isAlreadyExists());
  EXPECT_FALSE(error.isConflict());
  EXPECT_FALSE(error.isRetryable());
}

TEST(ApiErrorTest, ClassifiesRetryableErrors) {
  EXPECT_TRUE(ApiError(Status{409, "Conflict", "", {}}).isRetryable());
  EXPECT_TRUE(ApiError(Status{429, "TooManyRequests", "", {}}, std::chrono::seconds(3)).isRetryable());
  EXPECT_TRUE(ApiError(Status{500, "InternalError", "", {}}).isRetryable());
  EXPECT_TRUE(ApiError(Status{503, "ServiceUnavailable", "", {}}).isRetryable());
  EXPECT_TRUE(ApiError(Status{0, "", "connection refused", {}}).isRetryable());
  EXPECT_TRUE(ApiError(Status{410, "Expired", "", {}}).isGone());
  EXPECT_FALSE(ApiError(Status{403, "Forbidden", "", {}}).isRetryable());
  EXPECT_FALSE(ApiError(Status{422, "Invalid", "", {}}).isRetryable());
  EXPECT_FALSE(ApiError(Status{404, "NotFound", "", {}}).isRetryable());
}

TEST(ApiErrorTest, NonStatusBodyBecomesTheMessage) {
  auto status = parseStatus(502, "<html>bad gateway</html>");
  EXPECT_EQ(status.code, 502);
  EXPECT_EQ(status.message, "<html>bad gateway</html>");
  EXPECT_NE(std::string(ApiError(status).what()).find("502"), std::string::npos);
}

}  // namespace
}  // namespace vto::controller
