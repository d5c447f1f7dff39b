#include "metrics/metrics_server.h"

#include <stdexcept>

namespace vto::metrics {

MetricsServer::MetricsServer(const std::string& bindAddress,
                             std::shared_ptr<prometheus::Registry> registry,
                             std::vector<std::weak_ptr<prometheus::Collectable>> extra, MetricsServerLimits limits)
    : registry_(std::move(registry)) {
  // ":8080" (all interfaces, as Kubernetes flags write it) is "0.0.0.0:8080" to the exposer.
  std::string address = !bindAddress.empty() && bindAddress[0] == ':' ? "0.0.0.0" + bindAddress : bindAddress;
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address,
        // Two threads (the exposer's default) let two idle connections block every scrape.
        "num_threads", std::to_string(limits.threads),
        // A client that sends nothing, or too slowly, is cut off instead of holding a thread.
        "request_timeout_ms", std::to_string(limits.readTimeout.count()),
        "enable_keep_alive", "no",
        // Request line and headers; civetweb refuses more with an error and never reads a body
        // for /metrics (GET only).
        "max_request_size", std::to_string(limits.maxHeaderBytes),
        "connection_queue", "64",
        "linger_timeout_ms", "500"});
  } catch (const std::exception& error) {
    throw std::runtime_error("cannot serve metrics on " + bindAddress + ": " + error.what() +
                             "; pass a free host:port to --metrics-bind-address");
  }
  exposer_->RegisterCollectable(registry_);
  for (auto& collectable : extra) exposer_->RegisterCollectable(collectable);
}

int MetricsServer::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace vto::metrics
