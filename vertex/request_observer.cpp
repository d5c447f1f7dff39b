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

// The Model Registry's methods: `rest` is what follows ".../locations/L/models" in the path.
std::string modelMethodOf(const std::string& method, const std::string& rest) {
  if (rest == ":upload") return method == "POST" ? "UploadModel" : "Other";
  if (rest.empty() || rest[0] != '/') return "Other";
  auto slash = rest.find('/', 1);
  if (slash == std::string::npos) {  // "/M", "/M@V", "/M:listVersions", "/M@V:mergeVersionAliases"
    if (endsWith(rest, ":listVersions")) return method == "GET" ? "ListModelVersions" : "Other";
    if (endsWith(rest, ":mergeVersionAliases")) return method == "POST" ? "MergeVersionAliases" : "Other";
    if (rest.find(':') != std::string::npos) return "Other";
    return method == "GET" ? "GetModel" : "Other";
  }
  auto child = rest.substr(slash);
  if (child == "/evaluations:import") return method == "POST" ? "ImportModelEvaluation" : "Other";
  if (child == "/evaluations") return method == "GET" ? "ListModelEvaluations" : "Other";
  return "Other";
}

}  // namespace

std::string vertexMethodOf(const HttpRequest& request) {
  auto path = pathOf(request.url);
  if (path.find("/operations/") != std::string::npos) return request.method == "GET" ? "GetOperation" : "Other";
  if (auto models = path.find("/models"); models != std::string::npos && path.find("/locations/") < models) {
    return modelMethodOf(request.method, path.substr(models + 7));
  }
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

std::string loggingMethodOf(const HttpRequest& request) {
  return request.method == "POST" && pathOf(request.url) == "/v2/entries:list" ? "ListLogEntries" : "Other";
}

HttpResponse ObservedTransport::send(const HttpRequest& request) {
  auto started = clock_.now();
  try {
    auto response = inner_.send(request);
    observer_.requestDone(methodOf_(request), std::to_string(response.status), clock_.now() - started);
    return response;
  } catch (const TransportError& error) {
    observer_.requestDone(methodOf_(request), "<error>", clock_.now() - started);
    if (dynamic_cast<const TimeoutError*>(&error)) observer_.timedOut();
    throw;
  }
}

}  // namespace vto::vertex
