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
// (base/url.h's requireTrustedEndpoint: https, or http to loopback or with allowInsecure).
void validateEndpoint(const std::string& endpoint, bool allowInsecure);

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

 private:
  enum class Quota { Create, Other };
  // `url` has been built by urlFor() from checked parts.
  nlohmann::json call(const std::string& method, const Location& where, const std::string& url,
                      const nlohmann::json* body, Quota quota);
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
