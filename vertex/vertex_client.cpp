#include "vertex/vertex_client.h"

#include <cpprest/base_uri.h>
#include <spdlog/spdlog.h>

#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

std::optional<RpcStatus> decodeStatus(const json& resource) {
  if (!resource.contains("error") || !resource["error"].is_object()) return std::nullopt;
  const auto& error = resource["error"];
  RpcStatus status;
  if (error.contains("code")) {
    const auto& code = error["code"];
    status.code = code.is_string() ? rpcCodeNumber(code.get<std::string>()) : code.get<int>();
  }
  status.message = error.value("message", std::string());
  return status;
}

std::optional<Clock::time_point> timeField(const json& resource, const char* field) {
  if (!resource.contains(field) || !resource[field].is_string()) return std::nullopt;
  return parseTimestamp(resource[field].get<std::string>());
}

Operation decodeOperation(const json& resource) {
  Operation operation;
  operation.name = resource.value("name", std::string());
  operation.done = resource.value("done", false);
  operation.error = decodeStatus(resource);
  operation.raw = resource;
  return operation;
}

std::optional<std::chrono::milliseconds> parseRetryAfter(const HttpResponse& response) {
  auto header = response.headers.find("retry-after");
  if (header == response.headers.end()) return std::nullopt;
  try {
    return std::chrono::milliseconds(static_cast<long long>(std::stod(header->second) * 1000));
  } catch (const std::exception&) {
    return std::nullopt;  // an HTTP-date: rare from Google; the backoff applies instead
  }
}

bool isLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace

std::string_view collectionName(JobKind kind) {
  return kind == JobKind::Custom ? "customJobs" : "hyperparameterTuningJobs";
}

JobKind jobKindOf(const std::string& jobName) {
  if (jobName.find("/customJobs/") != std::string::npos) return JobKind::Custom;
  if (jobName.find("/hyperparameterTuningJobs/") != std::string::npos) return JobKind::HyperparameterTuning;
  throw std::invalid_argument("\"" + jobName +
                              "\" is not a job name; expected projects/P/locations/L/customJobs/ID or "
                              "projects/P/locations/L/hyperparameterTuningJobs/ID");
}

Location locationOf(const std::string& resourceName) {
  // projects/{project}/locations/{location}/...
  auto fail = [&] {
    return std::invalid_argument("\"" + resourceName + "\" does not start with projects/PROJECT/locations/LOCATION/");
  };
  if (resourceName.rfind("projects/", 0) != 0) throw fail();
  auto projectEnd = resourceName.find('/', 9);
  if (projectEnd == std::string::npos || resourceName.compare(projectEnd, 11, "/locations/") != 0) throw fail();
  auto locationStart = projectEnd + 11;
  auto locationEnd = resourceName.find('/', locationStart);
  auto location = resourceName.substr(locationStart, locationEnd == std::string::npos ? std::string::npos
                                                                                       : locationEnd - locationStart);
  if (projectEnd == 9 || location.empty()) throw fail();
  return {resourceName.substr(9, projectEnd - 9), location};
}

Job decodeJob(JobKind kind, const json& resource) {
  Job job;
  job.kind = kind;
  job.name = resource.value("name", std::string());
  job.displayName = resource.value("displayName", std::string());
  if (resource.contains("state")) job.state = jobStateFromJson(resource["state"]);
  if (resource.contains("labels") && resource["labels"].is_object()) {
    for (const auto& [key, value] : resource["labels"].items()) job.labels[key] = value.get<std::string>();
  }
  job.createTime = timeField(resource, "createTime");
  job.startTime = timeField(resource, "startTime");
  job.endTime = timeField(resource, "endTime");
  job.updateTime = timeField(resource, "updateTime");
  job.error = decodeStatus(resource);
  job.raw = resource;
  return job;
}

void validateEndpoint(const std::string& endpoint, bool allowInsecure) {
  web::uri uri;
  try {
    uri = web::uri(endpoint);
  } catch (const web::uri_exception&) {
    throw std::invalid_argument("Vertex endpoint \"" + endpoint + "\" is not a URL; write https://HOST[:PORT]");
  }
  if (uri.scheme() == "https") return;
  if (uri.scheme() == "http") {
    if (isLoopback(uri.host()) || allowInsecure) return;
    throw std::invalid_argument("Vertex endpoint \"" + endpoint +
                                "\" uses plain http to a non-loopback host; use https, or pass "
                                "--allow-insecure-endpoints if you really mean it");
  }
  throw std::invalid_argument("Vertex endpoint \"" + endpoint + "\" must start with https:// (or http:// for loopback)");
}

RestVertexClient::RestVertexClient(HttpTransport& http, TokenSource& tokens, const Clock& clock, Sleeper& sleeper,
                                   VertexClientOptions options)
    : http_(http),
      tokens_(tokens),
      sleeper_(sleeper),
      options_(std::move(options)),
      backoff_(options_.retry),
      limiter_(clock, sleeper, options_.limits.window) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
  if (!options_.endpoint.empty()) validateEndpoint(options_.endpoint, options_.allowInsecure);
}

std::string RestVertexClient::baseUrl(const Location& where) const {
  if (!options_.endpoint.empty()) return options_.endpoint;
  return "https://" + where.location + "-aiplatform.googleapis.com";
}

json RestVertexClient::call(const std::string& method, const Location& where, const std::string& pathAndQuery,
                            const json* body, Quota quota) {
  auto key = where.parent() + (quota == Quota::Create ? "#create" : "#other");
  auto waited =
      limiter_.acquire(key, quota == Quota::Create ? options_.limits.createsPerMinute : options_.limits.requestsPerMinute);
  if (options_.observer != nullptr) options_.observer->quotaWaited(waited);

  HttpRequest request;
  request.method = method;
  request.url = baseUrl(where) + "/v1/" + pathAndQuery;
  request.timeout = options_.timeout;
  if (body != nullptr) {
    request.headers["Content-Type"] = "application/json";
    request.body = body->dump();
  }
  bool refreshedToken = false;
  for (int attempt = 1;; ++attempt) {
    request.headers["Authorization"] = "Bearer " + tokens_.token().value;
    std::optional<std::chrono::milliseconds> retryAfter;
    try {
      auto response = http_.send(request);
      if (response.status >= 200 && response.status < 300) {
        return response.body.empty() ? json::object() : json::parse(response.body);
      }
      auto error = parseApiError(response.status, response.body);
      if (response.status == 401 && !refreshedToken) {
        // The token may have been revoked or expired early: one more try with a fresh one.
        refreshedToken = true;
        tokens_.invalidate();
        --attempt;
        continue;
      }
      if (!error.retryable() || attempt >= options_.retry.maxAttempts) {
        error.retryAfter = parseRetryAfter(response);
        throw error;
      }
      retryAfter = parseRetryAfter(response);
      spdlog::debug("vertex {} {}: HTTP {} {}, retry {}", method, pathAndQuery, response.status, error.status(), attempt);
    } catch (const TransportError& error) {
      if (attempt >= options_.retry.maxAttempts) throw;
      spdlog::debug("vertex {} {}: {}, retry {}", method, pathAndQuery, error.what(), attempt);
    }
    ++retries_;
    sleeper_.sleepFor(backoff_.delay(attempt, retryAfter));
  }
}

Job RestVertexClient::createJob(const Location& where, JobKind kind, const json& resource) {
  auto path = where.parent() + "/" + std::string(collectionName(kind));
  return decodeJob(kind, call("POST", where, path, &resource, Quota::Create));
}

Job RestVertexClient::getJob(const std::string& name) {
  return decodeJob(jobKindOf(name), call("GET", locationOf(name), name, nullptr, Quota::Other));
}

JobPage RestVertexClient::listJobs(const Location& where, JobKind kind, const ListOptions& options) {
  auto path = where.parent() + "/" + std::string(collectionName(kind));
  std::string query;
  auto add = [&](const std::string& name, const std::string& value) {
    query += (query.empty() ? "?" : "&") + name + "=" + urlEncode(value);
  };
  if (!options.filter.empty()) add("filter", options.filter);
  if (options.pageSize > 0) add("pageSize", std::to_string(options.pageSize));
  if (!options.pageToken.empty()) add("pageToken", options.pageToken);
  auto response = call("GET", where, path + query, nullptr, Quota::Other);
  JobPage page;
  for (const auto& item : response.value(std::string(collectionName(kind)), json::array())) {
    page.jobs.push_back(decodeJob(kind, item));
  }
  page.nextPageToken = response.value("nextPageToken", std::string());
  return page;
}

void RestVertexClient::cancelJob(const std::string& name) {
  jobKindOf(name);  // reject a name that is not a job before spending a request on it
  json empty = json::object();
  call("POST", locationOf(name), name + ":cancel", &empty, Quota::Other);
}

Operation RestVertexClient::deleteJob(const std::string& name) {
  jobKindOf(name);
  return decodeOperation(call("DELETE", locationOf(name), name, nullptr, Quota::Other));
}

Operation RestVertexClient::getOperation(const std::string& name) {
  return decodeOperation(call("GET", locationOf(name), name, nullptr, Quota::Other));
}

Operation waitForOperation(VertexClient& client, const std::string& name, Sleeper& sleeper,
                           std::chrono::milliseconds interval, int maxPolls) {
  auto operation = client.getOperation(name);
  for (int poll = 1; !operation.done && poll < maxPolls; ++poll) {
    sleeper.sleepFor(interval);
    operation = client.getOperation(name);
  }
  return operation;
}

}  // namespace vto::vertex
