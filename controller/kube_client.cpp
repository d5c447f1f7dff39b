#include "controller/kube_client.h"

#include <boost/asio/ssl/context.hpp>

#include <fstream>
#include <sstream>

#include "base/http_transport.h"
#include "base/json_fields.h"
#include "base/url.h"
#include "controller/kube_json.h"
#include "controller/object_cache.h"
#include "controller/rest_config.h"
#include "controller/runtime_metrics.h"

namespace vto::controller {

std::string Resource::path(const std::string& ns, const std::string& name,
                           const std::string& subresource) const {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) p += "/namespaces/" + urlEncode(ns);
  p += "/" + resource;
  if (!name.empty()) p += "/" + urlEncode(name);
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

nlohmann::json statusWriteBody(const nlohmann::json& object, nlohmann::json status) {
  static const nlohmann::json none = nlohmann::json::object();
  auto found = object.find("metadata");
  const auto& meta = found != object.end() && found->is_object() ? *found : none;
  return {{"apiVersion", stringField(object, "apiVersion")},
          {"kind", stringField(object, "kind")},
          {"metadata",
           {{"name", stringField(meta, "name")},
            {"namespace", stringField(meta, "namespace")},
            {"uid", stringField(meta, "uid")},
            {"resourceVersion", stringField(meta, "resourceVersion")}}},
          {"status", std::move(status)}};
}

namespace {
thread_local std::optional<std::chrono::steady_clock::time_point> requestDeadline;
}  // namespace

RequestDeadlineScope::RequestDeadlineScope(std::chrono::steady_clock::time_point deadline)
    : previous_(requestDeadline) {
  if (!requestDeadline || deadline < *requestDeadline) requestDeadline = deadline;
}

RequestDeadlineScope::~RequestDeadlineScope() { requestDeadline = previous_; }

std::optional<std::chrono::steady_clock::time_point> RequestDeadlineScope::current() { return requestDeadline; }

ListPage listAll(KubeClient& client, const Resource& resource, const std::string& ns,
                 ListOptions options) {
  ListPage all;
  bool first = true;
  do {
    auto page = client.list(resource, ns, options);
    if (first) all.resourceVersion = page.resourceVersion;
    first = false;
    for (auto& item : page.items) all.items.push_back(std::move(item));
    options.continueToken = page.continueToken;
    // Continued pages come from the first page's snapshot; a resourceVersion may not be combined.
    options.resourceVersion.clear();
  } while (!options.continueToken.empty());
  return all;
}

namespace {
// Requests in flight to the API server (watches aside), hence keep-alive connections open to it.
constexpr size_t kMaxConnections = 16;
}  // namespace

struct RestKubeClient::Impl {
  RestConfig config;
  RestClientMetrics* metrics;
  std::string server;  // the configured URL without a trailing '/': paths are appended to it
  std::string host;    // host:port, the label of rest_client_requests_total
  std::chrono::seconds requestTimeout{30};
  bool omitManagedFields = false;
  // Synchronous on the caller's thread, connections kept alive and pooled (at most kMaxConnections).
  std::unique_ptr<PooledHttpTransport> http;

  HttpTransportOptions transportOptions() const {
    HttpTransportOptions options;
    options.maxConnectionsPerEndpoint = kMaxConnections;
    options.idleTimeout = std::chrono::seconds(60);
    options.verifyPeer = !config.insecureSkipTlsVerify;
    auto ca = config.caPem, cert = config.clientCertPem, key = config.clientKeyPem;
    options.configureTls = [ca, cert, key](boost::asio::ssl::context& ctx) {
      if (ca.empty()) {
        trustSystemRoots(ctx);
      } else {
        trustOnlyClusterCa(ctx, ca);
      }
      if (!cert.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(cert));
        ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
      }
    };
    return options;
  }

  // The bearer token, if any; a token file is re-read each time because the kubelet rotates it.
  std::string bearerToken() const {
    if (!config.tokenFile.empty()) {
      std::ifstream in(config.tokenFile);
      std::stringstream buffer;
      buffer << in.rdbuf();
      auto token = buffer.str();
      while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
      if (!token.empty()) return token;
    }
    return config.token;
  }

  HttpRequest makeRequest(const std::string& method, const std::string& pathAndQuery) const {
    HttpRequest request;
    request.method = method;
    request.url = server + pathAndQuery;
    request.headers["Accept"] = "application/json";
    request.headers["User-Agent"] = "vto";
    auto token = bearerToken();
    // The token goes only into the header: never into a log line or an error message.
    if (!token.empty()) request.headers["Authorization"] = "Bearer " + token;
    return request;
  }

  void count(const std::string& code, const std::string& method) const {
    if (metrics) metrics->requestDone(code, method, host);
  }

  static std::optional<std::chrono::milliseconds> retryAfter(const HttpResponse& response) {
    auto header = response.headers.find("retry-after");
    if (header == response.headers.end()) return std::nullopt;
    // Clamped; an HTTP date or garbage falls back to our own backoff.
    return parseRetryAfterSeconds(header->second);
  }

  [[noreturn]] static void throwTransport(const std::string& what, const std::string& why) {
    throw ApiError(Status{0, "", what + ": " + why, {}});
  }

  nlohmann::json send(const std::string& method, const std::string& pathAndQuery,
                      const nlohmann::json* body = nullptr,
                      const std::string& contentType = "application/json") {
    auto response = exchange(method, pathAndQuery, body, contentType);
    if (response.body.empty()) return nlohmann::json::object();
    return parse(response.body);
  }

  // The request and its successful answer, unparsed; a failure throws ApiError.
  HttpResponse exchange(const std::string& method, const std::string& pathAndQuery, const nlohmann::json* body,
                        const std::string& contentType = "application/json", const char* accept = nullptr) {
    auto request = makeRequest(method, pathAndQuery);
    if (accept != nullptr) request.headers["Accept"] = accept;
    if (body) {
      request.body = body->dump();
      request.headers["Content-Type"] = contentType;
    }
    // The request's own timeout, cut short by the caller's deadline (RequestDeadlineScope): the
    // connection is closed at the deadline rather than waited on.
    auto deadline = RequestDeadlineScope::current();
    auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(requestTimeout);
    bool deadlineBounds = false;
    if (deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
      if (left <= std::chrono::milliseconds(0)) {
        count("<error>", method);
        if (metrics) metrics->requestTimedOut();
        throwTransport(method + " " + pathAndQuery, "the request deadline has passed");
      }
      if (left < timeout) {
        timeout = left;
        deadlineBounds = true;
      }
    }
    request.timeout = timeout;
    HttpResponse response;
    try {
      response = http->send(request);
    } catch (const TransportError& error) {
      count("<error>", method);
      if (metrics && dynamic_cast<const TimeoutError*>(&error)) metrics->requestTimedOut();
      bool late = deadlineBounds && std::chrono::steady_clock::now() >= *deadline;
      throwTransport(method + " " + pathAndQuery, late ? "no answer before the request deadline" : error.what());
    }
    count(std::to_string(response.status), method);
    if (response.status >= 300) {
      throw ApiError(parseStatus(response.status, response.body), retryAfter(response));
    }
    return response;
  }

  // Throws nlohmann::json::parse_error for malformed JSON, as json::parse.
  nlohmann::json parse(std::string_view body) const {
    if (omitManagedFields) {
      auto parsed = parseWithoutManagedFields(body);
      if (!parsed.is_discarded()) return parsed;
    }
    return nlohmann::json::parse(body);
  }
};

RestKubeClient::RestKubeClient(RestConfig config, RestClientMetrics* metrics,
                               std::chrono::seconds requestTimeout, ManagedFields managedFields)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->omitManagedFields = managedFields == ManagedFields::Omit;
  auto parsed = validateRestConfig(impl_->config);  // no token or client key over plain http to another host
  impl_->metrics = metrics;
  impl_->requestTimeout = requestTimeout;
  impl_->server = impl_->config.server;
  while (!impl_->server.empty() && impl_->server.back() == '/') impl_->server.pop_back();
  impl_->host = authorityOf(parsed);
  impl_->http = std::make_unique<PooledHttpTransport>(impl_->transportOptions());
}

RestKubeClient::~RestKubeClient() = default;

namespace {

std::string withQuery(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out = path;
  char separator = '?';
  for (const auto& [name, value] : query) {
    if (value.empty()) continue;
    out += separator + name + "=" + urlEncode(value);
    separator = '&';
  }
  return out;
}

std::string nameOf(const nlohmann::json& object) {
  auto name = object.value("/metadata/name"_json_pointer, std::string());
  if (name.empty()) throw std::invalid_argument("object has no metadata.name; set it before updating");
  return name;
}

}  // namespace

nlohmann::json RestKubeClient::get(const Resource& resource, const std::string& ns,
                                   const std::string& name) {
  return impl_->send("GET", resource.path(ns, name));
}

ListPage RestKubeClient::list(const Resource& resource, const std::string& ns,
                              const ListOptions& options) {
  auto list = impl_->send(
      "GET",
      withQuery(resource.path(ns), {{"labelSelector", options.labelSelector},
                                    {"fieldSelector", options.fieldSelector},
                                    {"limit", options.limit > 0 ? std::to_string(options.limit) : ""},
                                    {"continue", options.continueToken},
                                    {"resourceVersion", options.resourceVersion}}));
  ListPage page;
  if (list.contains("items") && list["items"].is_array()) page.items = std::move(list["items"]);
  page.resourceVersion = versionOf(list);
  page.continueToken = list.value("/metadata/continue"_json_pointer, std::string());
  return page;
}

nlohmann::json RestKubeClient::create(const Resource& resource, const std::string& ns,
                                      const nlohmann::json& object) {
  return impl_->send("POST", resource.path(ns), &object);
}

nlohmann::json RestKubeClient::update(const Resource& resource, const std::string& ns,
                                      const nlohmann::json& object) {
  return impl_->send("PUT", resource.path(ns, nameOf(object)), &object);
}

nlohmann::json RestKubeClient::updateStatus(const Resource& resource, const std::string& ns,
                                            const nlohmann::json& object) {
  return impl_->send("PUT", resource.path(ns, nameOf(object), "status"), &object);
}

namespace {

// A write whose answer is read for its resourceVersion alone asks for the object's metadata only: the
// API server then encodes a few hundred bytes instead of the whole object (spec, status, managedFields)
// on every status write, and we read no more. A server that cannot answer so sends the object.
constexpr const char* kMetadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json";

std::string versionIn(const HttpResponse& response, const std::string& what) {
  auto version = resourceVersionOf(response.body);
  if (version.empty()) throw ApiError(Status{0, "", what + ": the answer has no metadata.resourceVersion", {}});
  return version;
}

}  // namespace

std::string RestKubeClient::updateStatusVersion(const Resource& resource, const std::string& ns,
                                               const nlohmann::json& object) {
  return versionIn(impl_->exchange("PUT", resource.path(ns, nameOf(object), "status"), &object, "application/json", kMetadataOnly),
                   "PUT " + resource.resource + "/status");
}

std::string RestKubeClient::createVersion(const Resource& resource, const std::string& ns, const nlohmann::json& object) {
  return versionIn(impl_->exchange("POST", resource.path(ns), &object, "application/json", kMetadataOnly),
                   "POST " + resource.resource);
}

std::string RestKubeClient::mergePatchVersion(const Resource& resource, const std::string& ns, const std::string& name,
                                              const nlohmann::json& body) {
  return versionIn(impl_->exchange("PATCH", resource.path(ns, name), &body, "application/merge-patch+json", kMetadataOnly),
                   "PATCH " + resource.resource);
}

nlohmann::json RestKubeClient::patch(const Resource& resource, const std::string& ns,
                                     const std::string& name, PatchType type,
                                     const nlohmann::json& body, const std::string& fieldManager,
                                     bool force, const std::string& subresource) {
  if (type == PatchType::Apply && fieldManager.empty()) {
    throw std::invalid_argument("server-side apply needs a field manager name");
  }
  auto path = withQuery(resource.path(ns, name, subresource),
                        {{"fieldManager", fieldManager},
                         {"force", type == PatchType::Apply && force ? "true" : ""}});
  return impl_->send("PATCH", path, &body,
                     type == PatchType::Apply ? "application/apply-patch+yaml"
                                              : "application/merge-patch+json");
}

void RestKubeClient::remove(const Resource& resource, const std::string& ns,
                            const std::string& name) {
  impl_->send("DELETE", resource.path(ns, name));
}

void RestKubeClient::watch(const Resource& resource, const std::string& ns,
                           const WatchOptions& options,
                           const std::function<void(WatchEvent&&)>& onEvent,
                           std::stop_token stop) {
  auto path = withQuery(resource.path(ns),
                        {{"watch", "true"},
                         {"labelSelector", options.labelSelector},
                         {"fieldSelector", options.fieldSelector},
                         {"resourceVersion", options.resourceVersion},
                         {"allowWatchBookmarks", options.allowWatchBookmarks || options.sendInitialEvents ? "true" : ""},
                         {"sendInitialEvents", options.sendInitialEvents ? "true" : ""},
                         {"resourceVersionMatch", options.sendInitialEvents ? "NotOlderThan" : ""},
                         {"timeoutSeconds", std::to_string(options.timeoutSeconds)}});
  auto request = impl_->makeRequest("GET", path);
  // No byte for the caller's idle limit (else the server's own timeout plus a margin) means a dead
  // link: bookmarks and the server ending the watch at timeoutSeconds keep a live one talking.
  std::chrono::milliseconds idle = options.idleTimeout > std::chrono::milliseconds(0)
                                       ? options.idleTimeout
                                       : std::chrono::milliseconds(std::chrono::seconds(options.timeoutSeconds + 60));
  // Connecting and the headers: the API server sends those as soon as it accepts the watch, so a
  // path that is silent for the idle limit is as dead here as after them.
  request.timeout = std::min<std::chrono::milliseconds>(impl_->requestTimeout, idle);
  HttpResponse response;
  // Counted as soon as the server streams (as client-go counts a watch once its answer starts), not
  // only when it ends minutes later: a watch that syncs is the only request an informer makes.
  bool counted = false;
  try {
    response = impl_->http->streamLines(
        request,
        [&](std::string_view line) {
          if (!counted) {
            impl_->count("200", "GET");
            counted = true;
          }
          if (line.empty() || line == "\r") return;
          auto event = impl_->omitManagedFields ? parseWithoutManagedFields(line)
                                                : nlohmann::json::parse(line, nullptr, false);
          if (!event.is_object()) {
            throw ApiError(Status{0, "", "malformed watch event from " + resource.resource, {}});
          }
          auto object = event.find("object");
          WatchEvent watchEvent{stringField(event, "type"), nlohmann::json::object()};
          if (object != event.end()) watchEvent.object = std::move(*object);
          onEvent(std::move(watchEvent));
        },
        stop, idle, options.onOpen);
  } catch (const TransportError& error) {
    if (stop.stop_requested()) return;
    if (!counted) impl_->count("<error>", "GET");
    if (impl_->metrics && dynamic_cast<const TimeoutError*>(&error)) impl_->metrics->requestTimedOut();
    Impl::throwTransport("watch " + path, error.what());
  }
  if (stop.stop_requested()) return;
  if (!counted) impl_->count(std::to_string(response.status), "GET");
  if (response.status >= 300) throw ApiError(parseStatus(response.status, response.body), Impl::retryAfter(response));
}

}  // namespace vto::controller
