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
#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/json_codec.h"
#include "vertex/rate_limiter.h"
#include "vertex/request_observer.h"
#include "vertex/retry.h"
#include "vertex/sleeper.h"

namespace vto::vertex {

enum class JobKind { Custom, HyperparameterTuning };
// "customJobs" / "hyperparameterTuningJobs": the collection segment of the REST path.
std::string_view collectionName(JobKind kind);
// The kind a resource name belongs to; throws std::invalid_argument for another resource.
JobKind jobKindOf(const std::string& jobName);

struct Location {
  std::string project;
  std::string location;  // e.g. us-central1
  std::string parent() const { return "projects/" + project + "/locations/" + location; }
};
// The project and location a resource name lives in; throws std::invalid_argument.
Location locationOf(const std::string& resourceName);

// google.rpc.Status as embedded in a job or an Operation: `code` is the rpc code (1 = CANCELLED).
struct RpcStatus {
  int code = 0;
  std::string message;
};

struct Job {
  JobKind kind = JobKind::Custom;
  std::string name;  // projects/P/locations/L/customJobs/ID
  std::string displayName;
  JobState state = JobState::Unspecified;
  std::map<std::string, std::string> labels;
  std::optional<Clock::time_point> createTime, startTime, endTime, updateTime;
  std::optional<RpcStatus> error;
  nlohmann::json raw;  // the whole resource, for fields not decoded above (trials, jobSpec)
};
// Decodes a job resource; enum names or numbers, int64 strings or numbers.
Job decodeJob(JobKind kind, const nlohmann::json& resource);

struct ListOptions {
  std::string filter;  // e.g. labels.vto-run-uid="abc" AND state="JOB_STATE_RUNNING"
  int pageSize = 0;    // 0: the server's default
  std::string pageToken;
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
  // All methods throw ApiError for an answer that is not success (after retries) and
  // TransportError when retries ran out without any answer.
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
  RetryPolicy retry;
  RateLimits limits;
  std::chrono::milliseconds timeout{60000};
  RequestObserver* observer = nullptr;  // told how long each call waited for the pacer (metrics)
};

// Throws std::invalid_argument naming the fix when `endpoint` is not a usable base URL.
void validateEndpoint(const std::string& endpoint, bool allowInsecure);

class RestVertexClient final : public VertexClient {
 public:
  RestVertexClient(HttpTransport& http, TokenSource& tokens, const Clock& clock, Sleeper& sleeper,
                   VertexClientOptions options = {});

  Job createJob(const Location& where, JobKind kind, const nlohmann::json& resource) override;
  Job getJob(const std::string& name) override;
  JobPage listJobs(const Location& where, JobKind kind, const ListOptions& options) override;
  void cancelJob(const std::string& name) override;
  Operation deleteJob(const std::string& name) override;
  Operation getOperation(const std::string& name) override;

  // Retries made so far (every attempt after the first of a call), for tests and metrics.
  int retries() const { return retries_.load(); }

 private:
  enum class Quota { Create, Other };
  nlohmann::json call(const std::string& method, const Location& where, const std::string& pathAndQuery,
                      const nlohmann::json* body, Quota quota);
  std::string baseUrl(const Location& where) const;

  HttpTransport& http_;
  TokenSource& tokens_;
  Sleeper& sleeper_;
  VertexClientOptions options_;
  Backoff backoff_;
  RateLimiter limiter_;
  std::atomic<int> retries_{0};
};

// Polls getOperation until done, pausing `interval` between polls, at most `maxPolls` times.
Operation waitForOperation(VertexClient& client, const std::string& name, Sleeper& sleeper,
                           std::chrono::milliseconds interval = std::chrono::seconds(1), int maxPolls = 60);

}  // namespace vto::vertex
