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
  // `bindAddress` is host:port (":8081" means all interfaces; port 0 picks a free one). Throws
  // when it cannot listen.
  explicit HealthServer(const std::string& bindAddress);
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  void addReadyCheck(std::string name, std::function<bool()> check);
  // What /readyz would answer: the names of the checks that fail (empty: ready).
  std::vector<std::string> failingReadyChecks();
  // The port listened on (the one picked when the address asked for port 0).
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::function<bool()>>> readyChecks_;
};

}  // namespace vto::controller
