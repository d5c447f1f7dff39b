#pragma once
// Requests vto makes to Google's APIs: vto_vertex_requests_total{method,code},
// vto_vertex_request_duration_seconds{method}, vto_vertex_quota_wait_seconds, vto_gcs_requests_total{code},
// vto_cloud_logging_requests_total{method,code};
// and the Kubernetes Event writes vto gave up on, vto_events_dropped_total.
// cmd/ connects these to vertex::RequestObserver (this layer does not depend on vertex/).
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <string>

namespace vto::metrics {

// vto_request_timeouts_total{client}: a request that got no answer (or a watch no byte) before its
// deadline; client is kubernetes, vertex, gcs or logging. Silence is the failure no status code reports.
// (Each series exists at 0 from the first scrape once its client is wired.)
prometheus::Counter& requestTimeouts(prometheus::Registry& registry, const std::string& client);

class ApiRequestMetrics {
 public:
  explicit ApiRequestMetrics(prometheus::Registry& registry);

  // `code` is the HTTP status or "<error>" when no answer arrived.
  void vertexRequest(const std::string& method, const std::string& code, double seconds);
  void vertexQuotaWait(double seconds);
  void gcsRequest(const std::string& method, const std::string& code);
  void loggingRequest(const std::string& method, const std::string& code);
  void requestTimedOut(const std::string& client) { requestTimeouts(registry_, client).Increment(); }
  // Events the recorder dropped (queue full while the API server was slow).
  void eventsDropped(uint64_t count);

 private:
  prometheus::Registry& registry_;
  prometheus::Family<prometheus::Counter>& vertexRequests_;
  prometheus::Family<prometheus::Histogram>& vertexDuration_;
  prometheus::Histogram& quotaWait_;
  prometheus::Family<prometheus::Counter>& gcsRequests_;
  prometheus::Family<prometheus::Counter>& loggingRequests_;
  prometheus::Counter& eventsDropped_;
};

// vto_build_info{version,revision} 1: which build is running (join on it in queries).
void registerBuildInfo(prometheus::Registry& registry, const std::string& version, const std::string& revision,
                       const std::string& clusterId);

}  // namespace vto::metrics
