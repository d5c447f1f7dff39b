#pragma once
// Google's JSON error model, parsed once where a response enters: {"error": {"code": <HTTP status>,
// "status": "<google.rpc.Code name>", "message": ..., "details": [Any...]}}.
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vto::vertex {

class ApiError : public std::runtime_error {
 public:
  ApiError(int httpStatus, std::string status, std::string message, nlohmann::json details = nlohmann::json::array());

  int httpStatus() const { return httpStatus_; }
  const std::string& status() const { return status_; }  // e.g. "RESOURCE_EXHAUSTED"
  const std::string& message() const { return message_; }
  const nlohmann::json& details() const { return details_; }
  // 429, 500, 503 (and 504): worth trying again after a pause.
  bool retryable() const;
  bool notFound() const { return httpStatus_ == 404; }
  // From the Retry-After header, when the server sent one.
  std::optional<std::chrono::milliseconds> retryAfter;

 private:
  int httpStatus_;
  std::string status_;
  std::string message_;
  nlohmann::json details_;
};

// A network failure or a timeout: no HTTP answer at all. Always retryable.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds the error from a response; falls back to the HTTP status when the body is not Google's shape.
ApiError parseApiError(int httpStatus, std::string_view body);

// The google.rpc.Code name for a number (1 -> "CANCELLED"), and the HTTP status Google maps it to.
std::string_view rpcCodeName(int code);
int rpcCodeNumber(std::string_view name);  // -1 when unknown
int httpStatusForRpcCode(int code);

// The body a Google API returns for an error, used by the emulator.
nlohmann::json makeErrorBody(int rpcCode, std::string_view message, nlohmann::json details = nlohmann::json::array());

}  // namespace vto::vertex
