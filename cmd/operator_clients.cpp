#include "cmd/operator_clients.h"

#include <algorithm>

namespace vto::cmd {

void RequestMetricsObserver::requestDone(const std::string& method, const std::string& code, Clock::duration took) {
  if (service_ == Service::Vertex) {
    metrics_.vertexRequest(method, code, std::chrono::duration<double>(took).count());
  } else if (service_ == Service::Gcs) {
    metrics_.gcsRequest(method, code);
  } else {
    metrics_.loggingRequest(method, code);
  }
}

void RequestMetricsObserver::quotaWaited(Clock::duration waited) {
  if (service_ == Service::Vertex) metrics_.vertexQuotaWait(std::chrono::duration<double>(waited).count());
}

void RequestMetricsObserver::timedOut() {
  metrics_.requestTimedOut(service_ == Service::Vertex ? "vertex" : service_ == Service::Gcs ? "gcs" : "logging");
}

OperatorClients::OperatorClients(const Flags& flags, const Clock& clock, metrics::ApiRequestMetrics& requestMetrics)
    : tokens_(vertex::defaultTokenSource(http_, clock)),  // the token source keeps the bare transport
      vertexRequests_(requestMetrics, RequestMetricsObserver::Service::Vertex),
      gcsRequests_(requestMetrics, RequestMetricsObserver::Service::Gcs),
      loggingRequests_(requestMetrics, RequestMetricsObserver::Service::Logging),
      vertexHttp_(http_, clock, vertexRequests_, vertex::vertexMethodOf),
      gcsHttp_(http_, clock, gcsRequests_, vertex::gcsMethodOf),
      loggingHttp_(http_, clock, loggingRequests_, vertex::loggingMethodOf) {
  vertex::VertexClientOptions options;
  options.endpoint = flags.get("vertex-endpoint");
  options.allowInsecure = flags.getBool("allow-insecure-endpoints");
  options.limits.createsPerMinute = flags.getInt("vertex-creates-per-minute");
  options.limits.requestsPerMinute = flags.getInt("vertex-requests-per-minute");
  options.observer = &vertexRequests_;
  // Silence beyond this is a failure (a dead path); the poll, or the run's next pass, asks again.
  options.timeout = std::chrono::seconds(std::max(1, flags.getInt("vertex-request-timeout")));
  if (!options.endpoint.empty()) vertex::validateEndpoint(options.endpoint, options.allowInsecure);
  vertex_ = std::make_unique<vertex::RestVertexClient>(vertexHttp_, *tokens_, clock, options);
  // Model Registry requests count against the same per-region Vertex quota as the jobs' requests.
  vertex::ModelRegistryOptions registry;
  registry.endpoint = options.endpoint;
  registry.allowInsecure = options.allowInsecure;
  registry.requestsPerMinute = options.limits.requestsPerMinute;
  registry.pacer = &vertex_->pacer();
  registry.observer = &vertexRequests_;
  registry.timeout = options.timeout;
  registry_ = std::make_unique<vertex::RestModelRegistry>(vertexHttp_, *tokens_, clock, registry);
  auto gcsFlag = flags.get("gcs-endpoint");
  gcs_ = std::make_unique<vertex::RestGcsClient>(
      gcsHttp_, vertex::gcsEndpoint(gcsFlag.empty() ? std::nullopt : std::optional(gcsFlag)), tokens_.get(),
      options.allowInsecure);
  // Never http_: a tenant chooses the server, so its connections and DNS lookups must not be the
  // pool's (or the lookup budget's) that carries Google's token. A connection per query, closed after.
  prometheus_ = std::make_unique<vertex::PrometheusClient>(options.allowInsecure);
  // Failed attempts' log tails. A Vertex emulator (--vertex-endpoint) serves the logs too, as for `vto logs`.
  if (flags.getInt("log-tail-lines") > 0) {
    vertex::LoggingClientOptions logging;
    logging.endpoint = flags.get("logging-endpoint");
    if (logging.endpoint.empty()) logging.endpoint = options.endpoint.empty() ? "https://logging.googleapis.com" : options.endpoint;
    logging.allowInsecure = options.allowInsecure;
    // One client, so one pacer, for every log tail of the operator.
    logging.requestsPerMinute = std::max(1, flags.getInt("logging-requests-per-minute"));
    // One tail is a page or two; the whole page's size bound stays as for `vto logs`.
    logging_ = std::make_unique<vertex::RestLoggingClient>(loggingHttp_, *tokens_, clock, logging);
  }
}

}  // namespace vto::cmd
