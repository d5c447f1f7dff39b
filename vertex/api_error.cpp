#include "vertex/api_error.h"

#include <array>

#include "vertex/http_transport.h"

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

// Bounded: error text ends up in logs, Events and status messages.
constexpr std::size_t kMaxMessage = 1000;

std::string excerpt(std::string_view body) {
  std::string text(body.substr(0, 200));
  for (auto& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text.empty() ? "no response body" : text;
}

}  // namespace

ApiError::ApiError(int httpStatus, std::string status, std::string message, nlohmann::json details)
    : RemoteApiError("HTTP " + std::to_string(httpStatus) + " " + status + ": " + message),
      httpStatus_(httpStatus),
      retryable_(httpStatus == 429 || httpStatus == 500 || httpStatus == 503 || httpStatus == 504),
      status_(std::move(status)),
      message_(std::move(message)),
      details_(std::move(details)) {}

ApiError ApiError::unexpectedResponse(int httpStatus, std::string_view body, std::string_view problem) {
  ApiError error(httpStatus, "UNKNOWN",
                 "unexpected response (" + std::string(problem) + "): " + excerpt(body) +
                     "; check that the endpoint is the Google API and not a proxy");
  error.retryable_ = true;
  return error;
}

ApiError ApiError::refusedRequest(std::string message) {
  return ApiError(400, "INVALID_ARGUMENT", "refused before sending any request: " + std::move(message));
}

ApiError parseApiError(int httpStatus, std::string_view body) {
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
    const auto& error = parsed["error"];
    std::string status = statusForHttp(httpStatus);
    if (auto it = error.find("status"); it != error.end()) {
      if (it->is_string()) {
        status = it->get<std::string>().substr(0, 64);
      } else if (it->is_number_integer()) {
        status = std::string(rpcCodeName(it->get<int>()));
      }
    }
    std::string message;
    if (auto it = error.find("message"); it != error.end()) {
      message = it->is_string() ? it->get<std::string>() : it->dump();
    }
    if (message.size() > kMaxMessage) message.resize(kMaxMessage);
    auto details = nlohmann::json::array();
    if (auto it = error.find("details"); it != error.end() && it->is_array()) details = *it;
    return ApiError(httpStatus, status, message, details);
  }
  // Not Google's shape (a proxy, a load balancer): keep a bounded excerpt of the body as the message.
  return ApiError(httpStatus, statusForHttp(httpStatus), excerpt(body));
}

ApiError apiErrorOf(const HttpResponse& response) {
  auto error = parseApiError(response.status, response.body);
  if (auto header = response.headers.find("retry-after"); header != response.headers.end()) {
    error.setRetryAfter(parseRetryAfterSeconds(header->second));
  }
  return error;
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
