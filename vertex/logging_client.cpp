#include "vertex/logging_client.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "base/gcp_names.h"
#include "base/rfc3339.h"
#include "base/utf8.h"
#include "base/url.h"
#include "vertex/api_error.h"
#include "vertex/gcs_client.h"
#include "vertex/google_rest.h"
#include "vertex/json_codec.h"
#include "vertex/vertex_client.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

struct SeverityName {
  LogSeverity severity;
  std::string_view name;
};
constexpr std::array<SeverityName, 9> kSeverities = {{
    {LogSeverity::Default, "DEFAULT"},
    {LogSeverity::Debug, "DEBUG"},
    {LogSeverity::Info, "INFO"},
    {LogSeverity::Notice, "NOTICE"},
    {LogSeverity::Warning, "WARNING"},
    {LogSeverity::Error, "ERROR"},
    {LogSeverity::Critical, "CRITICAL"},
    {LogSeverity::Alert, "ALERT"},
    {LogSeverity::Emergency, "EMERGENCY"},
}};

LogSeverity severityOf(const json& value) {
  if (value.is_string()) return severityFromName(value.get_ref<const std::string&>()).value_or(LogSeverity::Default);
  if (value.is_number_integer()) {
    auto number = value.get<std::int64_t>();
    for (const auto& known : kSeverities) {
      if (static_cast<std::int64_t>(known.severity) == number) return known.severity;
    }
  }
  return LogSeverity::Default;
}

// Cuts `text` to at most `max` bytes, never inside a UTF-8 sequence.
void cutUtf8(std::string& text, std::size_t max) { text.resize(utf8PrefixLength(text, max)); }

bool allDigits(std::string_view text, std::size_t min, std::size_t max) {
  return text.size() >= min && text.size() <= max &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A value written into a filter between double quotes, with the two characters that could end it
// escaped. The values vto writes are checked to hold neither; this is the second line of defence.
std::string filterString(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void checkRequest(const ListLogEntriesRequest& request) {
  if (request.resourceNames.empty() || request.resourceNames.size() > 100) {
    throw ApiError::refusedRequest("entries:list takes 1 to 100 resourceNames, e.g. projects/my-project");
  }
  for (const auto& name : request.resourceNames) {
    std::string_view project = name;
    if (project.rfind("projects/", 0) != 0 ||
        !(isProjectId(project.substr(9)) || isProjectNumber(project.substr(9)))) {
      throw ApiError::refusedRequest("resourceNames entry \"" + name.substr(0, 100) +
                                     "\" is not projects/PROJECT (a project ID or number)");
    }
  }
  if (request.filter.size() > 20000) throw ApiError::refusedRequest("the log filter is longer than 20,000 characters");
  if (request.orderBy != "timestamp asc" && request.orderBy != "timestamp desc" && !request.orderBy.empty()) {
    throw ApiError::refusedRequest("orderBy must be \"timestamp asc\" or \"timestamp desc\"");
  }
  if (request.pageSize < 0 || request.pageSize > 1000) throw ApiError::refusedRequest("pageSize must be 0 to 1000");
}

}  // namespace

std::string_view severityName(LogSeverity severity) {
  for (const auto& known : kSeverities) {
    if (known.severity == severity) return known.name;
  }
  return "DEFAULT";
}

std::optional<LogSeverity> severityFromName(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const auto& known : kSeverities) {
    if (known.name == upper) return known.severity;
  }
  return std::nullopt;
}

std::string LogEntry::replica() const {
  if (auto it = resourceLabels.find("task_name"); it != resourceLabels.end() && !it->second.empty()) return it->second;
  if (auto it = labels.find("ml.googleapis.com/task_name"); it != labels.end()) return it->second;
  return "";
}

LogEntry decodeLogEntry(const json& entry) {
  LogEntry decoded;
  if (!entry.is_object()) return decoded;
  decoded.insertId = stringField(entry, "insertId");
  decoded.timestamp = timeField(entry, "timestamp");
  if (auto severity = entry.find("severity"); severity != entry.end()) decoded.severity = severityOf(*severity);
  if (auto text = entry.find("textPayload"); text != entry.end() && text->is_string()) {
    decoded.message = text->get<std::string>();
  } else if (auto payload = entry.find("jsonPayload"); payload != entry.end() && payload->is_object()) {
    decoded.message = stringField(*payload, "message");
  }
  decoded.logName = stringField(entry, "logName");
  if (auto resource = entry.find("resource"); resource != entry.end() && resource->is_object()) {
    decoded.resourceType = stringField(*resource, "type");
    decoded.resourceLabels = stringMapField(*resource, "labels");
  }
  decoded.labels = stringMapField(entry, "labels");
  return decoded;
}

RestLoggingClient::RestLoggingClient(HttpTransport& http, TokenSource& tokens, const Clock& clock,
                                     LoggingClientOptions options)
    : http_(http), tokens_(tokens), options_(std::move(options)), pacer_(clock, options_.window) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
  requireTrustedEndpoint(options_.endpoint, "Cloud Logging endpoint", options_.allowInsecure);
}

LogEntryPage RestLoggingClient::listEntries(const ListLogEntriesRequest& request) {
  checkRequest(request);
  // Cloud Logging's read quota is per project: pace by the first one named.
  auto key = "logging " + request.resourceNames.front();
  pacer_.acquireOrThrow(key, options_.requestsPerMinute);
  json body = {{"resourceNames", request.resourceNames}};
  if (!request.filter.empty()) body["filter"] = request.filter;
  if (!request.orderBy.empty()) body["orderBy"] = request.orderBy;
  if (request.pageSize > 0) body["pageSize"] = request.pageSize;
  if (!request.pageToken.empty()) body["pageToken"] = request.pageToken;
  HttpRequest http;
  http.method = "POST";
  http.url = UrlBuilder(options_.endpoint).literal("v2/entries").verb("list").str();
  http.timeout = options_.timeout;
  http.maxBodyBytes = options_.maxResponseBytes;
  auto response = callGoogleJson(http_, tokens_, std::move(http), &body, &requests_);
  LogEntryPage page;
  if (auto entries = response.find("entries"); entries != response.end() && entries->is_array()) {
    page.entries.reserve(entries->size());
    for (const auto& entry : *entries) {
      page.entries.push_back(decodeLogEntry(entry));
      cutUtf8(page.entries.back().message, options_.maxMessageBytes);
    }
  }
  page.nextPageToken = stringField(response, "nextPageToken");
  return page;
}

bool isReplicaName(std::string_view replica) {
  constexpr std::string_view prefix = "workerpool";
  if (replica.rfind(prefix, 0) != 0) return false;
  auto rest = replica.substr(prefix.size());
  auto dash = rest.find('-');
  return dash != std::string_view::npos && allDigits(rest.substr(0, dash), 1, 2) &&
         allDigits(rest.substr(dash + 1), 1, 6);
}

std::string vertexJobLogFilter(const VertexLogQuery& query) {
  if (!isDecimalId(query.jobId)) {
    throw std::invalid_argument("job ID \"" + query.jobId.substr(0, 64) +
                                "\" is not a Vertex job ID (digits, the last part of the job's name)");
  }
  std::string filter = "resource.type=\"ml_job\" AND resource.labels.job_id=" + filterString(query.jobId);
  if (!query.replica.empty()) {
    if (!isReplicaName(query.replica)) {
      throw std::invalid_argument("replica \"" + query.replica.substr(0, 64) +
                                  "\" is not a Vertex replica name; write workerpoolN-M, e.g. workerpool0-0 (the "
                                  "primary) or workerpool1-3 (worker 3 of pool 1)");
    }
    filter += " AND resource.labels.task_name=" + filterString(query.replica);
  }
  if (query.minSeverity) filter += " AND severity>=" + std::string(severityName(*query.minSeverity));
  if (query.since) filter += " AND timestamp>=" + filterString(rfc3339Exact(*query.since));
  if (query.until) filter += " AND timestamp<=" + filterString(rfc3339Exact(*query.until));
  return filter;
}

LogEntryPage collectEntries(LoggingClient& client, ListLogEntriesRequest request, const Clock& clock,
                            const LogReadLimits& limits) {
  LogEntryPage collected;
  PageTokenGuard tokens("listing log entries");
  if (!request.pageToken.empty()) tokens.next(request.pageToken);
  auto started = clock.now();
  for (int page = 1;; ++page) {
    auto result = client.listEntries(request);
    for (auto& entry : result.entries) collected.entries.push_back(std::move(entry));
    collected.nextPageToken = result.nextPageToken;
    if (result.nextPageToken.empty() || page >= limits.maxPages || collected.entries.size() >= limits.maxEntries ||
        clock.now() - started >= limits.maxTime) {
      return collected;
    }
    tokens.next(result.nextPageToken);
    request.pageToken = result.nextPageToken;
  }
}

LogEntryPage firstEntries(LoggingClient& client, ListLogEntriesRequest request, int maxPages) {
  PageTokenGuard tokens("listing log entries");
  if (!request.pageToken.empty()) tokens.next(request.pageToken);
  for (int page = 1;; ++page) {
    auto result = client.listEntries(request);
    if (!result.entries.empty() || result.nextPageToken.empty() || page >= maxPages) return result;
    tokens.next(result.nextPageToken);
    request.pageToken = result.nextPageToken;
  }
}

}  // namespace vto::vertex
