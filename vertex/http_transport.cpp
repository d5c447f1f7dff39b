#include "vertex/http_transport.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "vertex/api_error.h"

namespace vto::vertex {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Endpoints are few (the Vertex regions in use, GCS, the metadata server); past this many, those
// with no connection are forgotten so that a stream of distinct hosts cannot grow the pool.
constexpr size_t kMaxEndpoints = 64;

struct Url {
  bool tls = false;
  std::string host;  // without brackets for an IPv6 literal
  std::string port;
  std::string target;  // path and query
  std::string hostHeader;
};

Url parseUrl(const std::string& url) {
  Url parsed;
  auto schemeEnd = url.find("://");
  if (schemeEnd == std::string::npos) throw TransportError("invalid URL " + url + ": it needs http:// or https://");
  auto scheme = url.substr(0, schemeEnd);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "http" && scheme != "https") {
    throw TransportError("invalid URL " + url + ": only http:// and https:// are supported");
  }
  parsed.tls = scheme == "https";
  auto authorityStart = schemeEnd + 3;
  auto pathStart = url.find_first_of("/?", authorityStart);
  auto authority = url.substr(authorityStart, pathStart == std::string::npos ? std::string::npos : pathStart - authorityStart);
  parsed.target = pathStart == std::string::npos ? "/" : url.substr(pathStart);
  if (parsed.target[0] == '?') parsed.target = "/" + parsed.target;
  if (authority.find('@') != std::string::npos) throw TransportError("invalid URL " + url + ": credentials in a URL are not supported");
  size_t portColon = std::string::npos;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) throw TransportError("invalid URL " + url + ": unterminated IPv6 address");
    parsed.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') portColon = close + 1;
  } else {
    portColon = authority.rfind(':');
    parsed.host = authority.substr(0, portColon);
  }
  parsed.port = portColon == std::string::npos ? (parsed.tls ? "443" : "80") : authority.substr(portColon + 1);
  if (parsed.host.empty() || parsed.port.empty() ||
      !std::all_of(parsed.port.begin(), parsed.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw TransportError("invalid URL " + url + ": it needs a host and a numeric port");
  }
  parsed.hostHeader = authority;
  return parsed;
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

void connect(Connection& connection, const Url& url) {
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
    // SNI, and the certificate must name the host we asked for.
    if (!SSL_set_tlsext_host_name(ssl, url.host.c_str())) throw TransportError("cannot set TLS server name " + url.host);
    connection.secure->set_verify_mode(asio::ssl::verify_peer);
    connection.secure->set_verify_callback(asio::ssl::host_name_verification(url.host));
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

}  // namespace

PooledHttpTransport::PooledHttpTransport(HttpTransportOptions options) : pool_(std::make_unique<Pool>()) {
  pool_->options = options;
  pool_->tls.set_default_verify_paths();
  pool_->tls.set_verify_mode(asio::ssl::verify_peer);
}

PooledHttpTransport::~PooledHttpTransport() = default;

HttpResponse PooledHttpTransport::send(const HttpRequest& request) {
  const auto timeout = std::clamp(request.timeout, std::chrono::milliseconds(1), pool_->options.maxTimeout);
  const auto deadline = SteadyClock::now() + timeout;
  const auto url = parseUrl(request.url);
  const auto what = request.method + " " + request.url;

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
      if (!connection->connected) connect(*connection, url);
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
    for (const auto& field : response) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      auto& value = out.headers[name];
      value = value.empty() ? std::string(field.value()) : value + ", " + std::string(field.value());
    }
    out.body = std::move(response.body());
    pool_->release(*endpoint, std::move(connection), response.keep_alive());
    return out;
  }
}

}  // namespace vto::vertex
