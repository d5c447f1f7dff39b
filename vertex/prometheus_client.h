#pragma once
// Prometheus's HTTP API, for the RetrainingPolicy metric trigger: one instant query. Lives beside the
// other outbound HTTP clients (same transport, TLS verified, bounded time and size); it knows nothing
// of policies, and the reconciler classifies the answer (reconcilers/metric_trigger.h).
#include <chrono>
#include <cstddef>
#include <string>

#include "vertex/http_transport.h"

namespace vto::vertex {

inline constexpr std::chrono::seconds kPrometheusTimeout{10};
// One sample's answer is a few hundred bytes; a query that returns thousands of series is refused.
inline constexpr std::size_t kPrometheusMaxBody = 256 * 1024;

class PrometheusClient {
 public:
  // allowInsecure: a bearer token may also travel over http:// to a host that is not loopback.
  explicit PrometheusClient(HttpTransport& http, bool allowInsecure = false) : http_(http), allowInsecure_(allowInsecure) {}
  // GET <baseUrl>/api/v1/query?query=<query>. Returns any HTTP answer (the caller reads Prometheus's
  // error JSON); throws TransportError when there is none, or when it is larger than
  // kPrometheusMaxBody, or std::invalid_argument when baseUrl is not http(s)://, or when a token
  // would go over plain http to a host that is not loopback. `bearerToken` "" sends no Authorization
  // header; it is never part of an error message.
  HttpResponse instantQuery(const std::string& baseUrl, const std::string& query, const std::string& bearerToken);

 private:
  HttpTransport& http_;
  bool allowInsecure_;
};

}  // namespace vto::vertex
