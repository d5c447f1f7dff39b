#pragma once
// The operator's outbound clients, built from `vto run`'s flags: Vertex AI (jobs and Model Registry),
// Cloud Storage and Prometheus (on a transport of its own: a tenant chooses the server), with the Google
// credentials of the operator's own identity, every Google request
// counted in the request metrics. Only cmd/ constructs concrete clients.
#include <memory>

#include "base/clock.h"
#include "cmd/flags.h"
#include "metrics/api_request_metrics.h"
#include "vertex/auth.h"
#include "vertex/gcs_client.h"
#include "vertex/http_transport.h"
#include "vertex/logging_client.h"
#include "vertex/model_registry.h"
#include "vertex/prometheus_client.h"
#include "vertex/request_observer.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {

// Every flag of `vto run` with its default (cmd/run.cpp): OperatorClients reads its share of them, and
// tests build the clients from the same list, so a new flag cannot be missing from a test's copy.
Flags runFlags();

// metrics::ApiRequestMetrics as a vertex::RequestObserver, for one service.
class RequestMetricsObserver final : public vertex::RequestObserver {
 public:
  enum class Service { Vertex, Gcs, Logging };
  RequestMetricsObserver(metrics::ApiRequestMetrics& metrics, Service service) : metrics_(metrics), service_(service) {}
  void requestDone(const std::string& method, const std::string& code, Clock::duration took) override;
  void quotaWaited(Clock::duration waited) override;
  void timedOut() override;

 private:
  metrics::ApiRequestMetrics& metrics_;
  Service service_;
};

class OperatorClients {
 public:
  // Reads --vertex-endpoint, --gcs-endpoint, --logging-endpoint, --log-tail-lines,
  // --allow-insecure-endpoints and the Vertex quota flags.
  OperatorClients(const Flags& flags, const Clock& clock, metrics::ApiRequestMetrics& requestMetrics);

  vertex::VertexClient& vertex() { return *vertex_; }
  vertex::GcsClient& gcs() { return *gcs_; }
  vertex::PrometheusClient& prometheus() { return *prometheus_; }
  vertex::ModelRegistry& registry() { return *registry_; }
  // Cloud Logging, for failed attempts' log tails; null with --log-tail-lines=0.
  vertex::LoggingClient* logging() { return logging_.get(); }

 private:
  vertex::CppRestTransport http_;
  std::unique_ptr<vertex::TokenSource> tokens_;
  RequestMetricsObserver vertexRequests_, gcsRequests_, loggingRequests_;
  vertex::ObservedTransport vertexHttp_, gcsHttp_, loggingHttp_;
  std::unique_ptr<vertex::RestVertexClient> vertex_;
  std::unique_ptr<vertex::RestModelRegistry> registry_;
  std::unique_ptr<vertex::RestGcsClient> gcs_;
  std::unique_ptr<vertex::PrometheusClient> prometheus_;
  std::unique_ptr<vertex::RestLoggingClient> logging_;
};

}  // namespace vto::cmd
