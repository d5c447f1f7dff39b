#include "metrics/api_request_metrics.h"

#include <prometheus/gauge.h>

namespace vto::metrics {

ApiRequestMetrics::ApiRequestMetrics(prometheus::Registry& registry)
    : registry_(registry),
      vertexRequests_(prometheus::BuildCounter()
                          .Name("vto_vertex_requests_total")
                          .Help("HTTP requests to Vertex AI, by API method and HTTP status (<error>: no answer)")
                          .Register(registry)),
      vertexDuration_(prometheus::BuildHistogram()
                          .Name("vto_vertex_request_duration_seconds")
                          .Help("Latency of HTTP requests to Vertex AI, by API method")
                          .Register(registry)),
      quotaWait_(prometheus::BuildHistogram()
                     .Name("vto_vertex_quota_wait_seconds")
                     .Help("Time Vertex AI calls waited for vto's client-side pacer (its per-minute quota)")
                     .Register(registry)
                     .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60})),
      gcsRequests_(prometheus::BuildCounter()
                       .Name("vto_gcs_requests_total")
                       .Help("HTTP requests to Cloud Storage, by API method and HTTP status (<error>: no answer)")
                       .Register(registry)),
      loggingRequests_(prometheus::BuildCounter()
                           .Name("vto_cloud_logging_requests_total")
                           .Help("HTTP requests to Cloud Logging, by API method and HTTP status (<error>: no answer)")
                           .Register(registry)),
      eventsDropped_(prometheus::BuildCounter()
                         .Name("vto_events_dropped_total")
                         .Help("Kubernetes Events not recorded because the event queue was full (a slow API server)")
                         .Register(registry)
                         .Add({})) {
  for (const auto* client : {"vertex", "gcs", "logging"}) requestTimeouts(registry, client);
}

void ApiRequestMetrics::vertexRequest(const std::string& method, const std::string& code, double seconds) {
  vertexRequests_.Add({{"method", method}, {"code", code}}).Increment();
  vertexDuration_
      .Add({{"method", method}}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                                          2.5, 5, 10, 30, 60})
      .Observe(seconds);
}

void ApiRequestMetrics::vertexQuotaWait(double seconds) { quotaWait_.Observe(seconds); }

void ApiRequestMetrics::eventsDropped(uint64_t count) { eventsDropped_.Increment(static_cast<double>(count)); }

void ApiRequestMetrics::gcsRequest(const std::string& method, const std::string& code) {
  gcsRequests_.Add({{"method", method}, {"code", code}}).Increment();
}

void ApiRequestMetrics::loggingRequest(const std::string& method, const std::string& code) {
  loggingRequests_.Add({{"method", method}, {"code", code}}).Increment();
}

prometheus::Counter& requestTimeouts(prometheus::Registry& registry, const std::string& client) {
  return prometheus::BuildCounter()
      .Name("vto_request_timeouts_total")
      .Help("Requests that got no answer, or watches no byte, before their deadline, by client")
      .Register(registry)
      .Add({{"client", client}});
}

void registerBuildInfo(prometheus::Registry& registry, const std::string& version, const std::string& revision,
                       const std::string& clusterId) {
  prometheus::BuildGauge()
      .Name("vto_build_info")
      .Help("Always 1; the labels say which vto build is running")
      .Register(registry)
      .Add({{"version", version}, {"revision", revision}, {"cluster_id", clusterId}})
      .Set(1);
}

}  // namespace vto::metrics
