#pragma once
// One HTTP exchange, behind an interface so the client's retry, pacing and auth logic can be unit
// tested against a scripted fake (tests/fakes/vertex_fake_transport.h).
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "base/url.h"

namespace vto::vertex {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  std::chrono::milliseconds timeout{30000};
  // 0: any size. Else an answer whose Content-Length, or body, is larger is a TransportError.
  std::size_t maxBodyBytes = 0;
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
  // Open connections per endpoint (scheme, host, port), busy or idle: a request that finds none
  // idle and this many open waits for one, at most its own timeout.
  size_t maxConnectionsPerEndpoint = 16;
  // Every request's timeout (connect, TLS handshake, write and read together) is clamped to this.
  std::chrono::milliseconds maxTimeout{std::chrono::minutes(2)};
  // An idle connection older than this is closed instead of reused (servers drop idle ones).
  std::chrono::milliseconds idleTimeout{std::chrono::seconds(30)};
  // A response body beyond this is an error, not an allocation.
  size_t maxResponseBytes = 64 << 20;
};

// HTTP/1.1 with keep-alive connections pooled per endpoint (Boost.Beast, OpenSSL with certificates
// and host names verified): a request reuses an idle connection, so the DNS lookup, TCP connect and
// TLS handshake happen once per connection, not once per request. The exchange runs on the
// caller's thread. A reused connection the server has closed meanwhile is replaced and the request
// sent once more. Thread-safe.
class PooledHttpTransport final : public HttpTransport {
 public:
  explicit PooledHttpTransport(HttpTransportOptions options = {});
  ~PooledHttpTransport() override;
  PooledHttpTransport(const PooledHttpTransport&) = delete;
  PooledHttpTransport& operator=(const PooledHttpTransport&) = delete;

  HttpResponse send(const HttpRequest& request) override;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

// The former name (the transport was cpprestsdk's client): kept so that callers compile unchanged.
using CppRestTransport = PooledHttpTransport;

// Percent-encoding lives with the URL builder in base/url.h.
using vto::urlEncode;

}  // namespace vto::vertex
