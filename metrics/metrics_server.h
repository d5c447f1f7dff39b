#pragma once
// The process's Prometheus endpoint: serves /metrics on --metrics-bind-address from the shared
// registry (every layer adds its families there: controller-runtime's names, then vto_*), plus any
// collectable that computes its values at scrape time.
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace vto::metrics {

// Whoever can reach the port can connect: bounded threads, time and request size.
struct MetricsServerLimits {
  int threads = 8;
  std::chrono::milliseconds readTimeout{5000};
  size_t maxHeaderBytes = 8 * 1024;
};

class MetricsServer {
 public:
  // `bindAddress` is host:port or :port (port 0 picks a free one); throws with the address when it
  // cannot bind.
  MetricsServer(const std::string& bindAddress, std::shared_ptr<prometheus::Registry> registry,
                std::vector<std::weak_ptr<prometheus::Collectable>> extra = {}, MetricsServerLimits limits = {});
  // The port actually bound, useful when the address asked for port 0.
  int port() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace vto::metrics
