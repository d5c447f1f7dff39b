#pragma once
// Cloud Logging v2 `entries:list` over REST, and the filter that selects a Vertex AI training job's
// log. Log lines are the tenant's data: this client returns them to its caller (`vto logs` prints
// them to the user's terminal) and never writes them to vto's own log. The LoggingClient interface
// has a fake in tests/fakes/; RestLoggingClient is the real one. Field names and shapes:
// third_party/logging-api/README.md.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/rate_limiter.h"

namespace vto::vertex {

// google.logging.type.LogSeverity; the numbers order them.
enum class LogSeverity {
  Default = 0,
  Debug = 100,
  Info = 200,
  Notice = 300,
  Warning = 400,
  Error = 500,
  Critical = 600,
  Alert = 700,
  Emergency = 800,
};
std::string_view severityName(LogSeverity severity);  // "ERROR"
// "ERROR" or "error" (or a JSON number 500): nullopt for anything else.
std::optional<LogSeverity> severityFromName(std::string_view name);

struct LogEntry {
  std::string insertId;
  std::optional<Clock::time_point> timestamp;  // nanoseconds kept
  LogSeverity severity = LogSeverity::Default;
  // textPayload, or jsonPayload.message when there is no textPayload (any other payload: "").
  std::string message;
  std::string logName;
  std::string resourceType;                           // "ml_job"
  std::map<std::string, std::string> resourceLabels;  // job_id, task_name, project_id
  std::map<std::string, std::string> labels;
  // The replica that wrote it: resource.labels.task_name ("workerpool0-0"), else the older
  // labels."ml.googleapis.com/task_name"; "" when neither is there.
  std::string replica() const;
};
// Decodes one LogEntry; fields of the wrong type read as absent.
LogEntry decodeLogEntry(const nlohmann::json& entry);

struct ListLogEntriesRequest {
  std::vector<std::string> resourceNames;  // "projects/P": at least one, at most 100
  std::string filter;                      // Logging query language, at most 20,000 characters
  std::string orderBy = "timestamp asc";   // or "timestamp desc"
  int pageSize = 0;                        // 0: the server's default (50); at most 1000
  std::string pageToken;
};

struct LogEntryPage {
  std::vector<LogEntry> entries;
  // Empty on the last page. A token with no entries means the search ran out of time before the
  // end: ask again with it.
  std::string nextPageToken;
};

class LoggingClient {
 public:
  virtual ~LoggingClient() = default;
  // One page. Fails fast like the Vertex client: ApiError (403: the caller lacks
  // logging.logEntries.list, e.g. roles/logging.viewer), TransportError, AuthError, QuotaPacingError;
  // ApiError::refusedRequest for a request that breaks the limits above, before any request.
  virtual LogEntryPage listEntries(const ListLogEntriesRequest& request) = 0;
};

struct LoggingClientOptions {
  // Cloud Logging's base URL; an emulator serves POST /v2/entries:list on its own listener.
  std::string endpoint = "https://logging.googleapis.com";
  bool allowInsecure = false;  // plain http only to loopback hosts unless set
  std::chrono::milliseconds timeout{30000};
  // A page larger than this is a TransportError, not an allocation (1,000 entries of a few KiB).
  std::size_t maxResponseBytes = 4 << 20;
  // Each message is cut to this many bytes (a whole JSON payload can be large).
  std::size_t maxMessageBytes = 64 << 10;
  // entries.list calls per minute per project (Cloud Logging's read quota is per project); 0: unlimited.
  int requestsPerMinute = 60;
  std::chrono::milliseconds window = std::chrono::minutes(1);  // shorter only in tests
};

class RestLoggingClient final : public LoggingClient {
 public:
  // Throws std::invalid_argument when the endpoint fails base/url.h's requireTrustedEndpoint.
  RestLoggingClient(HttpTransport& http, TokenSource& tokens, const Clock& clock, LoggingClientOptions options = {});
  LogEntryPage listEntries(const ListLogEntriesRequest& request) override;
  int requests() const { return requests_.load(); }

 private:
  HttpTransport& http_;
  TokenSource& tokens_;
  LoggingClientOptions options_;
  QuotaPacer pacer_;
  std::atomic<int> requests_{0};
};

// --- Vertex AI training logs ---

// workerpoolN-M: a replica of a CustomJob as Vertex names it in resource.labels.task_name.
bool isReplicaName(std::string_view replica);

// What to select from one job's log; every value is checked before it goes into the filter.
struct VertexLogQuery {
  std::string jobId;   // the job's numeric ID (the last segment of its name)
  std::string replica;  // "" (all) or workerpoolN-M
  std::optional<LogSeverity> minSeverity;
  std::optional<Clock::time_point> since;  // timestamp>= this
  std::optional<Clock::time_point> until;  // timestamp<= this
};
// resource.type="ml_job" AND resource.labels.job_id="123" [AND resource.labels.task_name="workerpool0-0"]
// [AND severity>=ERROR] [AND timestamp>="2026-12-05T10:00:03.123456789Z"] [AND timestamp<="..."]. Throws
// std::invalid_argument naming the value and its form when a job ID is not digits or a replica is
// not workerpoolN-M: nothing is ever interpolated raw.
std::string vertexJobLogFilter(const VertexLogQuery& query);

// The bounds of reading many pages (collectEntries): each page is already bounded in bytes.
struct LogReadLimits {
  int maxPages = 20;
  std::size_t maxEntries = 10000;
  std::chrono::milliseconds maxTime = std::chrono::seconds(60);
};

// Pages through `request` from its pageToken until the last page or a limit: returns the entries
// read and the token to go on from ("" when the end was reached). Throws ApiError when the server
// repeats a page token.
LogEntryPage collectEntries(LoggingClient& client, ListLogEntriesRequest request, const Clock& clock,
                            const LogReadLimits& limits = {});
// The first page that has entries: Cloud Logging may answer a page with no entries and a token when
// its search ran out of time ("still searching"), so such pages are followed, at most `maxPages` in
// all. Returns the last page read (its entries empty only when none came within the bound).
LogEntryPage firstEntries(LoggingClient& client, ListLogEntriesRequest request, int maxPages = 5);

}  // namespace vto::vertex
