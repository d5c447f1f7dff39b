#include "vertex/request_observer.h"

#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

// The URL's path without scheme, host and query.
std::string pathOf(const std::string& url) {
  auto start = url.find("://");
  start = url.find('/', start == std::string::npos ? 0 : start + 3);
  if (start == std::string::npos) return "/";
  auto end = url.find('?', start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string vertexMethodOf(const HttpRequest& request) {
  auto path = pathOf(request.url);
  if (path.find("/operations/") != std::string::npos) return request.method == "GET" ? "GetOperation" : "Other";
  for (const std::string kind : {"customJobs", "hyperparameterTuningJobs"}) {
    auto at = path.rfind("/" + kind);
    if (at == std::string::npos) continue;
    std::string singular = kind == "customJobs" ? "CustomJob" : "HyperparameterTuningJob";
    auto rest = path.substr(at + kind.size() + 1);  // "", "/ID" or "/ID:cancel"
    if (rest.empty()) {
      if (request.method == "POST") return "Create" + singular;
      if (request.method == "GET") return "List" + singular + "s";
    } else if (endsWith(rest, ":cancel") && request.method == "POST") {
      return "Cancel" + singular;
    } else if (request.method == "GET") {
      return "Get" + singular;
    } else if (request.method == "DELETE") {
      return "Delete" + singular;
    }
    return "Other";
  }
  return "Other";
}

std::string gcsMethodOf(const HttpRequest& request) {
  auto path = pathOf(request.url);
  bool upload = path.find("/upload/storage/") != std::string::npos;
  auto objects = path.find("/o");
  bool isObjects = objects != std::string::npos && (objects + 2 == path.size() || path[objects + 2] == '/');
  if (upload && request.method == "POST") return "InsertObject";
  if (isObjects) {
    if (request.method != "GET") return "Other";
    return objects + 2 == path.size() ? "ListObjects" : "GetObject";
  }
  if (endsWith(path, "/storage/v1/b") && request.method == "POST") return "InsertBucket";
  if (path.find("/storage/v1/b/") != std::string::npos && request.method == "GET") return "GetBucket";
  return "Other";
}

HttpResponse ObservedTransport::send(const HttpRequest& request) {
  auto started = clock_.now();
  try {
    auto response = inner_.send(request);
    observer_.requestDone(methodOf_(request), std::to_string(response.status), clock_.now() - started);
    return response;
  } catch (const TransportError&) {
    observer_.requestDone(methodOf_(request), "<error>", clock_.now() - started);
    throw;
  }
}

}  // namespace vto::vertex
