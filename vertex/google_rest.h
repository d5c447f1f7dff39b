#pragma once
// One JSON request to a Google REST API (Vertex AI, Cloud Logging), the way every vto client sends
// it: a bearer token from the TokenSource, one immediate retry with a fresh token after a 401 (the
// token may have been revoked or expired early), and the answer classified where it enters. No
// sleeping, no other retry: the caller's work queue (or command loop) is the one backoff layer.
#include <atomic>

#include <nlohmann/json.hpp>

#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/rate_limiter.h"
#include "vertex/request_observer.h"

namespace vto::vertex {

// Sends `request` with `body` (as JSON, when not null) and returns the answer's JSON object ({} for
// an empty body). Throws ApiError for an answer that is not 2xx (Retry-After kept, clamped), or a 2xx
// body that is not a JSON object; TransportError when no answer came; AuthError when no token can be
// had. `sent`, when given, counts every request sent (the retry included).
nlohmann::json callGoogleJson(HttpTransport& http, TokenSource& tokens, HttpRequest request,
                              const nlohmann::json* body, std::atomic<int>* sent = nullptr);

// The client-side quota's verdict on one call: tells `observer` (when given) how long the pacer
// deferred it, 0 when it let it through, and throws QuotaPacingError (retryAfter = the wait) when
// the quota is used up. Never blocks.
void paceOrThrow(QuotaPacer& pacer, const std::string& key, int perWindow, RequestObserver* observer);

}  // namespace vto::vertex
