#include "base/http_transport.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>


namespace vto {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Endpoints are few (the Vertex regions in use, GCS, the metadata server); past this many, those
// with no connection are forgotten so that a stream of distinct hosts cannot grow the pool.
constexpr size_t kMaxEndpoints = 64;

// Where a request goes: the pool's key, the connection's target and the Host header.
struct Url {
  bool tls = false;
  std::string host;  // without brackets for an IPv6 literal
  std::string port;
  std::string target;  // path and query
  std::string hostHeader;
};

bool isTokenChar(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}
bool isToken(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return isTokenChar(c); });
}

// Where the request goes, once everything that will be written into its request line and headers
// has been checked: nothing is written verbatim that could end a line (parseUrl allows only RFC
// 3986's characters in the target). The errors name what is wrong, never the refused value.
Url checkedTargetOf(const HttpRequest& request) {
  if (!isToken(request.method)) throw RefusedRequestError("refused to send a request whose method is not an HTTP token");
  ParsedUrl parsed;
  try {
    parsed = parseUrl(request.url);  // the one strict URL parser (base/url.h)
  } catch (const InvalidUrl& error) {
    throw RefusedRequestError("refused to send " + request.method + " to an unusable URL: " + error.reason());
  }
  const auto what = "refused to send " + request.method + " " + request.url;
  if (parsed.scheme != "http" && parsed.scheme != "https") {
    throw RefusedRequestError(what + ": only http:// and https:// are supported");
  }
  for (const auto& [name, value] : request.headers) {
    if (!isToken(name)) throw RefusedRequestError(what + ": a header name is not an HTTP token");
    for (unsigned char c : value) {
      if ((c < 0x20 && c != '\t') || c == 0x7F) {
        throw RefusedRequestError(what + ": the value of header " + name + " has a control character");
      }
    }
  }
  Url out;
  out.tls = parsed.scheme == "https";
  out.host = parsed.host;
  out.port = parsed.port != 0 ? std::to_string(parsed.port) : (out.tls ? "443" : "80");
  out.target = parsed.path.empty() ? "/" : parsed.path;
  out.hostHeader = authorityOf(parsed);
  return out;
}

std::vector<std::string> systemResolve(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error(rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
  }
  std::vector<std::string> addresses;
  for (auto* entry = found; entry != nullptr; entry = entry->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(entry->ai_addr, entry->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      addresses.emplace_back(text);
    }
  }
  ::freeaddrinfo(found);
  return addresses;
}

// Host-name lookups that a request waits for at most until its deadline. getaddrinfo cannot be
// given a deadline, and glibc's getaddrinfo_a cannot cancel a lookup once it runs (gai_cancel says
// EAI_NOTCANCELED, and its buffers must live until it ends): either way the lookup outlives the
// request. So each runs on a detached thread of its own that owns its state, and the request waits
// on a condition variable with its deadline (and its stop token). Lookups still running are
// counted, the count capped (HttpTransportOptions::maxPendingLookups).
class DeadlineResolver {
 public:
  DeadlineResolver(HostResolver resolve, size_t maxPending, size_t maxPendingPerKey)
      : resolve_(resolve ? std::move(resolve) : HostResolver(systemResolve)),
        maxPending_(std::max<size_t>(maxPending, 1)),
        maxPendingPerKey_(maxPendingPerKey) {}

  std::vector<asio::ip::tcp::endpoint> resolve(const std::string& host, const std::string& port,
                                               SteadyClock::time_point deadline, const std::stop_token& stop,
                                               const std::string& budgetKey) {
    const auto portNumber = static_cast<unsigned short>(std::stoi(port));
    beast::error_code notAnAddress;
    auto literal = asio::ip::make_address(host, notAnAddress);
    if (!notAnAddress) return {asio::ip::tcp::endpoint(literal, portNumber)};

    const std::string key = maxPendingPerKey_ > 0 ? budgetKey : "";
    if (auto refused = pending_->admit(key, maxPending_, maxPendingPerKey_)) throw TransportError("cannot resolve " + host + ": " + *refused);
    auto lookup = std::make_shared<Lookup>();
    try {
      std::thread([lookup, pending = pending_, resolve = resolve_, host, port, key] {
        std::vector<std::string> addresses;
        std::string error;
        try {
          addresses = resolve(host, port);
        } catch (const std::exception& e) {
          error = e.what();
        }
        {
          std::lock_guard guard(lookup->mutex);
          lookup->addresses = std::move(addresses);
          lookup->error = std::move(error);
          lookup->finished = true;
        }
        lookup->done.notify_all();
        pending->finish(key);
      }).detach();
    } catch (const std::system_error& error) {
      pending_->finish(key);
      throw TransportError("cannot resolve " + host + ": " + error.what());
    }
    std::unique_lock lock(lookup->mutex);
    if (!lookup->done.wait_until(lock, stop, deadline, [&] { return lookup->finished; })) {
      if (stop.stop_requested()) throw TransportError("cannot resolve " + host + ": stopped");
      throw TimeoutError("cannot resolve " + host + ": no answer from the DNS resolver before the request's deadline");
    }
    if (!lookup->error.empty()) throw TransportError("cannot resolve " + host + ": " + lookup->error);
    std::vector<asio::ip::tcp::endpoint> endpoints;
    for (const auto& text : lookup->addresses) {
      beast::error_code bad;
      auto address = asio::ip::make_address(text, bad);
      if (!bad) endpoints.emplace_back(address, portNumber);
    }
    if (endpoints.empty()) throw TransportError("cannot resolve " + host + ": no address");
    return endpoints;
  }

 private:
  struct Lookup {
    std::mutex mutex;
    std::condition_variable_any done;
    bool finished = false;
    std::vector<std::string> addresses;
    std::string error;
  };
  // Lookups still running, in all and per budget key; shared with the threads that run them.
  struct Pending {
    std::mutex mutex;
    size_t total = 0;
    std::map<std::string, size_t> byKey;  // only keys with lookups running: bounded by maxPending
    std::optional<std::string> admit(const std::string& key, size_t max, size_t maxPerKey) {
      std::lock_guard lock(mutex);
      if (total >= max) return std::to_string(max) + " earlier lookups are still waiting for the DNS resolver";
      if (!key.empty() && byKey[key] >= maxPerKey) {
        if (byKey[key] == 0) byKey.erase(key);
        return std::to_string(maxPerKey) + " earlier lookups of " + key + " are still waiting for the DNS resolver";
      }
      ++total;
      if (!key.empty()) ++byKey[key];
      return std::nullopt;
    }
    void finish(const std::string& key) {
      std::lock_guard lock(mutex);
      --total;
      if (!key.empty() && --byKey[key] == 0) byKey.erase(key);
    }
  };
  HostResolver resolve_;
  size_t maxPending_;
  size_t maxPendingPerKey_;
  std::shared_ptr<Pending> pending_ = std::make_shared<Pending>();
};

struct KeepAlive {
  int idleSeconds = 30;
  int intervalSeconds = 10;
  int probes = 3;
};

// A TCP socket whose synchronous reads and writes wait (poll(2)) at most until `deadline`, or until
// `wakeFd` turns readable. Every exchange runs on the caller's thread with plain system calls: no
// reactor, no timer per operation, no handler dispatch (an Asio reactor per request was a quarter of
// the operator's CPU while submitting runs). Beast's synchronous HTTP and Asio's SSL stream run on it.
class DeadlineStream {
 public:
  using lowest_layer_type = asio::ip::tcp::socket::lowest_layer_type;
  using executor_type = asio::ip::tcp::socket::executor_type;

  explicit DeadlineStream(asio::io_context& io) : socket_(io) {}
  lowest_layer_type& lowest_layer() { return socket_; }
  const lowest_layer_type& lowest_layer() const { return socket_; }
  executor_type get_executor() { return socket_.get_executor(); }

  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  int wakeFd = -1;  // readable when the caller must give up (a watch being stopped); -1: none

  // Connects to the first of `addresses` that answers, by the deadline.
  void connect(const std::vector<asio::ip::tcp::endpoint>& addresses, beast::error_code& error) {
    error = asio::error::host_not_found;
    for (const auto& endpoint : addresses) {
      beast::error_code ignored;
      socket_.close(ignored);
      socket_.open(endpoint.protocol(), error);
      if (!error) socket_.non_blocking(true, error);  // Asio's own blocking calls would ignore the deadline
      if (error) continue;
      if (::connect(socket_.native_handle(), endpoint.data(), static_cast<socklen_t>(endpoint.size())) == 0) {
        return;
      }
      if (errno != EINPROGRESS) {
        error.assign(errno, beast::system_category());
        continue;
      }
      if (!wait(POLLOUT, error)) return;  // the deadline, or a stop: no other address would do better
      int failure = 0;
      socklen_t length = sizeof failure;
      ::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_ERROR, &failure, &length);
      if (failure == 0) return;
      error.assign(failure, beast::system_category());
    }
  }
  void setNoDelay() {
    beast::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  }
  // Kernel probes on an idle socket: a peer that vanished without a FIN or RST (a NAT or load
  // balancer that forgot the flow) fails the socket instead of leaving it open for ever.
  void setKeepAlive(const KeepAlive& probes) {
    int fd = socket_.native_handle();
    int on = 1, idle = probes.idleSeconds, interval = probes.intervalSeconds, count = probes.probes;
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  }

  template <typename Buffers>
  size_t read_some(const Buffers& buffers, beast::error_code& error) {
    return whenReady(POLLIN, error, [&](beast::error_code& e) { return socket_.read_some(buffers, e); });
  }
  template <typename Buffers>
  size_t write_some(const Buffers& buffers, beast::error_code& error) {
    return whenReady(POLLOUT, error, [&](beast::error_code& e) { return socket_.write_some(buffers, e); });
  }
  // The throwing forms Beast's and Asio's stream concepts require.
  template <typename Buffers>
  size_t read_some(const Buffers& buffers) {
    return orThrow([&](beast::error_code& e) { return read_some(buffers, e); });
  }
  template <typename Buffers>
  size_t write_some(const Buffers& buffers) {
    return orThrow([&](beast::error_code& e) { return write_some(buffers, e); });
  }

 private:
  // Runs the non-blocking `operation` until it does not ask to wait, waiting for `events` between tries.
  template <typename Operation>
  size_t whenReady(short events, beast::error_code& error, Operation operation) {
    while (true) {
      size_t bytes = operation(error);
      if (error != asio::error::would_block && error != asio::error::try_again) return bytes;
      if (!wait(events, error)) return 0;
    }
  }
  template <typename Operation>
  static size_t orThrow(Operation operation) {
    beast::error_code error;
    size_t bytes = operation(error);
    if (error) throw beast::system_error(error);
    return bytes;
  }

  // True when the socket is ready for `events` (or failed: the next call reports how); false with
  // `error` set at the deadline (beast::error::timeout) or on a wake (operation_aborted).
  bool wait(short events, beast::error_code& error) {
    while (true) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
      if (left <= 0) {
        error = beast::error::timeout;
        return false;
      }
      pollfd fds[2] = {{socket_.native_handle(), events, 0}, {wakeFd, POLLIN, 0}};
      int ready = ::poll(fds, wakeFd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 60'000)));
      if (ready < 0 && errno != EINTR) {
        error.assign(errno, beast::system_category());
        return false;
      }
      if (ready > 0 && wakeFd >= 0 && fds[1].revents != 0) {
        error = asio::error::operation_aborted;
        return false;
      }
      if (ready > 0 && fds[0].revents != 0) {
        error = {};
        return true;
      }
    }
  }

  asio::ip::tcp::socket socket_;
};

// One kept-alive connection, used by one thread at a time. The io_context is never run: Asio's SSL
// stream wants an executor, and every operation here is synchronous.
struct Connection {
  asio::io_context io;
  std::optional<DeadlineStream> plain;
  std::optional<asio::ssl::stream<DeadlineStream>> secure;
  beast::flat_buffer buffer;  // what the parser read past the end of the response
  SteadyClock::time_point idleSince;
  bool connected = false;

  DeadlineStream& raw() { return secure ? secure->next_layer() : *plain; }

  // Bytes that no request asked for, between two exchanges: read past the response (in the buffer,
  // or still encrypted in OpenSSL's), or waiting in the socket (a late second response, or the
  // server closing). Reused, such a connection would hand them to the next request as its answer.
  bool holdsUnaskedBytes() {
    if (buffer.size() > 0) return true;
    if (secure) {
      auto* ssl = secure->native_handle();
      if (SSL_has_pending(ssl) || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0) return true;
    }
    pollfd socket{raw().lowest_layer().native_handle(), POLLIN, 0};
    return ::poll(&socket, 1, 0) != 0;  // readable, closed or failed
  }
};

struct Endpoint {
  std::mutex mutex;
  std::condition_variable freed;
  std::vector<std::unique_ptr<Connection>> idle;  // most recently used last
  size_t open = 0;                                // idle + busy
};

}  // namespace

struct PooledHttpTransport::Pool {
  explicit Pool(HttpTransportOptions o)
      : options(std::move(o)),
        keepAlive{static_cast<int>(std::max<long long>(options.keepAliveIdle.count(), 1)),
                  static_cast<int>(std::max<long long>(options.keepAliveInterval.count(), 1)),
                  std::max(options.keepAliveProbes, 1)},
        resolver(options.resolve, options.maxPendingLookups, options.maxPendingLookupsPerKey) {}

  HttpTransportOptions options;
  KeepAlive keepAlive;
  DeadlineResolver resolver;
  asio::ssl::context tls{asio::ssl::context::tls_client};
  // The system's roots are attached before the first TLS connection, not at construction: a transport
  // that only ever speaks plain HTTP (an emulator, a local Prometheus) never parses them.
  bool trustsSystemRoots = false;
  std::once_flag systemRootsAttached;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Endpoint>> endpoints;

  std::shared_ptr<Endpoint> endpoint(const Url& url) {
    auto key = std::string(url.tls ? "https://" : "http://") + url.host + ":" + url.port;
    std::lock_guard guard(mutex);
    auto found = endpoints.find(key);
    if (found != endpoints.end()) return found->second;
    if (endpoints.size() >= kMaxEndpoints) {
      std::erase_if(endpoints, [](const auto& entry) {
        std::lock_guard inner(entry.second->mutex);
        return entry.second.use_count() == 1 && entry.second->open == 0;
      });
    }
    return endpoints.emplace(key, std::make_shared<Endpoint>()).first->second;
  }

  // An idle connection (fresh enough, holding nothing unasked for), or a new unconnected one if
  // fewer than the bound are open.
  std::unique_ptr<Connection> acquire(Endpoint& endpoint, const Url& url, SteadyClock::time_point deadline) {
    std::unique_lock lock(endpoint.mutex);
    while (true) {
      while (!endpoint.idle.empty()) {
        auto connection = std::move(endpoint.idle.back());
        endpoint.idle.pop_back();
        bool fresh = SteadyClock::now() - connection->idleSince < options.idleTimeout;
        if (fresh && !connection->holdsUnaskedBytes()) return connection;
        --endpoint.open;  // too old (the server has probably closed it), or not in step with its server
      }
      if (endpoint.open < std::max<size_t>(options.maxConnectionsPerEndpoint, 1)) {
        ++endpoint.open;
        lock.unlock();
        return newConnection(url.tls);
      }
      if (endpoint.freed.wait_until(lock, deadline) == std::cv_status::timeout) {
        throw TimeoutError("no free connection to " + url.host + ":" + url.port + " before the request's timeout (" +
                             std::to_string(options.maxConnectionsPerEndpoint) + " connections busy)");
      }
    }
  }

  std::unique_ptr<Connection> newConnection(bool secure) {
    auto connection = std::make_unique<Connection>();
    if (secure) {
      if (trustsSystemRoots) std::call_once(systemRootsAttached, [this] { trustSystemRoots(tls); });
      connection->secure.emplace(connection->io, tls);
    } else {
      connection->plain.emplace(connection->io);
    }
    return connection;
  }

  // After a timeout: the connections that were idle before `since` share the path that just went
  // silent. Reused one after another, each would cost the next requests a whole timeout again.
  void closeIdleSince(Endpoint& endpoint, SteadyClock::time_point since) {
    std::lock_guard guard(endpoint.mutex);
    auto before = endpoint.idle.size();
    std::erase_if(endpoint.idle, [since](const auto& connection) { return connection->idleSince < since; });
    endpoint.open -= before - endpoint.idle.size();
    endpoint.freed.notify_all();
  }

  void release(Endpoint& endpoint, std::unique_ptr<Connection> connection, bool reusable) {
    reusable = reusable && options.keepAlive && connection->buffer.size() == 0;
    std::lock_guard guard(endpoint.mutex);
    if (reusable) {
      connection->idleSince = SteadyClock::now();
      endpoint.idle.push_back(std::move(connection));
    } else {
      --endpoint.open;
    }
    endpoint.freed.notify_one();
  }
};

namespace {

// Resolves (DeadlineResolver), connects and, for https, shakes hands, all by the connection's deadline.
void connect(Connection& connection, const Url& url, bool verifyPeer, const KeepAlive& keepAlive,
             DeadlineResolver& resolver, const std::string& lookupBudgetKey, const std::stop_token& stop = {}) {
  auto addresses = resolver.resolve(url.host, url.port, connection.raw().deadline, stop, lookupBudgetKey);
  beast::error_code error;
  connection.raw().connect(addresses, error);
  if (error == beast::error::timeout) throw TimeoutError("cannot connect to " + url.host + ":" + url.port + ": timed out");
  if (error) throw TransportError("cannot connect to " + url.host + ":" + url.port + ": " + error.message());
  connection.raw().setNoDelay();
  connection.raw().setKeepAlive(keepAlive);
  if (connection.secure) {
    auto* ssl = connection.secure->native_handle();
    // Asio asks OpenSSL to free its 16 KiB record buffers whenever a connection goes idle, so every
    // request on a kept-alive connection allocated and freed them again; each such large malloc makes
    // glibc consolidate its fast bins, which was ~5% of the operator's CPU at 3,000 runs. A pooled
    // connection keeps its buffers (~34 KiB each, a handful of connections).
    SSL_clear_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    beast::error_code notAnAddress;
    asio::ip::make_address(url.host, notAnAddress);
    // SNI names a host, never an address (RFC 6066); the certificate must name what we asked for.
    if (notAnAddress && !SSL_set_tlsext_host_name(ssl, url.host.c_str())) {
      throw TransportError("cannot set TLS server name " + url.host);
    }
    if (verifyPeer) {
      connection.secure->set_verify_mode(asio::ssl::verify_peer);
      connection.secure->set_verify_callback(asio::ssl::host_name_verification(url.host));
    } else {
      connection.secure->set_verify_mode(asio::ssl::verify_none);
    }
    connection.secure->handshake(asio::ssl::stream_base::client, error);
    if (error == beast::error::timeout) throw TimeoutError("TLS handshake with " + url.host + " failed: timed out");
    if (error) throw TransportError("TLS handshake with " + url.host + " failed: " + error.message());
  }
  connection.connected = true;
}

// What happened to one exchange on one connection.
struct Exchange {
  beast::error_code error;
  bool responseStarted = false;  // some of the response arrived: the server saw the request
  std::optional<http::response<http::string_body>> response;
  std::optional<std::uint64_t> declaredLength;  // Content-Length, when the server sent one
};

template <typename Stream>
Exchange exchange(Stream& stream, Connection& connection, const http::request<http::string_body>& message,
                  size_t maxBody) {
  Exchange result;
  http::response_parser<http::string_body> parser;
  parser.body_limit(maxBody);
  parser.header_limit(64 * 1024);
  http::write(stream, message, result.error);
  if (result.error) return result;
  http::read_header(stream, connection.buffer, parser, result.error);
  result.responseStarted = parser.got_some();
  if (parser.is_header_done() && parser.content_length()) result.declaredLength = *parser.content_length();
  if (result.error) return result;
  // Boost 1.74's parser does not hold a declared Content-Length to body_limit: check it here.
  if (parser.content_length() && *parser.content_length() > maxBody) {
    result.error = http::error::body_limit;
    return result;
  }
  http::read(stream, connection.buffer, parser, result.error);
  if (!result.error) result.response = parser.release();
  return result;
}

// `url` and the request's method and headers have passed checkedTargetOf.
http::request<http::string_body> messageOf(const HttpRequest& request, const Url& url, bool keepAlive) {
  http::request<http::string_body> message;
  message.method_string(request.method);
  message.target(url.target);
  message.version(11);
  message.set(http::field::host, url.hostHeader);
  message.keep_alive(keepAlive);
  for (const auto& [name, value] : request.headers) message.set(name, value);
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
    if (message.find(http::field::content_type) == message.end()) message.set(http::field::content_type, "application/json");
    message.body() = request.body;
  }
  message.prepare_payload();
  return message;
}

void copyHeaders(const http::response_header<>& from, HttpResponse& to) {
  for (const auto& field : from) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    auto& value = to.headers[name];
    value = value.empty() ? std::string(field.value()) : value + ", " + std::string(field.value());
  }
}

}  // namespace

void trustSystemRoots(asio::ssl::context& context) {
  // Parsed once per process and shared (OpenSSL counts the store's references): each parse of the
  // system's CA bundle costs about 1 MiB, and every transport that trusts it would hold a copy.
  static X509_STORE* const roots = [] {
    X509_STORE* store = X509_STORE_new();
    if (store == nullptr || X509_STORE_set_default_paths(store) != 1) {
      X509_STORE_free(store);
      throw TransportError("loading the system's trusted CA certificates failed");
    }
    return store;
  }();
  SSL_CTX_set1_cert_store(context.native_handle(), roots);
}

PooledHttpTransport::PooledHttpTransport(HttpTransportOptions options) : pool_(std::make_unique<Pool>(options)) {
  if (options.configureTls) {
    options.configureTls(pool_->tls);
  } else {
    pool_->trustsSystemRoots = true;
  }
  pool_->tls.set_verify_mode(options.verifyPeer ? asio::ssl::verify_peer : asio::ssl::verify_none);
}

PooledHttpTransport::~PooledHttpTransport() = default;

HttpResponse PooledHttpTransport::send(const HttpRequest& request) {
  const auto timeout = std::clamp(request.timeout, std::chrono::milliseconds(1), pool_->options.maxTimeout);
  const auto started = SteadyClock::now();
  const auto deadline = started + timeout;
  const auto url = checkedTargetOf(request);  // before anything: a refused request makes no connection
  const auto what = request.method + " " + request.url;

  const auto message = messageOf(request, url, pool_->options.keepAlive);

  // The pool's cap, or the request's own when that is smaller (a caller that expects a small answer).
  const size_t maxBody = request.maxBodyBytes > 0 ? std::min(request.maxBodyBytes, pool_->options.maxResponseBytes)
                                                  : pool_->options.maxResponseBytes;

  auto endpoint = pool_->endpoint(url);
  // A reused connection may have been closed by the server while idle; then one fresh attempt.
  for (int attempt = 0;; ++attempt) {
    auto connection = pool_->acquire(*endpoint, url, deadline);
    bool reused = connection->connected;
    Exchange result;
    try {
      // One deadline for everything this request does on the connection.
      connection->raw().deadline = deadline;
      if (!connection->connected)
        connect(*connection, url, pool_->options.verifyPeer, pool_->keepAlive, pool_->resolver, request.lookupBudgetKey);
      result = connection->secure ? exchange(*connection->secure, *connection, message, maxBody)
                                  : exchange(*connection->plain, *connection, message, maxBody);
    } catch (const TimeoutError& error) {
      pool_->release(*endpoint, std::move(connection), false);
      pool_->closeIdleSince(*endpoint, started);
      throw TimeoutError(what + ": " + error.what());
    } catch (const TransportError& error) {
      pool_->release(*endpoint, std::move(connection), false);
      throw TransportError(what + ": " + error.what());
    } catch (...) {
      pool_->release(*endpoint, std::move(connection), false);
      throw;
    }
    if (result.error) {
      pool_->release(*endpoint, std::move(connection), false);
      bool stale = reused && !result.responseStarted && result.error != beast::error::timeout && attempt == 0;
      if (stale && SteadyClock::now() < deadline) continue;
      if (result.error == beast::error::timeout) {
        pool_->closeIdleSince(*endpoint, started);
        throw TimeoutError(what + ": no answer within " + std::to_string(timeout.count()) + " ms");
      }
      if (result.error == http::error::body_limit) {
        throw TransportError(what + ": the answer has " +
                             (result.declaredLength ? std::to_string(*result.declaredLength) : std::string("more")) +
                             " bytes, more than the " + std::to_string(maxBody) + " allowed");
      }
      throw TransportError(what + ": " + result.error.message());
    }
    auto& response = *result.response;
    HttpResponse out;
    out.status = static_cast<int>(response.result_int());
    copyHeaders(response.base(), out);
    out.body = std::move(response.body());
    pool_->release(*endpoint, std::move(connection), response.keep_alive());
    return out;
  }
}

namespace {

// Reads the body a response_parser<buffer_body> has started, chunk by chunk into `chunk`, handing
// each piece to `onBytes`; every read must make progress within `idle`.
template <typename Stream>
beast::error_code readBody(Stream& stream, Connection& connection, http::response_parser<http::buffer_body>& parser,
                           std::chrono::milliseconds idle, const std::function<bool(std::string_view)>& onBytes) {
  std::array<char, 16384> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    connection.raw().deadline = SteadyClock::now() + idle;
    beast::error_code error;
    http::read_some(stream, connection.buffer, parser, error);
    if (error == http::error::need_buffer) error = {};  // the chunk is full: hand it over
    if (error) return error;
    size_t filled = chunk.size() - parser.get().body().size;
    if (filled > 0 && !onBytes(std::string_view(chunk.data(), filled))) return http::error::body_limit;
  }
  return {};
}

template <typename Stream>
HttpResponse streamOn(Stream& stream, Connection& connection, const http::request<http::string_body>& message,
                      const std::function<void(std::string_view)>& onLine, const std::stop_token& stop,
                      std::chrono::milliseconds idle, size_t maxBytes, const std::string& what,
                      const std::function<void()>& onOpen) {
  auto fail = [&](beast::error_code error) {
    if (error == beast::error::timeout) throw TimeoutError(what + ": nothing received in time");
    if (error == http::error::body_limit) throw TransportError(what + ": more than " + std::to_string(maxBytes) + " bytes without an end");
    throw TransportError(what + ": " + error.message());
  };
  http::response_parser<http::buffer_body> parser;
  // A watch has no end; what bounds memory is the line limit below. (Not boost::none: Boost 1.74
  // compares a Content-Length with an empty optional as larger than it, so none refuses every body.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(64 * 1024);
  beast::error_code error;
  http::write(stream, message, error);
  if (!error) http::read_header(stream, connection.buffer, parser, error);
  if (stop.stop_requested()) return {};
  if (error) fail(error);
  HttpResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  copyHeaders(parser.get().base(), out);
  if (out.status >= 200 && out.status < 300 && onOpen) onOpen();
  if (out.status < 200 || out.status >= 300) {  // an error answer: read it whole, bounded
    error = readBody(stream, connection, parser, idle, [&](std::string_view bytes) {
      out.body.append(bytes);
      return out.body.size() <= maxBytes;
    });
    if (error && !stop.stop_requested()) fail(error);
    return out;
  }
  std::string pending;  // the start of a line whose '\n' has not arrived yet
  error = readBody(stream, connection, parser, idle, [&](std::string_view bytes) {
    pending.append(bytes);
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      if (stop.stop_requested()) return true;
      onLine(std::string_view(pending).substr(start, end - start));
    }
    pending.erase(0, start);
    return pending.size() <= maxBytes;
  });
  if (stop.stop_requested()) return out;
  if (error) fail(error);
  if (!pending.empty()) onLine(pending);  // a last line without '\n'
  return out;
}

// An eventfd that a stop request makes readable, so that a read waiting on the socket ends at once.
class StopSignal {
 public:
  StopSignal() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw TransportError(std::string("eventfd: ") + std::strerror(errno));
  }
  ~StopSignal() { ::close(fd_); }
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  int fd() const { return fd_; }
  void raise() const {
    std::uint64_t one = 1;
    [[maybe_unused]] auto written = ::write(fd_, &one, sizeof one);
  }

 private:
  int fd_;
};

}  // namespace

HttpResponse PooledHttpTransport::streamLines(const HttpRequest& request,
                                              const std::function<void(std::string_view)>& onLine,
                                              std::stop_token stop, std::chrono::milliseconds idleTimeout,
                                              const std::function<void()>& onOpen) {
  const auto timeout = std::clamp(request.timeout, std::chrono::milliseconds(1), pool_->options.maxTimeout);
  const auto url = checkedTargetOf(request);
  const auto what = request.method + " " + request.url;
  const auto message = messageOf(request, url, /*keepAlive=*/true);
  auto connection = pool_->newConnection(url.tls);  // never pooled
  // A stop from another thread wakes the wait on this one: the pending read ends at once instead of
  // at the idle timeout. (Declared before the callback, so it outlives it.)
  StopSignal stopSignal;
  connection->raw().wakeFd = stopSignal.fd();
  std::stop_callback onStop(stop, [&stopSignal] { stopSignal.raise(); });
  connection->raw().deadline = SteadyClock::now() + timeout;
  try {
    connect(*connection, url, pool_->options.verifyPeer, pool_->keepAlive, pool_->resolver, request.lookupBudgetKey, stop);
  } catch (const TimeoutError& error) {
    if (stop.stop_requested()) return {};
    throw TimeoutError(what + ": " + error.what());
  } catch (const TransportError& error) {
    if (stop.stop_requested()) return {};
    throw TransportError(what + ": " + error.what());
  }
  connection->raw().deadline = SteadyClock::now() + timeout;
  const size_t maxBytes = pool_->options.maxResponseBytes;
  return connection->secure
             ? streamOn(*connection->secure, *connection, message, onLine, stop, idleTimeout, maxBytes, what, onOpen)
             : streamOn(*connection->plain, *connection, message, onLine, stop, idleTimeout, maxBytes, what, onOpen);
}

}  // namespace vto
