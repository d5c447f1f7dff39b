#include "cmd/job_logs.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "base/utf8.h"
#include "cmd/flags.h"
#include "vertex/api_error.h"
#include "vertex/gcs_client.h"
#include "vertex/json_codec.h"

namespace vto::cmd {
namespace {

using nlohmann::json;
using vertex::LogEntry;

// The entries printed so far near the newest one, so that a poll that looks back (lookback) prints
// nothing twice. Keys are (timestamp, insertId); only those within the lookback of the newest are
// kept, and at most kMaxRemembered of them.
class PrintedEntries {
 public:
  static constexpr std::size_t kMaxRemembered = 100000;

  // Records `entry`; false when it was printed before.
  bool add(const LogEntry& entry) {
    if (!entry.timestamp) return true;  // cannot be matched by a time filter again
    auto key = std::make_pair(*entry.timestamp, entry.insertId.empty() ? entry.message : entry.insertId);
    if (!keys_.insert(key).second) return false;
    if (!newest_ || *entry.timestamp > *newest_) newest_ = *entry.timestamp;
    return true;
  }
  // Forgets what is older than the newest minus `lookback` (a poll no longer asks for it).
  void forgetBefore(std::chrono::milliseconds lookback) {
    if (!newest_) return;
    auto floor = *newest_ - lookback;
    while (!keys_.empty() && (keys_.begin()->first < floor || keys_.size() > kMaxRemembered)) keys_.erase(keys_.begin());
  }
  const std::optional<Clock::time_point>& newest() const { return newest_; }

 private:
  std::set<std::pair<Clock::time_point, std::string>> keys_;
  std::optional<Clock::time_point> newest_;
};

class JobLogPrinter {
 public:
  JobLogPrinter(const vertex::ResourceName& job, const JobLogOptions& options, JobLogIo io)
      : options_(options), io_(io) {
    query_.jobId = job.jobId;
    query_.replica = options.replica;
    query_.minSeverity = options.minSeverity;
    query_.since = options.since;
    vertex::vertexJobLogFilter(query_);  // checks the replica before any request
    resourceNames_ = {"projects/" + job.where.project};
  }

  // The first look: everything since --since, or the newest --tail entries.
  void printExisting() {
    if (options_.tail < 0) {
      if (drain(query_.since, options_.maxPages) == Drained::Cut) {
        io_.err << "vto logs: stopped after " << options_.maxPages
                << " pages of entries; narrow it with --since or --tail\n";
      }
      return;
    }
    std::vector<LogEntry> newest;
    auto request = requestFor(query_.since, "timestamp desc");
    vertex::PageTokenGuard tokens("listing log entries");
    for (int pages = 1; newest.size() < static_cast<std::size_t>(options_.tail) && pages <= options_.maxPages; ++pages) {
      request.pageSize = std::min(options_.tail - static_cast<int>(newest.size()), 1000);
      auto page = io_.logging.listEntries(request);
      for (auto& entry : page.entries) {
        if (newest.size() < static_cast<std::size_t>(options_.tail)) newest.push_back(std::move(entry));
      }
      if (page.nextPageToken.empty()) break;
      tokens.next(page.nextPageToken);
      request.pageToken = page.nextPageToken;
    }
    for (auto it = newest.rbegin(); it != newest.rend(); ++it) print(*it);
    if (options_.follow && printed_.newest()) {
      // Entries just older than the tail must not come out with the first poll's lookback: the
      // lookback window is marked as printed (and what is newer than the tail printed).
      seedWindow_ = *printed_.newest();
    }
  }

  // Prints what arrived since the last look; returns how many entries were new.
  int poll() {
    auto since = printed_.newest() ? std::optional(*printed_.newest() - options_.lookback) : query_.since;
    int before = printedCount_;
    drain(since, /*maxPages=*/50);
    printed_.forgetBefore(options_.lookback);
    return printedCount_ - before;
  }

 private:
  enum class Drained { All, Cut };

  vertex::ListLogEntriesRequest requestFor(std::optional<Clock::time_point> since, const char* orderBy) const {
    auto query = query_;
    query.since = since;
    vertex::ListLogEntriesRequest request;
    request.resourceNames = resourceNames_;
    request.filter = vertex::vertexJobLogFilter(query);
    request.orderBy = orderBy;
    request.pageSize = 1000;
    return request;
  }

  // Prints every entry since `since`, oldest first, page by page as they arrive.
  Drained drain(std::optional<Clock::time_point> since, int maxPages) {
    auto request = requestFor(since, "timestamp asc");
    vertex::PageTokenGuard tokens("listing log entries");
    for (int page = 1;; ++page) {
      auto result = io_.logging.listEntries(request);
      for (const auto& entry : result.entries) {
        if (seedWindow_ && entry.timestamp && *entry.timestamp <= *seedWindow_) {
          printed_.add(entry);  // older than the tail's newest: part of what --tail left out
          continue;
        }
        print(entry);
      }
      if (result.nextPageToken.empty()) break;
      if (page >= maxPages) return Drained::Cut;
      tokens.next(result.nextPageToken);
      request.pageToken = result.nextPageToken;
    }
    seedWindow_.reset();
    return Drained::All;
  }

  void print(const LogEntry& entry) {
    if (!printed_.add(entry)) return;
    ++printedCount_;
    io_.out << formatLogEntry(entry);
    io_.out.flush();
  }

  const JobLogOptions& options_;
  JobLogIo io_;
  vertex::VertexLogQuery query_;
  std::vector<std::string> resourceNames_;
  PrintedEntries printed_;
  std::optional<Clock::time_point> seedWindow_;
  int printedCount_ = 0;
};

bool succeeded(vertex::JobState state) {
  return state == vertex::JobState::Succeeded || state == vertex::JobState::PartiallySucceeded;
}

}  // namespace

RunJobs runJobsOf(const json& run) {
  RunJobs jobs;
  if (!run.is_object() || !run.contains("status") || !run["status"].is_object()) return jobs;
  const auto& status = run["status"];
  jobs.phase = stringField(status, "phase");
  if (auto job = status.find("job"); job != status.end()) jobs.currentJob = stringField(*job, "name");
  if (auto count = status.find("attemptCount"); count != status.end() && count->is_number_integer()) {
    jobs.attemptCount = static_cast<int>(std::clamp<std::int64_t>(count->get<std::int64_t>(), 0, 1 << 30));
  }
  if (auto attempts = status.find("attempts"); attempts != status.end() && attempts->is_array()) {
    for (const auto& attempt : *attempts) {
      if (!attempt.is_object() || !attempt.contains("attempt") || !attempt["attempt"].is_number_integer()) continue;
      auto number = attempt["attempt"].get<std::int64_t>();
      if (number < 1 || number > (1 << 30)) continue;
      jobs.attempts.push_back({static_cast<int>(number), stringField(attempt, "jobName"),
                               stringField(attempt, "state")});
    }
  }
  return jobs;
}

std::string jobOfAttempt(const RunJobs& run, int attempt) {
  auto phase = run.phase.empty() ? std::string("Pending") : run.phase;
  int count = run.attemptCount;
  for (const auto& known : run.attempts) count = std::max(count, known.number);
  if (attempt == 0) {
    for (auto it = run.attempts.rbegin(); it != run.attempts.rend(); ++it) {
      if (!it->jobName.empty()) return it->jobName;
    }
    if (!run.currentJob.empty()) return run.currentJob;
    throw UsageError("no job yet: the run is " + phase + " (try again once Vertex AI runs its job)");
  }
  for (const auto& known : run.attempts) {
    if (known.number != attempt) continue;
    if (known.jobName.empty()) throw UsageError("attempt " + std::to_string(attempt) + " has no job yet: the run is " + phase);
    return known.jobName;
  }
  if (attempt > count || count == 0) {
    throw UsageError("attempt " + std::to_string(attempt) + " does not exist: the run has " + std::to_string(count) +
                     (count == 1 ? " attempt" : " attempts"));
  }
  throw UsageError("attempt " + std::to_string(attempt) + " is no longer in the run's status (it keeps the newest " +
                   std::to_string(run.attempts.size()) + " attempts); its job's log is still in Cloud Logging");
}

std::string formatLogEntry(const LogEntry& entry) {
  std::string prefix = entry.timestamp ? rfc3339(*entry.timestamp) : std::string("-");
  prefix += ' ';
  auto replica = entry.replica();
  prefix += escapeControls(replica.empty() ? "-" : replica);
  prefix += ' ';
  std::string severity(vertex::severityName(entry.severity));
  severity.resize(std::max<std::size_t>(severity.size(), 6), ' ');
  prefix += severity + ' ';
  std::string_view message = entry.message;
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.remove_suffix(1);
  std::string out;
  std::size_t start = 0;
  do {
    auto end = message.find('\n', start);
    auto line = message.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out += prefix;
    out += escapeControls(line);
    out += '\n';
    start = end == std::string_view::npos ? message.size() + 1 : end + 1;
  } while (start <= message.size());
  return out;
}

int printJobLogs(const std::string& jobName, const JobLogOptions& options, JobLogIo io) {
  auto job = vertex::parseResourceName(jobName);
  if (!job || !job->kind || !job->operationId.empty()) {
    throw UsageError("the run's status names \"" + jobName.substr(0, 200) +
                     "\", which is not a Vertex job name (projects/P/locations/L/customJobs/ID)");
  }
  // The job's own time window: a read without a lower bound makes Cloud Logging search its whole
  // retention (and answer "still searching" pages meanwhile).
  auto bounded = options;
  std::optional<vertex::Job> ended;
  if (!bounded.since) {
    auto current = io.vertex.getJob(jobName);
    if (auto from = current.createTime ? current.createTime : current.startTime) bounded.since = *from - options.margin;
    if (vertex::isTerminal(current.state)) ended = std::move(current);
  }
  JobLogPrinter printer(*job, bounded, io);
  printer.printExisting();
  if (!options.follow) return 0;

  bool failing = false;
  Clock::time_point failingSince{};  // when the current run of errors began
  int quietPolls = 0;
  auto wait = options.pollInterval;
  for (;;) {
    io.sleeper.sleepFor(wait);
    auto waited = wait;
    wait = options.pollInterval;
    try {
      // The job first: entries written before the end seen here are all read by the polls after it.
      if (!ended) {
        auto current = io.vertex.getJob(jobName);
        if (vertex::isTerminal(current.state)) ended = std::move(current);
      }
      int fresh = printer.poll();
      failing = false;
      if (ended) {
        quietPolls = fresh == 0 ? quietPolls + 1 : 0;
        if (quietPolls >= options.quietPollsAfterEnd) break;
      }
    } catch (const RetryableError& error) {
      if (!error.isRetryable()) throw;
      auto now = io.clock.now();
      if (!failing) {
        failing = true;
        failingSince = now;
      }
      if (now - failingSince >= options.giveUpAfter) throw;
      io.err << "vto logs: " << error.what() << "; trying again\n";
      // Twice the last wait, up to maxBackoff: every reader of the project shares Logging's quota.
      auto backoff = std::min<std::chrono::milliseconds>(std::max(waited * 2, options.pollInterval), options.maxBackoff);
      wait = std::max(backoff, error.retryAfter().value_or(std::chrono::milliseconds(0)));
    }
  }
  io.err << "vto logs: job " << jobName << " ended " << vertex::jobStateName(ended->state);
  // Vertex's message quotes the job's own output: escaped like the log lines above it.
  if (ended->error && !ended->error->message.empty()) {
    const auto& message = ended->error->message;
    io.err << ": " << escapeControls(std::string_view(message).substr(0, utf8PrefixLength(message, 500)));
  }
  io.err << "\n";
  return succeeded(ended->state) ? 0 : 1;
}

}  // namespace vto::cmd
