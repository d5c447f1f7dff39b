#pragma once
// Errors from the API server, parsed from its Status object, and classified once here: conflicts,
// throttling, server errors, timeouts and an expired watch are worth retrying; the rest are not.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/retryable_error.h"

namespace vto::controller {

// metav1.Status as the API server returns it with a failed request.
struct Status {
  int code = 0;         // HTTP status; 0 when no response arrived (connection failure, timeout)
  std::string reason;   // NotFound, AlreadyExists, Conflict, Invalid, Forbidden, Expired, ...
  std::string message;
  nlohmann::json details;  // name, kind, causes[]
};

// A RetryableError like the Vertex and GCS clients' errors: the work queue backs off on all of them
// the same way, honouring retryAfter().
class ApiError : public RemoteApiError {
 public:
  ApiError(Status status, std::optional<std::chrono::milliseconds> retryAfter = std::nullopt);
  const Status& status() const { return status_; }

  int httpStatus() const override { return status_.code; }
  bool isAlreadyExists() const { return status_.code == 409 && status_.reason == "AlreadyExists"; }
  bool isConflict() const { return status_.code == 409 && status_.reason != "AlreadyExists"; }
  // 410 Gone: the resourceVersion a watch or list asked for has been compacted away.
  bool isGone() const { return status_.code == 410; }
  bool isRetryable() const override;

 private:
  Status status_;
};

// Builds a Status from a response body (a Status object when the server sent one) and its code.
Status parseStatus(int httpCode, const std::string& body);

}  // namespace vto::controller
