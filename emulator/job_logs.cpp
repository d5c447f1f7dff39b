#include "emulator/job_logs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <set>

#include "base/base64.h"
#include "base/rfc3339.h"
#include "emulator/log_filter.h"
#include "vertex/api_error.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using vertex::ApiError;

constexpr int kInfo = 200, kError = 500;
constexpr int kDefaultPageSize = 50, kMaxPageSize = 1000;  // Logging's default; our cap
constexpr std::size_t kMaxReplicasLogged = 16;              // start and end lines of the first 16 replicas
constexpr std::size_t kMaxResourceNames = 100;

ApiError invalid(const std::string& message) { return ApiError(400, "INVALID_ARGUMENT", message); }

// Timestamps are kept to the millisecond they are shown with, so that a client that asks for entries
// after the last one it saw (timestamp>"...") does not get that one again.
Clock::time_point toMillis(Clock::time_point t) {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(t);
}

std::string taskName(int pool, int replica) {
  return "workerpool" + std::to_string(pool) + "-" + std::to_string(replica);
}

// (pool, replica) of the replicas of a job, the first kMaxReplicasLogged of them.
std::vector<std::pair<int, int>> replicasOf(const json& job, vertex::JobKind kind) {
  const auto& spec = job.value(kind == vertex::JobKind::Custom ? "jobSpec" : "trialJobSpec", json::object());
  std::vector<std::pair<int, int>> replicas;
  const auto& pools = spec.value("workerPoolSpecs", json::array());
  for (std::size_t pool = 0; pool < pools.size(); ++pool) {
    if (!pools[pool].contains("machineSpec")) continue;
    long long count = 1;
    try {
      count = std::stoll(pools[pool].value("replicaCount", std::string("1")));
    } catch (const std::exception&) {
    }
    for (long long replica = 0; replica < count && replicas.size() < kMaxReplicasLogged; ++replica) {
      replicas.emplace_back(static_cast<int>(pool), static_cast<int>(replica));
    }
  }
  if (replicas.empty()) replicas.emplace_back(0, 0);
  return replicas;
}

// A loss that falls with the steps, a little different for every job.
std::string lossAt(const std::string& jobId, int step) {
  double offset = static_cast<double>(std::hash<std::string>{}(jobId) % 100) / 10000.0;
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", 0.05 + offset + 2.4 * std::exp(-0.35 * step));
  return text;
}

// What Python prints when the training code raises; the last line names the exception.
std::vector<std::string> traceback(const std::string& lastLine) {
  return {"Traceback (most recent call last):",
          "  File \"/usr/lib/python3.10/runpy.py\", line 196, in _run_module_as_main",
          "    return _run_code(code, main_globals, None,",
          "  File \"/root/trainer/task.py\", line 58, in <module>",
          "    main()",
          "  File \"/root/trainer/task.py\", line 51, in main",
          "    train(args)",
          "  File \"/root/trainer/task.py\", line 33, in train",
          "    raise ValueError(\"Input 'features' contains NaN values\")",
          lastLine};
}

// The token of an empty first page: "still searching", Cloud Logging's answer to a query with no lower
// time bound (it scans the whole retention); following it gives the results.
const std::string kSearchingToken = base64UrlEncode("searching");

std::string pageToken(Clock::time_point time, std::uint64_t sequence) {
  return base64UrlEncode("after:" + std::to_string(time.time_since_epoch().count()) + ":" + std::to_string(sequence));
}

std::pair<Clock::time_point, std::uint64_t> parsePageToken(const std::string& token) {
  try {
    auto text = base64UrlDecode(token);
    static const std::regex form(R"(after:(-?\d+):(\d+))");
    std::smatch match;
    if (std::regex_match(text, match, form)) {
      return {Clock::time_point(Clock::duration(std::stoll(match[1].str()))), std::stoull(match[2].str())};
    }
  } catch (const std::exception&) {
  }
  throw invalid("Invalid page token \"" + token.substr(0, 100) + "\"; pass the nextPageToken of the previous page.");
}

// A request field, by its JSON name or its proto name.
const json* field(const json& request, const char* camel, const char* snake) {
  if (request.contains(camel)) return &request[camel];
  if (request.contains(snake)) return &request[snake];
  return nullptr;
}

}  // namespace

class JobLogs::Fields final : public LogEntryFields {
 public:
  Fields(const std::string& jobId, const JobLog& log, const Entry& entry) : jobId_(jobId), log_(log), entry_(entry) {}
  std::optional<std::string> text(LogField field, const std::string& key) const override {
    switch (field) {
      case LogField::LogName:
        return "projects/" + log_.project + "/logs/" + taskName(entry_.pool, entry_.replica);
      case LogField::ResourceType:
        return "ml_job";
      case LogField::ResourceLabel:
        if (key == "job_id") return jobId_;
        if (key == "project_id") return log_.project;
        if (key == "task_name") return taskName(entry_.pool, entry_.replica);
        return std::nullopt;
      case LogField::Label:
        if (key == "ml.googleapis.com/task_name") return taskName(entry_.pool, entry_.replica);
        if (key == "ml.googleapis.com/trial_id" && entry_.trial > 0) return std::to_string(entry_.trial);
        return std::nullopt;
      case LogField::TextPayload:
        return textOf(jobId_, log_, entry_);
      case LogField::InsertId:
        return insertId(entry_.sequence);
      default:
        return std::nullopt;
    }
  }
  int severity() const override { return entry_.severity; }
  Clock::time_point time(LogField field) const override {
    return field == LogField::ReceiveTimestamp ? entry_.received : entry_.timestamp;
  }
  static std::string insertId(std::uint64_t sequence) {
    char text[24];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(sequence));
    return text;
  }

 private:
  const std::string& jobId_;
  const JobLog& log_;
  const Entry& entry_;
};

JobLogs::JobLogs(const Clock& clock, std::size_t entriesPerJob, bool searchingPages)
    : clock_(clock), entriesPerJob_(entriesPerJob), searchingPages_(searchingPages) {}

std::string JobLogs::textOf(const std::string& jobId, const JobLog& log, const Entry& entry) {
  if (entry.step == 0) return entry.text;
  auto lossKey = entry.trial == 0 ? jobId : jobId + "/" + std::to_string(entry.trial);
  return "step " + std::to_string(entry.step) + "/" + std::to_string(log.steps) + " loss=" + lossAt(lossKey, entry.step);
}

void JobLogs::append(JobLog& log, Clock::time_point at, int pool, int replica, int trial, int severity, std::string text,
                     int step) {
  Entry entry;
  entry.timestamp = toMillis(at);
  entry.received = std::max(entry.timestamp, toMillis(clock_.now()));
  entry.sequence = nextSequence_++;
  entry.pool = static_cast<std::uint16_t>(pool);
  entry.replica = static_cast<std::uint16_t>(replica);
  entry.trial = static_cast<std::uint32_t>(trial);
  entry.severity = static_cast<std::uint16_t>(severity);
  entry.step = static_cast<std::uint32_t>(step);
  entry.text = std::move(text);
  log.entries.push_back(std::move(entry));
  ++size_;
  if (log.entries.size() > entriesPerJob_) {
    log.entries.pop_front();
    --size_;
  }
}

void JobLogs::record(const JobEvent& event) {
  if (entriesPerJob_ == 0) return;
  auto name = event.job.value("name", std::string());
  auto jobId = name.substr(name.rfind('/') + 1);
  std::lock_guard lock(mutex_);
  auto& log = jobs_[jobId];
  if (log.project.empty()) log.project = locationIn(name).project;
  log.steps = event.steps;
  auto at = event.at;
  auto steps = std::to_string(event.steps);
  switch (event.kind) {
    case JobEvent::Kind::Started:
      for (auto [pool, replica] : replicasOf(event.job, event.jobKind)) {
        std::string text = "Training started on " + taskName(pool, replica);
        if (event.jobKind == vertex::JobKind::Custom) {
          text += event.step > 1 ? ": resuming after step " + std::to_string(event.step - 1) + " of " + steps
                                 : ": " + steps + " steps";
        }
        append(log, at, pool, replica, 0, kInfo, text);
      }
      break;
    case JobEvent::Kind::Step:
      // Step lines come from Python's logging, which writes to stderr: Vertex logs all of stderr as
      // ERROR, whatever the line says.
      append(log, at, 0, 0, 0, kError, "", event.step);
      break;
    case JobEvent::Kind::TrialStarted:
      append(log, at, 0, 0, event.trial, kInfo, "Trial " + std::to_string(event.trial) + " started: " + steps + " steps");
      break;
    case JobEvent::Kind::TrialStep:
      append(log, at, 0, 0, event.trial, kError, "", event.step);  // stderr, as above
      break;
    case JobEvent::Kind::TrialEnded:
      append(log, at, 0, 0, event.trial, kInfo, "Trial " + std::to_string(event.trial) + " finished");
      break;
    case JobEvent::Kind::Ended: {
      // A crash is logged even when it turns a job that had succeeded into a failed one.
      if (!event.crash.empty()) {
        for (const auto& line : traceback("RuntimeError: " + event.crash)) append(log, at, 0, 0, 0, kError, line);
        break;
      }
      if (!event.firstEnd) break;
      auto state = event.job.value("state", std::string());
      if (!event.output.empty()) {
        for (const auto& text : event.output) append(log, at, 0, 0, 0, kError, text);
      } else if (event.failure == FailureClass::UserError) {
        for (const auto& line : traceback("ValueError: Input 'features' contains NaN values")) {
          append(log, at, 0, 0, 0, kError, line);
        }
      } else if (event.failure == FailureClass::Preemption) {
        append(log, at, 0, 0, 0, kError, "Received SIGTERM: the VM of workerpool0-0 is being preempted.");  // stderr
      } else if (state == "JOB_STATE_SUCCEEDED") {
        for (auto [pool, replica] : replicasOf(event.job, event.jobKind)) {
          append(log, at, pool, replica, 0, kInfo, "Training finished on " + taskName(pool, replica));
        }
      } else if (state == "JOB_STATE_CANCELLED") {
        for (auto [pool, replica] : replicasOf(event.job, event.jobKind)) {
          append(log, at, pool, replica, 0, kError, "Received SIGTERM: the job was cancelled.");  // stderr
        }
      }
      // A job that never started (no capacity) or that Vertex failed itself has no replica to log.
      break;
    }
  }
  if (log.entries.empty()) jobs_.erase(jobId);
}

std::size_t JobLogs::size() const {
  std::lock_guard lock(mutex_);
  return size_;
}

json JobLogs::render(const std::string& jobId, const JobLog& log, const Entry& entry) const {
  auto task = taskName(entry.pool, entry.replica);
  json labels = {{"ml.googleapis.com/task_name", task}};
  if (entry.trial > 0) labels["ml.googleapis.com/trial_id"] = std::to_string(entry.trial);
  return {{"insertId", Fields::insertId(entry.sequence)},
          {"logName", "projects/" + log.project + "/logs/" + task},
          {"resource", {{"type", "ml_job"}, {"labels", {{"job_id", jobId}, {"project_id", log.project}, {"task_name", task}}}}},
          {"timestamp", rfc3339Millis(entry.timestamp)},
          {"receiveTimestamp", rfc3339Millis(entry.received)},
          {"severity", logSeverityName(entry.severity)},
          {"labels", labels},
          {"textPayload", textOf(jobId, log, entry)}};
}

json JobLogs::list(const json& request) const {
  if (!request.is_object()) throw invalid("Invalid JSON payload received. Expected a ListLogEntriesRequest object.");
  static const std::set<std::string> kFields = {"resourceNames", "resource_names", "projectIds", "project_ids",
                                                "filter",        "orderBy",        "order_by",   "pageSize",
                                                "page_size",     "pageToken",      "page_token"};
  for (const auto& [key, value] : request.items()) {
    if (!kFields.count(key)) throw invalid("Invalid JSON payload received. Unknown name \"" + key + "\": Cannot find field.");
  }
  std::set<std::string> projects;
  auto names = [&](const json* list, bool asProjectIds) {
    if (list == nullptr) return;
    if (!list->is_array()) throw invalid("resourceNames must be a list such as [\"projects/my-project\"].");
    for (const auto& item : *list) {
      if (!item.is_string()) throw invalid("resourceNames must be a list of strings.");
      auto text = item.get<std::string>();
      static const std::regex project("projects/([^/]+)");
      std::smatch match;
      if (asProjectIds && !text.empty() && text.find('/') == std::string::npos) {
        projects.insert(text);
      } else if (!asProjectIds && std::regex_match(text, match, project)) {
        projects.insert(match[1].str());
      } else {
        throw invalid("Resource name \"" + text.substr(0, 200) +
                      "\" is not supported by vto-emulator: use projects/PROJECT_ID (organizations, folders, billing "
                      "accounts and log views are not emulated).");
      }
    }
  };
  names(field(request, "resourceNames", "resource_names"), false);
  names(field(request, "projectIds", "project_ids"), true);
  if (projects.empty()) throw invalid("resourceNames is required, e.g. {\"resourceNames\": [\"projects/my-project\"]}.");
  if (projects.size() > kMaxResourceNames) throw invalid("At most 100 resourceNames may be listed.");

  auto stringOf = [&](const char* camel, const char* snake) {
    const json* value = field(request, camel, snake);
    if (value == nullptr || value->is_null()) return std::string();
    if (!value->is_string()) throw invalid(std::string(camel) + " must be a string.");
    return value->get<std::string>();
  };
  LogFilter filter;
  try {
    filter = LogFilter::parse(stringOf("filter", "filter"));
  } catch (const std::invalid_argument& error) {
    throw invalid(error.what());
  }
  auto orderBy = stringOf("orderBy", "order_by");
  std::transform(orderBy.begin(), orderBy.end(), orderBy.begin(), [](unsigned char c) { return std::tolower(c); });
  orderBy = std::regex_replace(orderBy, std::regex(R"(^\s+|\s+$)"), "");
  orderBy = std::regex_replace(orderBy, std::regex(R"(\s+)"), " ");
  if (!orderBy.empty() && orderBy != "timestamp asc" && orderBy != "timestamp desc" && orderBy != "timestamp") {
    throw invalid("orderBy \"" + orderBy + "\" is not supported; use \"timestamp asc\" (the default) or \"timestamp desc\".");
  }
  bool descending = orderBy == "timestamp desc";
  int pageSize = kDefaultPageSize;
  if (const json* size = field(request, "pageSize", "page_size"); size != nullptr && !size->is_null()) {
    if (!size->is_number_integer()) throw invalid("pageSize must be a whole number.");
    auto requested = size->get<long long>();
    if (requested < 0) throw invalid("pageSize must not be negative.");
    if (requested > 0) pageSize = static_cast<int>(std::min<long long>(requested, kMaxPageSize));
  }
  auto token = stringOf("pageToken", "page_token");
  if (searchingPages_ && token.empty() && !filter.hasLowerBound(LogField::Timestamp)) {
    return {{"entries", json::array()}, {"nextPageToken", kSearchingToken}};
  }
  std::optional<std::pair<Clock::time_point, std::uint64_t>> after;
  if (!token.empty() && token != kSearchingToken) after = parsePageToken(token);

  struct Match {
    const std::string* jobId;
    const JobLog* log;
    const Entry* entry;
  };
  auto key = [](const Match& m) { return std::make_pair(m.entry->timestamp, m.entry->sequence); };
  std::vector<Match> matches;
  std::lock_guard lock(mutex_);
  auto collect = [&](const std::string& jobId, const JobLog& log) {
    if (!projects.count(log.project)) return;
    for (const auto& entry : log.entries) {
      Match match{&jobId, &log, &entry};
      if (after && (descending ? key(match) >= *after : key(match) <= *after)) continue;
      if (filter.matches(Fields(jobId, log, entry))) matches.push_back(match);
    }
  };
  if (auto jobId = filter.required(LogField::ResourceLabel, "job_id")) {
    if (auto found = jobs_.find(*jobId); found != jobs_.end()) collect(found->first, found->second);
  } else {
    for (const auto& [jobId, log] : jobs_) collect(jobId, log);
  }
  auto order = [&](const Match& a, const Match& b) { return descending ? key(a) > key(b) : key(a) < key(b); };
  std::size_t count = std::min<std::size_t>(matches.size(), pageSize);
  std::partial_sort(matches.begin(), matches.begin() + static_cast<std::ptrdiff_t>(count), matches.end(), order);
  json body = {{"entries", json::array()}};
  for (std::size_t i = 0; i < count; ++i) body["entries"].push_back(render(*matches[i].jobId, *matches[i].log, *matches[i].entry));
  if (matches.size() > count) {
    const auto& last = *matches[count - 1].entry;
    body["nextPageToken"] = pageToken(last.timestamp, last.sequence);
  }
  return body;
}

}  // namespace vto::emulator
