#include "vertex/vertex_client.h"

#include <spdlog/spdlog.h>

#include "base/gcp_names.h"
#include "vertex/api_error.h"
#include "vertex/google_rest.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

std::optional<RpcStatus> decodeStatus(const json& resource) {
  auto it = resource.find("error");
  if (it == resource.end() || !it->is_object()) return std::nullopt;
  const auto& error = *it;
  RpcStatus status;
  if (auto code = error.find("code"); code != error.end()) {
    if (code->is_string()) {
      status.code = rpcCodeNumber(code->get<std::string>());
    } else if (code->is_number_integer()) {
      auto number = code->get<std::int64_t>();
      status.code = number >= 0 && number <= 16 ? static_cast<int>(number) : 2;  // 2: UNKNOWN
    }
  }
  status.message = stringField(error, "message");
  return status;
}

// The best finished trial by studySpec.metrics[0] (its metricId and goal), as the console shows it.
std::optional<Trial> bestTrialOf(const json& resource) {
  if (!resource.contains("trials") || !resource["trials"].is_array()) return std::nullopt;
  const auto* metrics = resource.contains("studySpec") && resource["studySpec"].is_object() &&
                                resource["studySpec"].contains("metrics") && resource["studySpec"]["metrics"].is_array()
                            ? &resource["studySpec"]["metrics"]
                            : nullptr;
  if (metrics == nullptr || metrics->empty() || !(*metrics)[0].is_object()) return std::nullopt;
  // Every field read with stringField: a wrong JSON type is treated as absent, never thrown.
  std::string metricId = stringField((*metrics)[0], "metricId");
  bool maximize = stringField((*metrics)[0], "goal") != "MINIMIZE";
  std::optional<Trial> best;
  double bestValue = 0;
  for (const auto& trial : resource["trials"]) {
    if (!trial.is_object() || !trial.contains("finalMeasurement") || !trial["finalMeasurement"].is_object()) continue;
    Trial candidate;
    candidate.id = stringField(trial, "id");
    const auto& measured = trial["finalMeasurement"];
    if (measured.contains("metrics") && measured["metrics"].is_array()) {
      for (const auto& m : measured["metrics"]) {
        if (m.is_object() && m.contains("value") && m["value"].is_number()) {
          candidate.metrics[stringField(m, "metricId")] = m["value"].get<double>();
        }
      }
    }
    auto value = candidate.metrics.find(metricId);
    if (value == candidate.metrics.end()) continue;
    if (trial.contains("parameters") && trial["parameters"].is_array()) {
      for (const auto& p : trial["parameters"]) {
        if (p.is_object()) candidate.parameters[stringField(p, "parameterId")] = p.value("value", json());
      }
    }
    if (!best || (maximize ? value->second > bestValue : value->second < bestValue)) {
      bestValue = value->second;
      best = std::move(candidate);
    }
  }
  return best;
}

std::optional<JobKind> kindOfCollection(std::string_view collection) {
  for (auto kind : {JobKind::Custom, JobKind::HyperparameterTuning}) {
    if (collection == collectionName(kind)) return kind;
  }
  return std::nullopt;
}

const char* kJobNameForm =
    "expected projects/PROJECT/locations/REGION/customJobs/ID or "
    "projects/PROJECT/locations/REGION/hyperparameterTuningJobs/ID (ID a number), as Vertex returns them";

}  // namespace

bool isDecimalId(std::string_view text) {
  return !text.empty() && text.size() <= 30 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<LocatedName> splitLocatedName(std::string_view name, std::size_t maxRest) {
  if (name.size() > 512) return std::nullopt;
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (parts.size() <= 4 + maxRest) {
    auto slash = name.find('/', start);
    auto part = name.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty()) return std::nullopt;  // "//", a leading or a trailing slash
    parts.push_back(part);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.size() < 4 || parts.size() > 4 + maxRest || parts[0] != "projects" || parts[2] != "locations") {
    return std::nullopt;
  }
  if (!(isProjectId(parts[1]) || isProjectNumber(parts[1])) || !isVertexRegion(parts[3])) return std::nullopt;
  return LocatedName{{std::string(parts[1]), std::string(parts[3])}, {parts.begin() + 4, parts.end()}};
}

std::optional<ResourceName> parseResourceName(std::string_view name) {
  auto located = splitLocatedName(name, 4);
  if (!located) return std::nullopt;
  const auto& rest = located->rest;
  ResourceName parsed;
  parsed.where = located->where;
  std::size_t next = 0;
  if (rest.size() >= 2 && kindOfCollection(rest[0])) {
    if (!isDecimalId(rest[1])) return std::nullopt;
    parsed.kind = kindOfCollection(rest[0]);
    parsed.jobId = rest[1];
    next = 2;
  }
  if (rest.size() == next) return parsed.kind ? std::optional(parsed) : std::nullopt;
  if (rest.size() == next + 2 && rest[next] == "operations" && isDecimalId(rest[next + 1])) {
    parsed.operationId = rest[next + 1];
    return parsed;
  }
  return std::nullopt;
}

std::string requestQuotaKey(const Location& where) { return where.parent() + " (requests)"; }

Operation decodeOperation(const json& resource) {
  Operation operation;
  operation.name = stringField(resource, "name");
  auto done = resource.find("done");
  operation.done = resource.is_object() && done != resource.end() && done->is_boolean() && done->get<bool>();
  operation.error = resource.is_object() ? decodeStatus(resource) : std::nullopt;
  operation.raw = resource;
  return operation;
}

JobKind jobKindOf(const std::string& jobName) {
  auto parsed = parseResourceName(jobName);
  if (!parsed || !parsed->kind || !parsed->operationId.empty()) {
    throw std::invalid_argument("\"" + jobName.substr(0, 200) + "\" is not a Vertex job name; " + kJobNameForm);
  }
  return *parsed->kind;
}

Location locationOf(const std::string& resourceName) {
  auto parsed = parseResourceName(resourceName);
  if (!parsed) {
    throw std::invalid_argument("\"" + resourceName.substr(0, 200) + "\" is not a Vertex job or operation name; " +
                                kJobNameForm);
  }
  return parsed->where;
}

void checkLocation(const Location& where) {
  if (!isProjectId(where.project) && !isProjectNumber(where.project)) {
    throw std::invalid_argument(*checkProjectId("project", where.project));
  }
  if (auto problem = checkVertexRegion("location", where.location)) throw std::invalid_argument(*problem);
}

Job decodeJob(JobKind kind, json resource) {
  Job job;
  job.kind = kind;
  if (!resource.is_object()) return job;
  job.name = stringField(resource, "name");
  job.displayName = stringField(resource, "displayName");
  if (auto state = resource.find("state"); state != resource.end()) job.state = jobStateFromJson(*state);
  job.labels = stringMapField(resource, "labels");
  job.createTime = timeField(resource, "createTime");
  job.startTime = timeField(resource, "startTime");
  job.endTime = timeField(resource, "endTime");
  job.updateTime = timeField(resource, "updateTime");
  job.error = decodeStatus(resource);
  job.bestTrial = bestTrialOf(resource);
  job.webAccessUris = stringMapField(resource, "webAccessUris");
  job.raw = std::move(resource);  // moved, never copied: a list of 1,000 jobs copied every one
  return job;
}

std::string_view decodedJobFields(JobKind kind) {
  // Keep in step with decodeJob and bestTrialOf. A tuning job's web access URIs
  // are its trials'.
  switch (kind) {
    case JobKind::Custom:
      return "name,displayName,state,labels,createTime,startTime,endTime,updateTime,error,webAccessUris";
    case JobKind::HyperparameterTuning:
      return "name,displayName,state,labels,createTime,startTime,endTime,updateTime,error,trials,studySpec.metrics";
  }
  return "";
}

std::string validateEndpoint(const std::string& endpoint, bool allowInsecure) {
  return trustedEndpoint(endpoint, "Vertex endpoint", allowInsecure);
}

RestVertexClient::RestVertexClient(HttpTransport& http, TokenSource& tokens, const Clock& clock,
                                   VertexClientOptions options)
    : http_(http), tokens_(tokens), options_(std::move(options)), pacer_(clock, options_.limits.window) {
  if (!options_.endpoint.empty()) options_.endpoint = validateEndpoint(options_.endpoint, options_.allowInsecure);
}

UrlBuilder vertexLocationUrl(const std::string& endpoint, const Location& where) {
  try {
    checkLocation(where);
  } catch (const std::invalid_argument& error) {
    throw ApiError::refusedRequest(error.what());
  }
  UrlBuilder url(endpoint.empty() ? "https://" + where.location + "-aiplatform.googleapis.com" : endpoint);
  url.literal("v1").segment("projects").segment(where.project).segment("locations").segment(where.location);
  return url;
}

UrlBuilder RestVertexClient::urlFor(const Location& where) const { return vertexLocationUrl(options_.endpoint, where); }

UrlBuilder RestVertexClient::urlFor(const ResourceName& name) const {
  auto url = urlFor(name.where);
  if (name.kind) url.segment(collectionName(*name.kind)).segment(name.jobId);
  if (!name.operationId.empty()) url.segment("operations").segment(name.operationId);
  return url;
}

std::string tenantOfJob(const json& resource) {
  const auto labels = resource.find("labels");
  if (labels == resource.end() || !labels->is_object()) return "";
  const auto tenant = labels->find(kTenantLabel);
  return tenant != labels->end() && tenant->is_string() ? tenant->get<std::string>() : "";
}

ResourceName RestVertexClient::parseOrRefuse(const std::string& name, bool mustBeJob) const {
  auto parsed = parseResourceName(name);
  if (!parsed || (mustBeJob && (!parsed->kind || !parsed->operationId.empty())) ||
      (!mustBeJob && parsed->operationId.empty())) {
    throw ApiError::refusedRequest("\"" + name.substr(0, 200) + "\" is not a Vertex " +
                                   (mustBeJob ? "job" : "operation") + " name; " + kJobNameForm);
  }
  return *parsed;
}

json RestVertexClient::call(const std::string& method, const Location& where, const std::string& url,
                            const json* body, Quota quota, const std::string& tenant) {
  if (quota == Quota::Create) {
    // The project's per-minute create quota is every tenant's: one namespace's failover loop must not
    // take it all, so each namespace creating here gets its fair share.
    auto key = where.parent() + " (job creations)";
    auto wait = pacer_.tryAcquireShared(key, tenant, options_.limits.createsPerMinute);
    if (options_.observer != nullptr) options_.observer->quotaWaited(wait.value_or(std::chrono::milliseconds(0)));
    if (wait) throw QuotaPacingError(key + (tenant.empty() ? "" : " for namespace " + tenant), *wait);
  } else {
    paceOrThrow(pacer_, requestQuotaKey(where), options_.limits.requestsPerMinute, options_.observer);
  }
  return callGoogleJson(http_, tokens_, {method, url, {}, "", options_.timeout, 0}, body, &requests_);
}

Job RestVertexClient::createJob(const Location& where, JobKind kind, const json& resource) {
  auto url = urlFor(where).segment(collectionName(kind)).str();
  auto created = call("POST", where, url, &resource, Quota::Create, tenantOfJob(resource));
  auto job = decodeJob(kind, created);
  // The name is written to status and used for every later request: it must be one we would accept.
  auto parsed = parseResourceName(job.name);
  if (!parsed || parsed->kind != kind || !parsed->operationId.empty()) {
    throw ApiError::unexpectedResponse(200, created.dump(), "the created job has no valid name");
  }
  return job;
}

Job RestVertexClient::getJob(const std::string& name) {
  auto parsed = parseOrRefuse(name, /*mustBeJob=*/true);
  auto resource = call("GET", parsed.where, urlFor(parsed).str(), nullptr, Quota::Other);
  return decodeJob(*parsed.kind, std::move(resource));
}

JobPage RestVertexClient::listJobs(const Location& where, JobKind kind, const ListOptions& options) {
  auto url = urlFor(where).segment(collectionName(kind));
  if (!options.filter.empty()) url.query("filter", options.filter);
  if (options.pageSize > 0) url.query("pageSize", std::to_string(options.pageSize));
  if (!options.pageToken.empty()) url.query("pageToken", options.pageToken);
  if (!options.readMask.empty()) url.query("readMask", options.readMask);
  auto response = call("GET", where, url.str(), nullptr, Quota::Other);
  JobPage page;
  auto items = response.find(std::string(collectionName(kind)));
  if (items != response.end() && items->is_array()) {
    int skipped = 0;
    for (auto& item : *items) {
      auto job = decodeJob(kind, std::move(item));
      auto parsed = parseResourceName(job.name);
      if (!parsed || parsed->kind != kind || !parsed->operationId.empty()) {
        ++skipped;  // a job without a valid name can be neither matched to a run nor fetched again
        continue;
      }
      page.jobs.push_back(std::move(job));
    }
    if (skipped > 0) spdlog::warn("vertex list {}: skipped {} jobs without a valid name", where.parent(), skipped);
  }
  page.nextPageToken = stringField(response, "nextPageToken");
  return page;
}

void RestVertexClient::cancelJob(const std::string& name) {
  auto parsed = parseOrRefuse(name, /*mustBeJob=*/true);
  json empty = json::object();
  call("POST", parsed.where, urlFor(parsed).verb("cancel").str(), &empty, Quota::Other);
}

Operation RestVertexClient::deleteJob(const std::string& name) {
  auto parsed = parseOrRefuse(name, /*mustBeJob=*/true);
  return decodeOperation(call("DELETE", parsed.where, urlFor(parsed).str(), nullptr, Quota::Other));
}

Operation RestVertexClient::getOperation(const std::string& name) {
  auto parsed = parseOrRefuse(name, /*mustBeJob=*/false);
  return decodeOperation(call("GET", parsed.where, urlFor(parsed).str(), nullptr, Quota::Other));
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
