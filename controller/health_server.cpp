#include "controller/health_server.h"

#include <cpprest/http_listener.h>

#include <stdexcept>

#include "base/free_port.h"

namespace vto::controller {

namespace http = web::http;

struct HealthServer::Impl {
  std::unique_ptr<http::experimental::listener::http_listener> listener;
};

namespace {

// ":8081" and "0.0.0.0:8081" both listen everywhere. Returns {host, port}.
std::pair<std::string, int> splitBindAddress(const std::string& bindAddress) {
  auto hostPort = splitHostPort(bindAddress);
  if (!hostPort)
    throw std::invalid_argument("health probe address '" + bindAddress + "' must be host:port, e.g. :8081 (port 0 picks a free one)");
  if (hostPort->first.empty()) hostPort->first = "0.0.0.0";
  return *hostPort;
}

}  // namespace

HealthServer::HealthServer(const std::string& bindAddress) : impl_(std::make_unique<Impl>()) {
  auto [host, port] = splitBindAddress(bindAddress);
  auto handle = [this](const http::http_request& request) {
    auto path = request.relative_uri().path();
    if (path == "/healthz") {
      request.reply(http::status_codes::OK, "ok");
    } else if (path == "/readyz") {
      auto failing = failingReadyChecks();
      if (failing.empty()) {
        request.reply(http::status_codes::OK, "ok");
      } else {
        std::string body;
        for (const auto& name : failing) body += "[-] " + name + " failed\n";
        request.reply(http::status_codes::ServiceUnavailable, body);
      }
    } else {
      request.reply(http::status_codes::NotFound, "try /healthz or /readyz\n");
    }
  };
  try {
    // cpprest's listener cannot report the port it bound: port 0 becomes a free port chosen here.
    port_ = openOnPort(host, port, [&, host = host](int candidate) {
      impl_->listener = std::make_unique<http::experimental::listener::http_listener>(
          "http://" + host + ":" + std::to_string(candidate));
      impl_->listener->support(http::methods::GET, handle);
      impl_->listener->open().wait();
    });
  } catch (const std::exception& error) {
    throw std::runtime_error("cannot serve health probes on " + bindAddress + ": " + error.what() +
                             "; pass a free host:port to --health-probe-bind-address");
  }
}

HealthServer::~HealthServer() {
  try {
    impl_->listener->close().wait();
  } catch (const std::exception&) {
    // Closing during shutdown: nothing left to report to.
  }
}

void HealthServer::addReadyCheck(std::string name, std::function<bool()> check) {
  std::lock_guard guard(mutex_);
  readyChecks_.emplace_back(std::move(name), std::move(check));
}

std::vector<std::string> HealthServer::failingReadyChecks() {
  std::lock_guard guard(mutex_);
  std::vector<std::string> failing;
  for (const auto& [name, check] : readyChecks_) {
    if (!check()) failing.push_back(name);
  }
  return failing;
}

}  // namespace vto::controller
