#pragma once
// Vertex AI v1 CustomJobs and HyperparameterTuningJobs over REST. The interface is what the
// reconcilers use (a fake lives in tests/fakes/); RestVertexClient is the one real implementation.
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/gcp_names.h"
#include "base/url.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/job_kind.h"
#include "vertex/json_codec.h"
#include "vertex/rate_limiter.h"
#include "vertex/request_observer.h"
#include "vertex/sleeper.h"

namespace vto::vertex {

// A Vertex resource name, parsed with one strict pattern (names come back from Vertex and are
// stored in status, which anyone with status write access can change, so they are untrusted):
//   projects/P/locations/L/(customJobs|hyperparameterTuningJobs)/ID
//   projects/P/locations/L[/(customJobs|hyperparameterTuningJobs)/ID]/operations/OPID
// P is a project ID or number, L a region, ID and OPID decimal numbers.
struct ResourceName {
  Location where;
  std::optional<JobKind> kind;  // set for a job and for an operation under a job
  std::string jobId;
  std::string operationId;  // empty for a job
};
std::optional<ResourceName> parseResourceName(std::string_view name);

// The one prefix parser of every Vertex name vto reads back (jobs, models, operations): splits
// projects/P/locations/L/rest..., P a project ID or number and L a region, into the location and at
// most `maxRest` further segments, none of them empty; nullopt for anything else or over 512 bytes.
struct LocatedName {
  Location where;
  std::vector<std::string_view> rest;  // views into the parsed name
};
std::optional<LocatedName> splitLocatedName(std::string_view name, std::size_t maxRest);
// 1 to 30 decimal digits: the IDs Vertex assigns (jobs, operations, model versions).
bool isDecimalId(std::string_view text);

// The kind of a job name; throws std::invalid_argument (with the expected form) for anything that
// is not exactly a job name.
JobKind jobKindOf(const std::string& jobName);
// The project and location of a job or operation name; throws std::invalid_argument.
Location locationOf(const std::string& resourceName);

// Refuses (std::invalid_argument, saying what a valid value looks like) a project that is neither a
// project ID nor a number and a location that is not a region: both end up in the request's host
// or path.
void checkLocation(const Location& where);

// google.rpc.Status as embedded in a job or an Operation: `code` is the rpc code (1 = CANCELLED).
struct RpcStatus {
  int code = 0;
  std::string message;
};

// A finished trial of a HyperparameterTuningJob: its parameters and final metrics.
struct Trial {
  std::string id;
  nlohmann::json parameters = nlohmann::json::object();  // parameterId -> value (any JSON)
  std::map<std::string, double> metrics;                  // metricId -> final value
};

struct Job {
  JobKind kind = JobKind::Custom;
  std::string name;  // projects/P/locations/L/customJobs/ID
  std::string displayName;
  JobState state = JobState::Unspecified;
  std::map<std::string, std::string> labels;
  std::optional<Clock::time_point> createTime, startTime, endTime, updateTime;
  std::optional<RpcStatus> error;
  // The best finished trial by the study's first metric and its goal (studySpec.metrics[0]).
  std::optional<Trial> bestTrial;
  std::map<std::string, std::string> webAccessUris;  // interactive shell URIs, when enabled
  nlohmann::json raw;  // the whole resource, for fields not decoded above (trials, jobSpec)
};
// Decodes a job resource; enum names or numbers, int64 strings or numbers.
Job decodeJob(JobKind kind, nlohmann::json resource);
// The fields decodeJob reads, as a readMask: a list with it leaves out the job specs (most of each
// job's bytes), and the decoded Job is the same but for `raw`.
std::string_view decodedJobFields(JobKind kind);

struct ListOptions {
  std::string filter;  // e.g. labels.vto-run-uid="abc" AND state="JOB_STATE_RUNNING"
  int pageSize = 0;    // 0: the server's default
  std::string pageToken;
  std::string readMask;  // comma-separated fields to return (e.g. decodedJobFields); empty: all
};

struct JobPage {
  std::vector<Job> jobs;
  std::string nextPageToken;  // empty on the last page
};

struct Operation {
  std::string name;
  bool done = false;
  std::optional<RpcStatus> error;
  nlohmann::json raw;
};
// Decodes a google.longrunning.Operation; fields of the wrong type read as absent.
Operation decodeOperation(const nlohmann::json& resource);

class VertexClient {
 public:
  virtual ~VertexClient() = default;
  // All methods fail fast, without sleeping or retrying: ApiError for an answer that is not success
  // (retryAfter from the server's Retry-After, clamped), TransportError when there was no answer,
  // QuotaPacingError when the client's own per-minute quota says "not yet", AuthError when no token
  // can be had, ApiError::refusedRequest for a project, location or name that fails the checks
  // above. All are RetryableError: the work queue is the one backoff layer.
  virtual Job createJob(const Location& where, JobKind kind, const nlohmann::json& resource) = 0;
  virtual Job getJob(const std::string& name) = 0;
  virtual JobPage listJobs(const Location& where, JobKind kind, const ListOptions& options) = 0;
  virtual void cancelJob(const std::string& name) = 0;
  virtual Operation deleteJob(const std::string& name) = 0;
  virtual Operation getOperation(const std::string& name) = 0;
};

// base + /v1/projects/P/locations/L, every segment encoded; an empty `endpoint` is the location's
// regional endpoint (https://L-aiplatform.googleapis.com). Checked again here, whoever checked
// before, since the location becomes part of the host name: throws ApiError::refusedRequest for a
// project or location that fails checkLocation.
UrlBuilder vertexLocationUrl(const std::string& endpoint, const Location& where);

// The QuotaPacer key of a location's requests other than job creations: every client of the same
// Vertex project and region that shares a pacer (RestVertexClient::pacer()) shares this budget.
std::string requestQuotaKey(const Location& where);

struct RateLimits {
  int createsPerMinute = 60;    // Vertex's default custom training job creation quota
  int requestsPerMinute = 600;  // everything else
  std::chrono::milliseconds window = std::chrono::minutes(1);  // shorter only in tests
};

struct VertexClientOptions {
  // Empty: https://{location}-aiplatform.googleapis.com, the regional endpoint of each request.
  std::string endpoint;
  // Plain http is accepted only for loopback hosts unless this is set.
  bool allowInsecure = false;
  RateLimits limits;
  std::chrono::milliseconds timeout{60000};
  // Told, for metrics, how long the pacer deferred a call (it does not block: the call fails with
  // QuotaPacingError and the work queue brings the run back after that time).
  RequestObserver* observer = nullptr;
};

// Throws std::invalid_argument naming the fix when `endpoint` is not a usable base URL
// (base/url.h's trustedEndpoint: https, or http to loopback or with allowInsecure). Returns its
// canonical form (base/url.h's canonicalUrl), the one the client sends to.
std::string validateEndpoint(const std::string& endpoint, bool allowInsecure);

// The job label that names the namespace a job is created for (crd::kNamespaceLabel, which crd
// renders into every job): creates are shared fairly between the namespaces it names.
inline constexpr const char* kTenantLabel = "vto-namespace";

// The tenant a job body is created for: its kTenantLabel, or "" when it has none.
std::string tenantOfJob(const nlohmann::json& resource);

class RestVertexClient final : public VertexClient {
 public:
  RestVertexClient(HttpTransport& http, TokenSource& tokens, const Clock& clock, VertexClientOptions options = {});

  Job createJob(const Location& where, JobKind kind, const nlohmann::json& resource) override;
  Job getJob(const std::string& name) override;
  JobPage listJobs(const Location& where, JobKind kind, const ListOptions& options) override;
  void cancelJob(const std::string& name) override;
  Operation deleteJob(const std::string& name) override;
  Operation getOperation(const std::string& name) override;

  // Requests sent so far (the 401 token-refresh retry included), for tests and metrics.
  int requests() const { return requests_.load(); }
  // The client-side quota, for other clients of the same Vertex service (the Model Registry) to
  // share: Vertex counts their requests against the same per-region budget.
  QuotaPacer& pacer() { return pacer_; }

 private:
  enum class Quota { Create, Other };
  // `url` has been built by urlFor() from checked parts.
  // `tenant`: with Quota::Create, whose share of the location's create quota the request spends.
  nlohmann::json call(const std::string& method, const Location& where, const std::string& url,
                      const nlohmann::json* body, Quota quota, const std::string& tenant = "");
  // base + /v1/projects/P/locations/L, every segment encoded; refuses unchecked parts.
  UrlBuilder urlFor(const Location& where) const;
  UrlBuilder urlFor(const ResourceName& name) const;
  ResourceName parseOrRefuse(const std::string& name, bool mustBeJob) const;

  HttpTransport& http_;
  TokenSource& tokens_;
  VertexClientOptions options_;
  QuotaPacer pacer_;
  std::atomic<int> requests_{0};
};

// Polls getOperation until done, pausing `interval` between polls, at most `maxPolls` times.
Operation waitForOperation(VertexClient& client, const std::string& name, Sleeper& sleeper,
                           std::chrono::milliseconds interval = std::chrono::seconds(1), int maxPolls = 60);

}  // namespace vto::vertex
