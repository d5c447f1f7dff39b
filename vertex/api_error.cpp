#include "vertex/api_error.h"

#include <array>

namespace vto::vertex {
namespace {

struct RpcCode {
  std::string_view name;
  int http;
};

// google/rpc/code.proto, indexed by number.
constexpr std::array<RpcCode, 17> kRpcCodes = {{
    {"OK", 200},
    {"CANCELLED", 499},
    {"UNKNOWN", 500},
    {"INVALID_ARGUMENT", 400},
    {"DEADLINE_EXCEEDED", 504},
    {"NOT_FOUND", 404},
    {"ALREADY_EXISTS", 409},
    {"PERMISSION_DENIED", 403},
    {"RESOURCE_EXHAUSTED", 429},
    {"FAILED_PRECONDITION", 400},
    {"ABORTED", 409},
    {"OUT_OF_RANGE", 400},
    {"UNIMPLEMENTED", 501},
    {"INTERNAL", 500},
    {"UNAVAILABLE", 503},
    {"DATA_LOSS", 500},
    {"UNAUTHENTICATED", 401},
}};

std::string statusForHttp(int httpStatus) {
  switch (httpStatus) {
    case 400: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 409: return "ABORTED";
    case 429: return "RESOURCE_EXHAUSTED";
    case 501: return "UNIMPLEMENTED";
    case 503: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return httpStatus >= 500 ? "INTERNAL" : "UNKNOWN";
  }
}

}  // namespace

ApiError::ApiError(int httpStatus, std::string status, std::string message, nlohmann::json details)
    : std::runtime_error("HTTP " + std::to_string(httpStatus) + " " + status + ": " + message),
      httpStatus_(httpStatus),
      status_(std::move(status)),
      message_(std::move(message)),
      details_(std::move(details)) {}

bool ApiError::retryable() const {
  return httpStatus_ == 429 || httpStatus_ == 500 || httpStatus_ == 503 || httpStatus_ == 504;
}

ApiError parseApiError(int httpStatus, std::string_view body) {
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
    const auto& error = parsed["error"];
    auto status = error.value("status", statusForHttp(httpStatus));
    auto message = error.value("message", std::string());
    auto details = error.contains("details") ? error["details"] : nlohmann::json::array();
    return ApiError(httpStatus, status, message, details);
  }
  // Not Google's shape (a proxy, a load balancer): keep a bounded excerpt of the body as the message.
  std::string excerpt(body.substr(0, 200));
  return ApiError(httpStatus, statusForHttp(httpStatus), excerpt.empty() ? "no response body" : excerpt);
}

std::string_view rpcCodeName(int code) {
  return code >= 0 && code < static_cast<int>(kRpcCodes.size()) ? kRpcCodes[code].name : "UNKNOWN";
}

int rpcCodeNumber(std::string_view name) {
  for (std::size_t i = 0; i < kRpcCodes.size(); ++i) {
    if (kRpcCodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int httpStatusForRpcCode(int code) {
  return code >= 0 && code < static_cast<int>(kRpcCodes.size()) ? kRpcCodes[code].http : 500;
}

nlohmann::json makeErrorBody(int rpcCode, std::string_view message, nlohmann::json details) {
  return {{"error",
           {{"code", httpStatusForRpcCode(rpcCode)},
            {"message", message},
            {"status", rpcCodeName(rpcCode)},
            {"details", std::move(details)}}}};
}

}  // namespace vto::vertex
