#include "vertex/prometheus_client.h"

#include <stdexcept>

namespace vto::vertex {

HttpResponse PrometheusClient::instantQuery(const std::string& baseUrl, const std::string& query,
                                            const std::string& bearerToken) {
  if (baseUrl.rfind("http://", 0) != 0 && baseUrl.rfind("https://", 0) != 0) {
    throw std::invalid_argument("prometheusUrl \"" + baseUrl +
                                "\" is not an http:// or https:// URL; write e.g. http://prometheus.monitoring:9090");
  }
  if (!bearerToken.empty() && !allowInsecure_ && baseUrl.rfind("http://", 0) == 0) {
    auto host = baseUrl.substr(7, baseUrl.find_first_of(":/", 7) - 7);
    if (host != "127.0.0.1" && host != "localhost" && host != "[::1]") {
      throw std::invalid_argument("prometheusUrl \"" + baseUrl +
                                  "\" is plain http and bearerTokenSecret is set: the token would travel "
                                  "unencrypted; use https://");
    }
  }
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
