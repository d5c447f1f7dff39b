#pragma once
// One HTTP exchange, behind an interface so the client's retry, pacing and auth logic can be unit
// tested against a scripted fake (tests/fakes/vertex_fake_transport.h).
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

namespace vto::vertex {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  std::chrono::milliseconds timeout{30000};
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Returns any HTTP answer, error statuses included; throws TransportError when there is none
  // (connection refused, TLS failure, timeout).
  virtual HttpResponse send(const HttpRequest& request) = 0;
};

struct HttpTransportOptions {
  // Requests in flight per endpoint (scheme, host, port), hence open connections per endpoint: a
  // request beyond it waits for a free connection, at most its own timeout.
  size_t maxConnectionsPerEndpoint = 16;
  // Every request's timeout is clamped to this, so no caller can hold a connection forever.
  std::chrono::milliseconds maxTimeout{std::chrono::minutes(2)};
};

// cpprestsdk, with TLS certificates verified. Connections are kept alive and reused: one client
// (its DNS answer, TCP and TLS sessions) per endpoint and timeout for the transport's lifetime,
// not one per request. Thread-safe.
class CppRestTransport final : public HttpTransport {
 public:
  explicit CppRestTransport(HttpTransportOptions options = {});
  ~CppRestTransport() override;
  CppRestTransport(const CppRestTransport&) = delete;
  CppRestTransport& operator=(const CppRestTransport&) = delete;

  HttpResponse send(const HttpRequest& request) override;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

// Percent-encodes a query parameter value or a path segment.
std::string urlEncode(const std::string& text);

}  // namespace vto::vertex
