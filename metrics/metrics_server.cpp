#include "metrics/metrics_server.h"

#include <stdexcept>

namespace vto::metrics {

MetricsServer::MetricsServer(const std::string& bindAddress,
                             std::shared_ptr<prometheus::Registry> registry,
                             std::vector<std::weak_ptr<prometheus::Collectable>> extra)
    : registry_(std::move(registry)) {
  // ":8080" (all interfaces, as Kubernetes flags write it) is "0.0.0.0:8080" to the exposer.
  std::string address = !bindAddress.empty() && bindAddress[0] == ':' ? "0.0.0.0" + bindAddress : bindAddress;
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
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
