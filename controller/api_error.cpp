#include "controller/api_error.h"

#include "base/json_fields.h"

namespace vto::controller {
namespace {

std::string describe(const Status& status) {
  if (status.code == 0) return "API request failed: " + status.message;
  return "API server said " + std::to_string(status.code) +
         (status.reason.empty() ? "" : " " + status.reason) + ": " + status.message;
}

}  // namespace

ApiError::ApiError(Status status, std::optional<std::chrono::milliseconds> retryAfter)
    : RemoteApiError(describe(status), retryAfter), status_(std::move(status)) {}

bool ApiError::isRetryable() const {
  int code = status_.code;
  return code == 0 || (code == 409 && !isAlreadyExists()) || code == 410 || code == 429 ||
         code == 504 || code >= 500;
}

Status parseStatus(int httpCode, const std::string& body) {
  Status status;
  status.code = httpCode;
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (stringField(parsed, "kind") == "Status") {
    status.reason = stringField(parsed, "reason");
    status.message = stringField(parsed, "message");
    if (parsed.contains("details")) status.details = parsed["details"];
    if (parsed.contains("code") && parsed["code"].is_number_integer()) status.code = parsed["code"];
  } else {
    // Not a Status (a proxy's error page, say): keep the start of it as the message.
    status.message = body.substr(0, 500);
  }
  return status;
}

}  // namespace vto::controller
