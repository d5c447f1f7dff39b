#include "vertex/http_transport.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <semaphore>
#include <unordered_map>

#include <cpprest/http_client.h>

#include "vertex/api_error.h"

namespace vto::vertex {

namespace {

// Endpoints are few (the Vertex regions in use, GCS, the metadata server); past this many, idle ones
// are forgotten so that a stream of distinct hosts cannot grow the pool without bound.
constexpr size_t kMaxEndpoints = 64;
// std::counting_semaphore needs a compile-time ceiling for its count.
constexpr std::ptrdiff_t kMaxSlots = 1024;

}  // namespace

// One cpprestsdk client per endpoint and timeout: cpprestsdk keeps a pool of idle keep-alive
// connections inside each client (closed after 30 s unused), so reusing the client reuses the
// connections. The semaphore bounds requests in flight, and with them the connections opened.
struct CppRestTransport::Pool {
  struct Endpoint {
    Endpoint(const web::uri& base, const web::http::client::http_client_config& config, std::ptrdiff_t slots)
        : client(base, config), free(slots) {}
    web::http::client::http_client client;
    std::counting_semaphore<kMaxSlots> free;
  };

  HttpTransportOptions options;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Endpoint>> endpoints;

  std::shared_ptr<Endpoint> endpoint(const web::uri& uri, std::chrono::milliseconds timeout) {
    web::uri_builder base;
    base.set_scheme(uri.scheme()).set_host(uri.host()).set_port(uri.port());
    auto baseUri = base.to_uri();
    auto key = baseUri.to_string() + "|" + std::to_string(timeout.count());
    std::lock_guard guard(mutex);
    auto found = endpoints.find(key);
    if (found != endpoints.end()) return found->second;
    if (endpoints.size() >= kMaxEndpoints) {
      std::erase_if(endpoints, [](const auto& entry) { return entry.second.use_count() == 1; });
    }
    web::http::client::http_client_config config;
    config.set_timeout(timeout);
    config.set_validate_certificates(true);
    auto slots = static_cast<std::ptrdiff_t>(
        std::clamp<size_t>(options.maxConnectionsPerEndpoint, 1, static_cast<size_t>(kMaxSlots)));
    auto created = std::make_shared<Endpoint>(baseUri, config, slots);
    endpoints.emplace(key, created);
    return created;
  }
};

CppRestTransport::CppRestTransport(HttpTransportOptions options) : pool_(std::make_unique<Pool>()) {
  pool_->options = options;
}

CppRestTransport::~CppRestTransport() = default;

HttpResponse CppRestTransport::send(const HttpRequest& request) {
  auto timeout = std::clamp(request.timeout, std::chrono::milliseconds(1), pool_->options.maxTimeout);
  try {
    web::uri uri(request.url);
    auto endpoint = pool_->endpoint(uri, timeout);
    if (!endpoint->free.try_acquire_for(timeout)) {
      throw TransportError(request.method + " " + request.url + ": no free connection within " +
                           std::to_string(timeout.count()) + " ms (" +
                           std::to_string(pool_->options.maxConnectionsPerEndpoint) +
                           " requests already in flight to this endpoint)");
    }
    struct Release {
      std::counting_semaphore<kMaxSlots>& slots;
      ~Release() { slots.release(); }
    } release{endpoint->free};

    web::http::http_request message(request.method);
    message.set_request_uri(uri.resource());
    for (const auto& [name, value] : request.headers) message.headers().add(name, value);
    if (!request.body.empty() || request.method == "POST") {
      auto contentType = request.headers.count("Content-Type") ? request.headers.at("Content-Type")
                                                                : std::string("application/json");
      message.set_body(request.body, contentType);
    }
    auto response = endpoint->client.request(message).get();
    HttpResponse result;
    result.status = response.status_code();
    for (const auto& [name, value] : response.headers()) {
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      result.headers[lower] = value;
    }
    result.body = response.extract_utf8string(true).get();
    return result;
  } catch (const web::http::http_exception& error) {
    throw TransportError(request.method + " " + request.url + ": " + error.what());
  } catch (const web::uri_exception& error) {
    throw TransportError("invalid URL " + request.url + ": " + error.what());
  } catch (const std::system_error& error) {
    throw TransportError(request.method + " " + request.url + ": " + error.what());
  }
}

std::string urlEncode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace vto::vertex
