#pragma once
// The probes on --health-probe-bind-address: /healthz answers 200 while the process serves;
// /readyz answers 200 only when every readiness check passes (caches synced, ...), else 503 with
// the names of the failing checks, so `kubectl describe pod` says why the pod is not ready.
//
// Anyone who can reach the port can talk to it, so it is a deliberately small HTTP/1.1 server that
// holds nothing a client sends: GET and HEAD only (405 otherwise), no request body (413), request
// line and headers capped (431), a deadline for the whole request (408), one response per
// connection, and one poll() loop for every connection, so idle clients hold no thread. Idle
// connections cannot lock the probes out either: at maxConnections, a new connection closes the
// oldest one that has not sent a whole request (with a 503), and a request that arrived with its
// connection is answered at once. The kubelet sends its request as it connects, so a flood of idle
// connections evicts the flood, not the probe.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vto::controller {

struct HealthServerLimits {
  size_t maxHeaderBytes = 8 * 1024;
  std::chrono::milliseconds readTimeout{5000};  // for the request line and headers together
  size_t maxConnections = 256;  // open at once; at the limit the oldest without a request makes room
};

class HealthServer {
 public:
  // `bindAddress` is host:port (":8081" means all interfaces; port 0 picks a free one). Throws
  // when it cannot listen.
  explicit HealthServer(const std::string& bindAddress, HealthServerLimits limits = {});
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  int port() const;
  void addReadyCheck(std::string name, std::function<bool()> check);
  // What /readyz would answer: the names of the checks that fail (empty: ready).
  std::vector<std::string> failingReadyChecks();

 private:
  struct Impl;
  void serveLoop();
  void answer(int fd, const struct ProbeRequest* request, bool tooLarge);
  std::unique_ptr<Impl> impl_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::function<bool()>>> readyChecks_;
};

}  // namespace vto::controller
