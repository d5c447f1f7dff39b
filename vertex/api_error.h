#pragma once
// Google's JSON error model, parsed once where a response enters: {"error": {"code": <HTTP status>,
// "status": "<google.rpc.Code name>", "message": ..., "details": [Any...]}}.
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/http_transport.h"
#include "base/retryable_error.h"

namespace vto::vertex {

// An answer from Vertex or Cloud Storage that is not success. Like every remote error it is a
// RetryableError: the client does not retry on its own (one backoff layer: the work queue's), it
// hands the server's Retry-After (clamped) to the queue.
class ApiError : public RemoteApiError {
 public:
  ApiError(int httpStatus, std::string status, std::string message, nlohmann::json details = nlohmann::json::array());
  // A success status whose body is not what the API returns (an HTML page from a proxy, a JSON
  // value of the wrong shape). Retryable: such answers usually come from something in between.
  static ApiError unexpectedResponse(int httpStatus, std::string_view body, std::string_view problem);
  // vto refused to send the request at all (a field that would change where it goes). Not retryable.
  static ApiError refusedRequest(std::string message);

  int httpStatus() const override { return httpStatus_; }
  const std::string& status() const { return status_; }  // e.g. "RESOURCE_EXHAUSTED"
  const std::string& message() const { return message_; }
  const nlohmann::json& details() const { return details_; }
  // 429, 500, 503 (and 504), or an unexpected response: worth trying again after a pause.
  bool retryable() const { return retryable_; }
  bool isRetryable() const override { return retryable_; }

 private:
  int httpStatus_;
  bool retryable_;
  std::string status_;
  std::string message_;
  nlohmann::json details_;
};

// A network failure or a timeout, no HTTP answer at all, is a TransportError (base/http_transport.h):
// always retryable.

// Builds the error from a response; falls back to the HTTP status when the body is not Google's
// shape (any JSON type in any field is tolerated: an `error.status` given as a number is mapped to
// its name). Never throws.
ApiError parseApiError(int httpStatus, std::string_view body);
// parseApiError plus the response's Retry-After header (seconds; clamped to kMaxRetryAfter).
ApiError apiErrorOf(const HttpResponse& response);

// The google.rpc.Code name for a number (1 -> "CANCELLED"), and the HTTP status Google maps it to.
std::string_view rpcCodeName(int code);
int rpcCodeNumber(std::string_view name);  // -1 when unknown
int httpStatusForRpcCode(int code);

// The body a Google API returns for an error, used by the emulator.
nlohmann::json makeErrorBody(int rpcCode, std::string_view message, nlohmann::json details = nlohmann::json::array());

}  // namespace vto::vertex
