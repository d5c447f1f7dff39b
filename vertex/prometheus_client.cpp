#include "vertex/prometheus_client.h"

#include <stdexcept>

#include "base/url.h"

namespace vto::vertex {

HttpTransportOptions prometheusTransportOptions() {
  HttpTransportOptions options;
  options.keepAlive = false;
  options.maxTimeout = kPrometheusTimeout;
  options.maxResponseBytes = kPrometheusMaxBody;
  // Each tenant (the namespace that asks) has a budget of its own for lookups still waiting on the
  // resolver: one tenant's host whose DNS never answers leaves the others theirs.
  options.maxPendingLookups = 64;
  options.maxPendingLookupsPerKey = 4;
  return options;
}

PrometheusClient::PrometheusClient(bool allowInsecure)
    : ownTransport_(std::make_unique<PooledHttpTransport>(prometheusTransportOptions())),
      http_(*ownTransport_),
      allowInsecure_(allowInsecure) {}

HttpResponse PrometheusClient::instantQuery(const std::string& baseUrl, const std::string& query,
                                            const std::string& bearerToken, const std::string& tenant) {
  constexpr const char* kExample = "http://prometheus.monitoring:9090";
  std::string base;
  try {
    // The token goes only where any credential of vto's may: https, or plain http to loopback.
    base = bearerToken.empty() ? canonicalUrl(baseUrl)
                               : trustedEndpoint(baseUrl, "prometheusUrl with bearerTokenSecret", allowInsecure_);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string("prometheusUrl: ") + error.what());
  }
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) {
    throw std::invalid_argument("prometheusUrl \"" + base + "\" is not an http:// or https:// URL; write e.g. " + kExample);
  }
  // A base URL: a query would turn the appended /api/v1/query into noise after another path.
  if (base.find('?') != std::string::npos) {
    throw std::invalid_argument("prometheusUrl \"" + base + "\" has a query; give the server's base URL, e.g. " + kExample);
  }
  while (base.back() == '/') base.pop_back();
  HttpRequest request;
  request.url = base + "/api/v1/query?query=" + urlEncode(query);
  request.timeout = kPrometheusTimeout;
  request.maxBodyBytes = kPrometheusMaxBody;
  request.lookupBudgetKey = tenant;
  request.headers["Accept"] = "application/json";
  if (!bearerToken.empty()) request.headers["Authorization"] = "Bearer " + bearerToken;
  return http_.send(request);
}

}  // namespace vto::vertex
