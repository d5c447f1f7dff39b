#include "controller/kube_client.h"

#include <cpprest/http_client.h>
#include <cpprest/containerstream.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <tuple>
#include <sstream>

#include "controller/runtime_metrics.h"

namespace vto::controller {

namespace http = web::http;

std::string Resource::path(const std::string& ns, const std::string& name,
                           const std::string& subresource) const {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) p += "/namespaces/" + web::uri::encode_data_string(ns);
  p += "/" + resource;
  if (!name.empty()) p += "/" + web::uri::encode_data_string(name);
  if (!subresource.empty()) p += "/" + subresource;
  return p;
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

struct RestKubeClient::Impl {
  RestConfig config;
  RestClientMetrics* metrics;
  std::string host;  // host:port, the label of rest_client_requests_total
  std::unique_ptr<http::client::http_client> client;

  http::client::http_client_config httpConfig(std::chrono::seconds timeout) const {
    http::client::http_client_config cfg;
    cfg.set_timeout(timeout);
    cfg.set_validate_certificates(!config.insecureSkipTlsVerify);
    auto ca = config.caPem, cert = config.clientCertPem, key = config.clientKeyPem;
    cfg.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
      if (!ca.empty()) trustOnlyClusterCa(ctx, ca);
      if (!cert.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(cert));
        ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
      }
    });
    return cfg;
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

  http::http_request makeRequest(const http::method& method, const std::string& pathAndQuery) const {
    http::http_request request(method);
    request.set_request_uri(pathAndQuery);
    request.headers().add("Accept", "application/json");
    request.headers().add("User-Agent", "vto");
    auto token = bearerToken();
    // The token goes only into the header: never into a log line or an error message.
    if (!token.empty()) request.headers().add("Authorization", "Bearer " + token);
    return request;
  }

  void count(const std::string& code, const http::method& method) const {
    if (metrics) metrics->requestDone(code, method, host);
  }

  static std::optional<std::chrono::milliseconds> retryAfter(const http::http_response& response) {
    auto header = response.headers().find("Retry-After");
    if (header == response.headers().end()) return std::nullopt;
    // Clamped; an HTTP date or garbage falls back to our own backoff.
    return parseRetryAfterSeconds(header->second);
  }

  [[noreturn]] static void throwTransport(const std::exception& error, const std::string& what) {
    throw ApiError(Status{0, "", what + ": " + error.what(), {}});
  }

  // The response and its body, or a timeout at `deadline`: the request is cancelled (its
  // connection closed) rather than waited for.
  std::pair<http::http_response, std::string> sendBefore(http::http_request& request,
                                                         std::chrono::steady_clock::time_point deadline) {
    if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("the request deadline has passed");
    struct Done {
      std::mutex mutex;
      std::condition_variable cv;
      bool done = false;
    };
    auto done = std::make_shared<Done>();
    pplx::cancellation_token_source cancel;
    auto task = client->request(request, cancel.get_token()).then([](http::http_response response) {
      return response.extract_utf8string(true).then(
          [response](std::string text) { return std::make_pair(response, std::move(text)); });
    });
    task.then([done](pplx::task<std::pair<http::http_response, std::string>> finished) {
      // Observe the outcome here: a request abandoned at its deadline fails later, and pplx
      // terminates the process over an exception nobody observed.
      try {
        finished.wait();
      } catch (...) {
      }
      std::lock_guard guard(done->mutex);
      done->done = true;
      done->cv.notify_all();
    });
    {
      std::unique_lock lock(done->mutex);
      if (!done->cv.wait_until(lock, deadline, [&] { return done->done; })) {
        lock.unlock();
        cancel.cancel();
        throw std::runtime_error("no answer before the request deadline");
      }
    }
    return task.get();
  }

  nlohmann::json send(const http::method& method, const std::string& pathAndQuery,
                      const nlohmann::json* body = nullptr,
                      const std::string& contentType = "application/json") {
    auto request = makeRequest(method, pathAndQuery);
    if (body) request.set_body(body->dump(), contentType);
    http::http_response response;
    std::string text;
    try {
      if (auto deadline = RequestDeadlineScope::current()) {
        std::tie(response, text) = sendBefore(request, *deadline);
      } else {
        response = client->request(request).get();
        text = response.extract_utf8string(true).get();
      }
    } catch (const std::exception& error) {
      count("<error>", method);
      throwTransport(error, method + " " + pathAndQuery);
    }
    count(std::to_string(response.status_code()), method);
    if (response.status_code() >= 300) {
      throw ApiError(parseStatus(response.status_code(), text), retryAfter(response));
    }
    if (text.empty()) return nlohmann::json::object();
    return nlohmann::json::parse(text);
  }
};

RestKubeClient::RestKubeClient(RestConfig config, RestClientMetrics* metrics,
                               std::chrono::seconds requestTimeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  validateRestConfig(impl_->config);  // no token or client key over plain http to another host
  impl_->metrics = metrics;
  web::uri server(impl_->config.server);
  impl_->host = server.host() + (server.port() > 0 ? ":" + std::to_string(server.port()) : "");
  impl_->client = std::make_unique<http::client::http_client>(server, impl_->httpConfig(requestTimeout));
}

RestKubeClient::~RestKubeClient() = default;

namespace {

std::string withQuery(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& query) {
  web::uri_builder builder(path);
  for (const auto& [name, value] : query) {
    if (!value.empty()) builder.append_query(name, value, /*do_encoding=*/true);
  }
  return builder.to_string();
}

std::string nameOf(const nlohmann::json& object) {
  auto name = object.value("/metadata/name"_json_pointer, std::string());
  if (name.empty()) throw std::invalid_argument("object has no metadata.name; set it before updating");
  return name;
}

}  // namespace

nlohmann::json RestKubeClient::get(const Resource& resource, const std::string& ns,
                                   const std::string& name) {
  return impl_->send(http::methods::GET, resource.path(ns, name));
}

ListPage RestKubeClient::list(const Resource& resource, const std::string& ns,
                              const ListOptions& options) {
  auto list = impl_->send(
      http::methods::GET,
      withQuery(resource.path(ns), {{"labelSelector", options.labelSelector},
                                    {"fieldSelector", options.fieldSelector},
                                    {"limit", options.limit > 0 ? std::to_string(options.limit) : ""},
                                    {"continue", options.continueToken},
                                    {"resourceVersion", options.resourceVersion}}));
  ListPage page;
  if (list.contains("items") && list["items"].is_array()) page.items = std::move(list["items"]);
  page.resourceVersion = list.value("/metadata/resourceVersion"_json_pointer, std::string());
  page.continueToken = list.value("/metadata/continue"_json_pointer, std::string());
  return page;
}

nlohmann::json RestKubeClient::create(const Resource& resource, const std::string& ns,
                                      const nlohmann::json& object) {
  return impl_->send(http::methods::POST, resource.path(ns), &object);
}

nlohmann::json RestKubeClient::update(const Resource& resource, const std::string& ns,
                                      const nlohmann::json& object) {
  return impl_->send(http::methods::PUT, resource.path(ns, nameOf(object)), &object);
}

nlohmann::json RestKubeClient::updateStatus(const Resource& resource, const std::string& ns,
                                            const nlohmann::json& object) {
  return impl_->send(http::methods::PUT, resource.path(ns, nameOf(object), "status"), &object);
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
  return impl_->send(http::methods::PATCH, path, &body,
                     type == PatchType::Apply ? "application/apply-patch+yaml"
                                              : "application/merge-patch+json");
}

void RestKubeClient::remove(const Resource& resource, const std::string& ns,
                            const std::string& name) {
  impl_->send(http::methods::DEL, resource.path(ns, name));
}

void RestKubeClient::watch(const Resource& resource, const std::string& ns,
                           const WatchOptions& options,
                           const std::function<void(const WatchEvent&)>& onEvent,
                           std::stop_token stop) {
  auto path = withQuery(resource.path(ns),
                        {{"watch", "true"},
                         {"labelSelector", options.labelSelector},
                         {"fieldSelector", options.fieldSelector},
                         {"resourceVersion", options.resourceVersion},
                         {"allowWatchBookmarks", options.allowWatchBookmarks ? "true" : ""},
                         {"timeoutSeconds", std::to_string(options.timeoutSeconds)}});
  // Its own connection, with an idle timeout beyond the server's: a silent server means a dead link.
  http::client::http_client client(
      web::uri(impl_->config.server),
      impl_->httpConfig(std::chrono::seconds(options.timeoutSeconds + 60)));
  pplx::cancellation_token_source cancel;
  std::stop_callback onStop(stop, [&cancel] { cancel.cancel(); });
  auto request = impl_->makeRequest(http::methods::GET, path);
  try {
    auto response = client.request(request, cancel.get_token()).get();
    impl_->count(std::to_string(response.status_code()), http::methods::GET);
    if (response.status_code() >= 300) {
      auto text = response.extract_utf8string(true).get();
      throw ApiError(parseStatus(response.status_code(), text), Impl::retryAfter(response));
    }
    auto body = response.body();
    while (!stop.stop_requested()) {
      concurrency::streams::container_buffer<std::string> line;
      auto read = body.read_line(line).get();
      if (read == 0) {
        if (body.is_eof()) return;  // the server ended the watch
        continue;                   // an empty line
      }
      auto event = nlohmann::json::parse(line.collection(), nullptr, false);
      if (!event.is_object()) {
        throw ApiError(Status{0, "", "malformed watch event from " + resource.resource, {}});
      }
      onEvent(WatchEvent{event.value("type", ""), event.value("object", nlohmann::json::object())});
    }
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& error) {
    if (stop.stop_requested()) return;
    impl_->count("<error>", http::methods::GET);
    Impl::throwTransport(error, "watch " + path);
  }
}

}  // namespace vto::controller
