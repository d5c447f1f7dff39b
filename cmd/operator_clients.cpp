#include "cmd/operator_clients.h"

namespace vto::cmd {

void RequestMetricsObserver::requestDone(const std::string& method, const std::string& code, Clock::duration took) {
  if (service_ == Service::Vertex) {
    metrics_.vertexRequest(method, code, std::chrono::duration<double>(took).count());
  } else {
    metrics_.gcsRequest(method, code);
  }
}

void RequestMetricsObserver::quotaWaited(Clock::duration waited) {
  if (service_ == Service::Vertex) metrics_.vertexQuotaWait(std::chrono::duration<double>(waited).count());
}

OperatorClients::OperatorClients(const Flags& flags, const Clock& clock, metrics::ApiRequestMetrics& requestMetrics)
    : tokens_(vertex::defaultTokenSource(http_, clock)),  // the token source keeps the bare transport
      vertexRequests_(requestMetrics, RequestMetricsObserver::Service::Vertex),
      gcsRequests_(requestMetrics, RequestMetricsObserver::Service::Gcs),
      vertexHttp_(http_, clock, vertexRequests_, vertex::vertexMethodOf),
      gcsHttp_(http_, clock, gcsRequests_, vertex::gcsMethodOf) {
  vertex::VertexClientOptions options;
  options.endpoint = flags.get("vertex-endpoint");
  options.allowInsecure = flags.getBool("allow-insecure-endpoints");
  options.limits.createsPerMinute = flags.getInt("vertex-creates-per-minute");
  options.limits.requestsPerMinute = flags.getInt("vertex-requests-per-minute");
  options.observer = &vertexRequests_;
  if (!options.endpoint.empty()) vertex::validateEndpoint(options.endpoint, options.allowInsecure);
  vertex_ = std::make_unique<vertex::RestVertexClient>(vertexHttp_, *tokens_, clock, options);
  auto gcsFlag = flags.get("gcs-endpoint");
  gcs_ = std::make_unique<vertex::RestGcsClient>(
      gcsHttp_, vertex::gcsEndpoint(gcsFlag.empty() ? std::nullopt : std::optional(gcsFlag)), tokens_.get(),
      options.allowInsecure);
  prometheus_ = std::make_unique<vertex::PrometheusClient>(http_, options.allowInsecure);
}

}  // namespace vto::cmd
