#include "vertex/prometheus_client.h"

#include <stdexcept>

#include "base/url.h"

namespace vto::vertex {

HttpResponse PrometheusClient::instantQuery(const std::string& baseUrl, const std::string& query,
                                            const std::string& bearerToken) {
  if (baseUrl.rfind("http://", 0) != 0 && baseUrl.rfind("https://", 0) != 0) {
    throw std::invalid_argument("prometheusUrl \"" + baseUrl +
                                "\" is not an http:// or https:// URL; write e.g. http://prometheus.monitoring:9090");
  }
  auto parsed = parseUrl(baseUrl);  // strict: a real host, no user info ("http://prom@evil.example" is refused)
  // A base URL: a query or fragment would turn the appended /api/v1/query into noise after another path.
  if (parsed.path.find_first_of("?#") != std::string::npos) {
    throw std::invalid_argument("prometheusUrl \"" + baseUrl +
                                "\" has a query or fragment; give the server's base URL, e.g. http://prometheus.monitoring:9090");
  }
  // The token goes only where any credential of vto's may: https, or plain http to loopback.
  if (!bearerToken.empty()) requireTrustedEndpoint(baseUrl, "prometheusUrl with bearerTokenSecret", allowInsecure_);
  std::string base = baseUrl;
  while (!base.empty() && base.back() == '/') base.pop_back();
  HttpRequest request;
  request.url = base + "/api/v1/query?query=" + urlEncode(query);
  request.timeout = kPrometheusTimeout;
  request.maxBodyBytes = kPrometheusMaxBody;
  request.headers["Accept"] = "application/json";
  if (!bearerToken.empty()) request.headers["Authorization"] = "Bearer " + bearerToken;
  return http_.send(request);
}

}  // namespace vto::vertex
