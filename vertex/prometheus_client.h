#pragma once
// Prometheus's HTTP API, for the RetrainingPolicy metric trigger: one instant query. Lives beside the
// other outbound HTTP clients (TLS verified, bounded time and size); it knows nothing of policies,
// and the reconciler classifies the answer (reconcilers/metric_trigger.h).
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "vertex/http_transport.h"

namespace vto::vertex {

inline constexpr std::chrono::seconds kPrometheusTimeout{10};
// One sample's answer is a few hundred bytes; a query that returns thousands of series is refused.
inline constexpr std::size_t kPrometheusMaxBody = 256 * 1024;

// The transport for tenants' Prometheus servers: a connection per query, closed after it, bounded
// like the query. A tenant chooses the server, so nothing it sends may reach another request, and
// its connections are never those that carry Google's credentials.
HttpTransportOptions prometheusTransportOptions();

class PrometheusClient {
 public:
  // With a transport of its own (prometheusTransportOptions): what `vto run` uses.
  // allowInsecure: a bearer token may also travel over http:// to a host that is not loopback.
  explicit PrometheusClient(bool allowInsecure);
  // Over `http`, which the caller keeps alive (tests script it). Never the transport that carries
  // Google's or the API server's credentials: a tenant's server would share its connections.
  explicit PrometheusClient(HttpTransport& http, bool allowInsecure = false) : http_(http), allowInsecure_(allowInsecure) {}
  // GET <baseUrl>/api/v1/query?query=<query>, baseUrl in its canonical form (base/url.h's
  // canonicalUrl: the form that is checked is the form that is sent). Returns any HTTP answer (the
  // caller reads Prometheus's error JSON); throws TransportError when there is none, or when it is
  // larger than kPrometheusMaxBody, or std::invalid_argument when baseUrl is not a strict
  // http(s):// base URL, or when a token would go over plain http to a host that is not loopback.
  // `bearerToken` "" sends no Authorization header; it is never part of an error message. `tenant`
  // (the namespace that asks) has a DNS lookup budget of its own (prometheusTransportOptions).
  HttpResponse instantQuery(const std::string& baseUrl, const std::string& query, const std::string& bearerToken,
                            const std::string& tenant = "");

 private:
  std::unique_ptr<HttpTransport> ownTransport_;  // declared before http_, which may refer to it
  HttpTransport& http_;
  bool allowInsecure_;
};

}  // namespace vto::vertex
