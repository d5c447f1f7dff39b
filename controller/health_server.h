#pragma once
// The probes on --health-probe-bind-address: /healthz answers 200 while the process serves;
// /readyz answers 200 only when every readiness check passes (caches synced, ...), else 503 with
// the names of the failing checks, so `kubectl describe pod` says why the pod is not ready.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vto::controller {

class HealthServer {
 public:
  // `bindAddress` is host:port (":8081" means all interfaces). Throws when it cannot listen.
  explicit HealthServer(const std::string& bindAddress);
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  void addReadyCheck(std::string name, std::function<bool()> check);
  // What /readyz would answer: the names of the checks that fail (empty: ready).
  std::vector<std::string> failingReadyChecks();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::function<bool()>>> readyChecks_;
};

}  // namespace vto::controller
