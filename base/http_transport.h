#pragma once
// One HTTP exchange, behind an interface so the Vertex client's retry, pacing and auth logic can be
// unit tested against a scripted fake (tests/fakes/vertex_fake_transport.h). The one HTTP client of
// every outbound request: Vertex, GCS, the token endpoints, Prometheus and the kube API server.
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/retryable_error.h"
#include "base/url.h"

namespace boost::asio::ssl {
class context;
}

namespace vto {

// No HTTP answer at all: connection refused, TLS failure, timeout, a cut connection.
class TransportError : public RetryableError {
 public:
  explicit TransportError(const std::string& what) : RetryableError(what) {}
};

// No answer before the deadline: a silent peer or a dead path (connect, TLS handshake, the request
// or its response, a DNS lookup, a free pooled connection). Counted apart from other transport
// failures (vto_request_timeouts_total): silence is the failure nothing else reports.
class TimeoutError : public TransportError {
 public:
  explicit TimeoutError(const std::string& what) : TransportError(what) {}
};

// A request the transport refused to put on the wire: a URL parseUrl refuses, a method that is not
// an HTTP token, a header name that is not one or a header value with CR, LF or another control
// character. Each could add a header or a request of its own; none is transient, so it is not
// retryable. The message says what is wrong, never the value itself (it may be hostile, or a token).
class RefusedRequestError : public TransportError {
 public:
  explicit RefusedRequestError(const std::string& what) : TransportError(what) {}
  bool isRetryable() const override { return false; }
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  std::chrono::milliseconds timeout{30000};
  // 0: any size. Else an answer whose Content-Length, or body, is larger is a TransportError.
  std::size_t maxBodyBytes = 0;
  // Whose request this is (a tenant's namespace): its DNS lookups count against this key's budget
  // (HttpTransportOptions::maxPendingLookupsPerKey) as well as the transport's. "": the transport's only.
  std::string lookupBudgetKey;
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

// Turns a host name into numeric addresses ("10.0.0.7", "::1"), for a new connection; throws
// (any std::exception, its what() says why) when there are none. The default is getaddrinfo(3).
using HostResolver = std::function<std::vector<std::string>(const std::string& host, const std::string& port)>;

struct HttpTransportOptions {
  // Open connections per endpoint (scheme, host, port), busy or idle: a request that finds none
  // idle and this many open waits for one, at most its own timeout.
  size_t maxConnectionsPerEndpoint = 16;
  // Every request's timeout (connect, TLS handshake, write and read together) is clamped to this.
  std::chrono::milliseconds maxTimeout{std::chrono::minutes(2)};
  // An idle connection older than this is closed instead of reused (servers drop idle ones).
  std::chrono::milliseconds idleTimeout{std::chrono::seconds(30)};
  // false: a connection per request, "Connection: close", never reused. For endpoints someone else
  // chooses (a tenant's Prometheus): nothing a server sends can then reach a later request.
  bool keepAlive = true;
  // Host names are resolved on a thread of their own so that a request waits for the answer at most
  // until its deadline (the resolver's own timeouts can be far longer); a lookup that outlives its
  // request finishes in the background. Past this many such lookups still running, a new one is
  // refused at once (a resolver that never answers costs threads, not hangs). IP literals are
  // never looked up. `resolve` replaces getaddrinfo (tests inject a slow one).
  size_t maxPendingLookups = 8;
  // Of those, at most this many for one HttpRequest::lookupBudgetKey (0: no limit per key), so that
  // one tenant's resolver that never answers cannot take every other tenant's lookups.
  size_t maxPendingLookupsPerKey = 0;
  HostResolver resolve{};
  // TCP keepalive on every socket: probes after this much idle time, every `keepAliveInterval`, and
  // the connection is dead after `keepAliveProbes` unanswered ones. Catches a peer that vanished
  // (a NAT or load balancer that forgot the flow) under an idle pooled connection or a quiet watch.
  std::chrono::seconds keepAliveIdle{30};
  std::chrono::seconds keepAliveInterval{10};
  int keepAliveProbes = 3;
  // A response body beyond this is an error, not an allocation.
  size_t maxResponseBytes = 64 << 20;
  // TLS: the peer's certificate and host name are verified unless this is false (only a kubeconfig's
  // explicit insecure-skip-tls-verify turns it off). configureTls, when set, adjusts the context
  // once (a cluster CA instead of the system's, a client certificate); else the system's CAs.
  bool verifyPeer = true;
  std::function<void(boost::asio::ssl::context&)> configureTls{};
};

// Makes `context` trust the system's CA certificates (as set_default_verify_paths would), from one
// store parsed once per process and shared by every context that trusts them.
void trustSystemRoots(boost::asio::ssl::context& context);

// HTTP/1.1 with keep-alive connections pooled per endpoint (Boost.Beast, OpenSSL with certificates
// and host names verified): a request reuses an idle connection, so the DNS lookup, TCP connect and
// TLS handshake happen once per connection, not once per request. The exchange runs on the
// caller's thread. A reused connection the server has closed meanwhile is replaced and the request
// sent once more. A connection that holds bytes nobody asked for (beyond the response just read, or
// arriving while it was idle: a second, smuggled response) is closed, never reused. A request is
// checked before any connection is made (RefusedRequestError). A request that times out closes its
// connection and every connection of its endpoint that was idle when it started: they run over
// the path that just went silent, and the next request must not wait a whole timeout on each of
// them in turn. Thread-safe.
class PooledHttpTransport final : public HttpTransport {
 public:
  explicit PooledHttpTransport(HttpTransportOptions options = {});
  ~PooledHttpTransport() override;
  PooledHttpTransport(const PooledHttpTransport&) = delete;
  PooledHttpTransport& operator=(const PooledHttpTransport&) = delete;

  HttpResponse send(const HttpRequest& request) override;

  // A long-lived streamed answer (a kube watch), on a connection of its own that is never pooled.
  // For a 2xx answer, calls onLine with each '\n'-terminated line of the body as it arrives and
  // returns at the body's end, or as soon as `stop` is requested. Any other answer is returned whole
  // (bounded by maxResponseBytes) without calling onLine. request.timeout bounds the connect and
  // the headers; after that, no byte for `idleTimeout` is a TransportError (a dead link). A line
  // longer than maxResponseBytes is a TransportError too. A timeout is a TimeoutError. `onOpen`, when
  // set, is called once a 2xx answer's headers have arrived (the server accepted the stream).
  HttpResponse streamLines(const HttpRequest& request, const std::function<void(std::string_view line)>& onLine,
                           std::stop_token stop, std::chrono::milliseconds idleTimeout,
                           const std::function<void()>& onOpen = {});

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

}  // namespace vto
