#include "base/http_transport.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ip/tcp.hpp>
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

Url targetOf(const std::string& url) {
  ParsedUrl parsed;
  try {
    parsed = parseUrl(url);  // the one strict URL parser (base/url.h)
  } catch (const std::invalid_argument& error) {
    throw TransportError(error.what());
  }
  if (parsed.scheme != "http" && parsed.scheme != "https") {
    throw TransportError("invalid URL " + url + ": only http:// and https:// are supported");
  }
  Url out;
  out.tls = parsed.scheme == "https";
  out.host = parsed.host;
  out.port = parsed.port != 0 ? std::to_string(parsed.port) : (out.tls ? "443" : "80");
  out.target = parsed.path.empty() ? "/" : parsed.path;
  out.hostHeader = authorityOf(parsed);
  return out;
}

// One kept-alive connection. Its own io_context runs only on the thread that holds the connection,
// so every operation can carry a deadline (Beast's timeouts apply to asynchronous operations).
struct Connection {
  asio::io_context io;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;  // bytes read past the last response stay for the next one
  SteadyClock::time_point idleSince;
  bool connected = false;

  beast::tcp_stream& tcp() { return secure ? beast::get_lowest_layer(*secure) : *plain; }

  // Runs the operations started on io until they finish; they fail with beast::error::timeout at
  // the deadline set on tcp() before they started.
  void run() {
    io.restart();
    io.run();
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
  HttpTransportOptions options;
  asio::ssl::context tls{asio::ssl::context::tls_client};
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

  // An idle connection (fresh enough), or a new unconnected one if fewer than the bound are open.
  std::unique_ptr<Connection> acquire(Endpoint& endpoint, const Url& url, SteadyClock::time_point deadline) {
    std::unique_lock lock(endpoint.mutex);
    while (true) {
      while (!endpoint.idle.empty()) {
        auto connection = std::move(endpoint.idle.back());
        endpoint.idle.pop_back();
        if (SteadyClock::now() - connection->idleSince < options.idleTimeout) return connection;
        --endpoint.open;  // too old: the server has probably closed it
      }
      if (endpoint.open < std::max<size_t>(options.maxConnectionsPerEndpoint, 1)) {
        ++endpoint.open;
        lock.unlock();
        auto connection = std::make_unique<Connection>();
        if (url.tls) {
          connection->secure.emplace(connection->io, tls);
        } else {
          connection->plain.emplace(connection->io);
        }
        return connection;
      }
      if (endpoint.freed.wait_until(lock, deadline) == std::cv_status::timeout) {
        throw TransportError("no free connection to " + url.host + ":" + url.port + " before the request's timeout (" +
                             std::to_string(options.maxConnectionsPerEndpoint) + " connections busy)");
      }
    }
  }

  void release(Endpoint& endpoint, std::unique_ptr<Connection> connection, bool reusable) {
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

void connect(Connection& connection, const Url& url, bool verifyPeer) {
  asio::ip::tcp::resolver resolver(connection.io);
  beast::error_code error;
  auto addresses = resolver.resolve(url.host, url.port, error);
  if (error) throw TransportError("cannot resolve " + url.host + ": " + error.message());
  connection.tcp().async_connect(addresses, [&](beast::error_code e, const auto&) { error = e; });
  connection.run();
  if (error) throw TransportError("cannot connect to " + url.host + ":" + url.port + ": " + error.message());
  connection.tcp().socket().set_option(asio::ip::tcp::no_delay(true));
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
    connection.secure->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { error = e; });
    connection.run();
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
  http::async_write(stream, message, [&](beast::error_code e, size_t) {
    result.error = e;
    if (e) return;
    http::async_read_header(stream, connection.buffer, parser, [&](beast::error_code headerError, size_t bytes) {
      result.error = headerError;
      result.responseStarted = bytes > 0;
      if (parser.is_header_done() && parser.content_length()) result.declaredLength = *parser.content_length();
      if (headerError) return;
      // Boost 1.74's parser does not hold a declared Content-Length to body_limit: check it here.
      if (parser.content_length() && *parser.content_length() > maxBody) {
        result.error = http::error::body_limit;
        return;
      }
      http::async_read(stream, connection.buffer, parser,
                       [&](beast::error_code readError, size_t) { result.error = readError; });
    });
  });
  connection.run();
  if (!result.error) result.response = parser.release();
  return result;
}

http::request<http::string_body> messageOf(const HttpRequest& request, const Url& url) {
  http::request<http::string_body> message;
  message.method_string(request.method);
  message.target(url.target);
  message.version(11);
  message.set(http::field::host, url.hostHeader);
  message.keep_alive(true);
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

PooledHttpTransport::PooledHttpTransport(HttpTransportOptions options) : pool_(std::make_unique<Pool>()) {
  pool_->options = options;
  if (options.configureTls) {
    options.configureTls(pool_->tls);
  } else {
    pool_->tls.set_default_verify_paths();
  }
  pool_->tls.set_verify_mode(options.verifyPeer ? asio::ssl::verify_peer : asio::ssl::verify_none);
}

PooledHttpTransport::~PooledHttpTransport() = default;

HttpResponse PooledHttpTransport::send(const HttpRequest& request) {
  const auto timeout = std::clamp(request.timeout, std::chrono::milliseconds(1), pool_->options.maxTimeout);
  const auto deadline = SteadyClock::now() + timeout;
  const auto url = targetOf(request.url);
  const auto what = request.method + " " + request.url;

  const auto message = messageOf(request, url);

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
      // One deadline for everything this request does on the connection (Beast applies it to every
      // asynchronous operation started after it is set).
      connection->tcp().expires_at(deadline);
      if (!connection->connected) connect(*connection, url, pool_->options.verifyPeer);
      result = connection->secure ? exchange(*connection->secure, *connection, message, maxBody)
                                  : exchange(*connection->plain, *connection, message, maxBody);
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
        throw TransportError(what + ": no answer within " + std::to_string(timeout.count()) + " ms");
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
    connection.tcp().expires_after(idle);
    beast::error_code error;
    http::async_read_some(stream, connection.buffer, parser, [&](beast::error_code e, size_t) { error = e; });
    connection.run();
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
                      std::chrono::milliseconds idle, size_t maxBytes, const std::string& what) {
  auto fail = [&](beast::error_code error) -> TransportError {
    if (error == beast::error::timeout) return TransportError(what + ": nothing received for " + std::to_string(idle.count()) + " ms");
    if (error == http::error::body_limit) return TransportError(what + ": more than " + std::to_string(maxBytes) + " bytes without an end");
    return TransportError(what + ": " + error.message());
  };
  http::response_parser<http::buffer_body> parser;
  // A watch has no end; what bounds memory is the line limit below. (Not boost::none: Boost 1.74
  // compares a Content-Length with an empty optional as larger than it, so none refuses every body.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(64 * 1024);
  beast::error_code error;
  http::async_write(stream, message, [&](beast::error_code e, size_t) {
    error = e;
    if (!e) http::async_read_header(stream, connection.buffer, parser, [&](beast::error_code h, size_t) { error = h; });
  });
  connection.run();
  if (stop.stop_requested()) return {};
  if (error) throw fail(error);
  HttpResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  copyHeaders(parser.get().base(), out);
  if (out.status < 200 || out.status >= 300) {  // an error answer: read it whole, bounded
    error = readBody(stream, connection, parser, idle, [&](std::string_view bytes) {
      out.body.append(bytes);
      return out.body.size() <= maxBytes;
    });
    if (error && !stop.stop_requested()) throw fail(error);
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
  if (error) throw fail(error);
  if (!pending.empty()) onLine(pending);  // a last line without '\n'
  return out;
}

}  // namespace

HttpResponse PooledHttpTransport::streamLines(const HttpRequest& request,
                                              const std::function<void(std::string_view)>& onLine,
                                              std::stop_token stop, std::chrono::milliseconds idleTimeout) {
  const auto timeout = std::clamp(request.timeout, std::chrono::milliseconds(1), pool_->options.maxTimeout);
  const auto url = targetOf(request.url);
  const auto what = request.method + " " + request.url;
  const auto message = messageOf(request, url);
  Connection connection;
  if (url.tls) {
    connection.secure.emplace(connection.io, pool_->tls);
  } else {
    connection.plain.emplace(connection.io);
  }
  // A stop from another thread closes the socket on this one (the io_context runs only here): the
  // pending read ends at once instead of at the idle timeout.
  std::stop_callback onStop(stop, [&connection] {
    asio::post(connection.io, [&connection] {
      beast::error_code ignored;
      connection.tcp().socket().close(ignored);
    });
  });
  connection.tcp().expires_after(timeout);
  try {
    connect(connection, url, pool_->options.verifyPeer);
  } catch (const TransportError& error) {
    if (stop.stop_requested()) return {};
    throw TransportError(what + ": " + error.what());
  }
  connection.tcp().expires_after(timeout);
  const size_t maxBytes = pool_->options.maxResponseBytes;
  return connection.secure ? streamOn(*connection.secure, connection, message, onLine, stop, idleTimeout, maxBytes, what)
                           : streamOn(*connection.plain, connection, message, onLine, stop, idleTimeout, maxBytes, what);
}

}  // namespace vto
