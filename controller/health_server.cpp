#include "controller/health_server.h"

#include <cpprest/http_listener.h>

#include <stdexcept>

namespace vto::controller {

namespace http = web::http;

struct HealthServer::Impl {
  std::unique_ptr<http::experimental::listener::http_listener> listener;
};

namespace {

// ":8081" and "0.0.0.0:8081" both listen everywhere; cpprest wants a URL.
std::string listenUrl(const std::string& bindAddress) {
  auto colon = bindAddress.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("health probe address '" + bindAddress +
                                "' must be host:port, e.g. :8081");
  }
  std::string host = bindAddress.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  return "http://" + host + ":" + bindAddress.substr(colon + 1);
}

}  // namespace

HealthServer::HealthServer(const std::string& bindAddress) : impl_(std::make_unique<Impl>()) {
  impl_->listener = std::make_unique<http::experimental::listener::http_listener>(listenUrl(bindAddress));
  impl_->listener->support(http::methods::GET, [this](const http::http_request& request) {
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
  });
  try {
    impl_->listener->open().wait();
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
