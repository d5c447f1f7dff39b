#include "vertex/google_rest.h"

#include <spdlog/spdlog.h>

#include "vertex/api_error.h"

namespace vto::vertex {

nlohmann::json callGoogleJson(HttpTransport& http, TokenSource& tokens, HttpRequest request,
                              const nlohmann::json* body, std::atomic<int>* sent) {
  if (body != nullptr) {
    request.headers["Content-Type"] = "application/json";
    request.body = body->dump();
  }
  for (bool refreshedToken = false;; refreshedToken = true) {
    request.headers["Authorization"] = "Bearer " + tokens.token().value;
    if (sent != nullptr) ++*sent;
    auto response = http.send(request);  // TransportError goes to the caller as it is
    if (response.status >= 200 && response.status < 300) {
      if (response.body.empty()) return nlohmann::json::object();
      auto parsed = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_object()) throw ApiError::unexpectedResponse(response.status, response.body, "not a JSON object");
      return parsed;
    }
    if (response.status == 401 && !refreshedToken) {
      tokens.invalidate();
      continue;
    }
    auto error = apiErrorOf(response);
    spdlog::debug("{} {}: HTTP {} {}", request.method, request.url, response.status, error.status());
    throw error;
  }
}

void paceOrThrow(QuotaPacer& pacer, const std::string& key, int perWindow, RequestObserver* observer) {
  auto wait = pacer.tryAcquire(key, perWindow);
  if (observer != nullptr) observer->quotaWaited(wait.value_or(std::chrono::milliseconds(0)));
  if (wait) throw QuotaPacingError(key, *wait);
}

}  // namespace vto::vertex
