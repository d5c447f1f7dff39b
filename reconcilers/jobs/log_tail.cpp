#include "reconcilers/jobs/log_tail.h"

#include <algorithm>
#include <regex>

#include "base/retryable_error.h"
#include "base/utf8.h"
#include "crd/labels.h"
#include "crd/render.h"
#include "reconcilers/jobs/poll_targets.h"
#include "vertex/api_error.h"
#include "vertex/rate_limiter.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

namespace {

bool failedForItsOwnReasons(crd::FailureClass failure) {
  return failure != crd::FailureClass::Preemption && failure != crd::FailureClass::Stockout;
}

const char* const kEllipsis = "\xE2\x80\xA6";  // …

struct TailLine {
  Clock::time_point time;
  bool error = false;
  std::string text;
};

// The newest lines of one entry, at most `limits.lines` of them and `limits.maxBytes` bytes of its
// text (the rest could never stay: an entry's lines share its timestamp and the oldest go first), read
// from the end, so that an entry of a million lines costs what its kept lines cost. A line cut by
// the byte bound starts with "…".
void addLines(std::vector<TailLine>& lines, const vertex::LogEntry& entry, bool error, const LogTailLimits& limits) {
  auto time = entry.timestamp.value_or(Clock::time_point{});
  std::string_view message = entry.message;
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.remove_suffix(1);
  bool cut = false;
  if (message.size() > limits.maxBytes) {
    message.remove_prefix(utf8SuffixStart(message, limits.maxBytes));
    cut = true;
  }
  std::vector<std::string_view> newestFirst;
  size_t maxLines = static_cast<size_t>(std::max(limits.lines, 1));
  size_t end = message.size();
  bool first = false;  // the oldest line read is the first of what is left of the message
  while (newestFirst.size() < maxLines) {
    size_t start = end == 0 ? std::string_view::npos : message.rfind('\n', end - 1);
    size_t from = start == std::string_view::npos ? 0 : start + 1;
    newestFirst.push_back(message.substr(from, end - from));
    if (start == std::string_view::npos) {
      first = true;
      break;
    }
    end = start;
  }
  for (auto line = newestFirst.rbegin(); line != newestFirst.rend(); ++line) {
    std::string_view raw = *line;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    // Nothing that could drive a terminal or reorder what a reader sees.
    std::string text = escapeControls(raw);
    if (cut && first && line == newestFirst.rbegin()) text = kEllipsis + text;
    lines.push_back({time, error, std::move(text)});
  }
}

size_t joinedSize(const std::vector<TailLine>& lines) {
  size_t size = lines.empty() ? 0 : lines.size() - 1;
  for (const auto& line : lines) size += line.text.size();
  return size;
}

}  // namespace

bool wantsLogTail(const crd::Attempt& attempt, Clock::time_point now, Clock::duration maxAge) {
  return attempt.failureClass && failedForItsOwnReasons(*attempt.failureClass) && !attempt.jobName.empty() &&
         (attempt.logTail.empty() || attempt.logTail == kLogTailFollows) && attempt.endTime &&
         now - *attempt.endTime <= maxAge;
}

std::string failingReplicaOf(std::string_view vertexMessage) {
  static const std::regex replica(R"(\breplica (workerpool[0-9]{1,2}-[0-9]{1,6})\b)");
  std::match_results<std::string_view::const_iterator> match;
  auto head = vertexMessage.substr(0, 4096);
  if (!std::regex_search(head.begin(), head.end(), match, replica)) return "";
  std::string name = match[1].str();
  return vertex::isReplicaName(name) ? name : "";
}

std::string formatLogTail(const std::vector<vertex::LogEntry>& errors, const std::vector<vertex::LogEntry>& others,
                          const LogTailLimits& limits) {
  std::vector<TailLine> lines;
  for (const auto& entry : errors) addLines(lines, entry, true, limits);
  for (const auto& entry : others) addLines(lines, entry, false, limits);
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.time < b.time; });
  // While over the limits, the oldest line below ERROR goes first, then the oldest ERROR line: one
  // pass over that order, the size kept as a running sum (never one erase at a time from the front).
  std::vector<size_t> dropOrder;
  dropOrder.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].error) dropOrder.push_back(i);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].error) dropOrder.push_back(i);
  }
  size_t kept = lines.size();
  size_t bytes = joinedSize(lines);
  auto maxLines = static_cast<size_t>(std::max(limits.lines, 1));
  std::vector<bool> dropped(lines.size(), false);
  for (size_t i : dropOrder) {
    if (kept <= 1 || (kept <= maxLines && bytes <= limits.maxBytes)) break;
    dropped[i] = true;
    bytes -= lines[i].text.size() + 1;
    --kept;
  }
  std::vector<std::string> texts;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!dropped[i]) texts.push_back(std::move(lines[i].text));
  }
  if (texts.empty()) return "";
  auto& last = texts.back();
  if (last.size() > limits.maxBytes) {
    std::string ellipsis(kEllipsis);
    last = ellipsis + last.substr(utf8SuffixStart(last, limits.maxBytes - ellipsis.size()));
  }
  std::string text;
  for (size_t i = 0; i < texts.size(); ++i) text += (i == 0 ? "" : "\n") + texts[i];
  return text;
}

std::string logUnreadableText(const std::exception& error) {
  std::string why = error.what();
  why.resize(utf8PrefixLength(why, 512));
  const auto* remote = dynamic_cast<const RemoteApiError*>(&error);
  std::string advice = remote != nullptr && remote->isForbidden()
                           ? ", grant the operator's service account roles/logging.viewer on the job's project"
                           : "";
  return "(could not read the log: " + why + advice + ")";
}

std::string shortTail(const std::string& text, size_t maxBytes) {
  const std::string separator = " | ";
  std::vector<std::string_view> lines;
  std::string_view rest = text;
  while (true) {
    auto end = rest.find('\n');
    lines.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  std::string out;
  for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
    size_t needed = line->size() + (out.empty() ? 0 : separator.size());
    if (out.size() + needed <= maxBytes) {
      out = std::string(*line) + (out.empty() ? "" : separator) + out;
      continue;
    }
    // The newest line alone is too long: its end. Otherwise older lines are left out, said so.
    std::string ellipsis(kEllipsis);
    if (out.empty()) return ellipsis + std::string(line->substr(utf8SuffixStart(*line, maxBytes - ellipsis.size())));
    if (out.size() + ellipsis.size() + separator.size() <= maxBytes) out = ellipsis + separator + out;
    break;
  }
  return out;
}

std::string logTailRefusal(const crd::TrainingRun& run, const std::string& jobName, const JobCache* jobs) {
  if (jobs == nullptr) return "";
  // The cache holds only jobs this operator made (their ownership tag verified): a job in the run's
  // own project is not enough, another team's may run there too.
  auto seen = jobs->get(jobName);
  if (!seen) return "(not read: vto has not seen this job as one it made for this run)";
  if (isTheRunsJob(seen->labels, run.metadata.namespace_, run.metadata.name, run.metadata.uid)) return "";
  return "(not read: status names a job whose vto-run-uid label is another run's)";
}

LogTailPoller::LogTailPoller(vertex::LoggingClient* logging, const Clock& clock, Wake wake, LogTailOptions options)
    : logging_(logging), clock_(clock), wake_(std::move(wake)), options_(options) {}

void LogTailPoller::update(const std::string& uid, const crd::TrainingRun* run) {
  if (logging_ == nullptr) return;
  std::lock_guard lock(mutex_);
  if (run == nullptr) {
    byUid_.erase(uid);
    namespaceByUid_.erase(uid);
    return;
  }
  auto now = clock_.now();
  std::map<int32_t, Wanted> wanted;
  auto known = byUid_.find(uid);
  for (const auto& attempt : run->status.history.attempts) {
    if (!wantsLogTail(attempt, now)) continue;
    if (known != byUid_.end()) {
      auto same = known->second.find(attempt.attempt);
      if (same != known->second.end() && same->second.jobName == attempt.jobName) {
        wanted.emplace(attempt.attempt, std::move(same->second));
        continue;
      }
    }
    // Nothing from status steers a read: a job that is not the run's is told, never read.
    auto refusal = logTailRefusal(*run, attempt.jobName, options_.jobs);
    auto end = *attempt.endTime;  // wantsLogTail: set
    wanted.emplace(attempt.attempt, Wanted{attempt.jobName, failingReplicaOf(attempt.message),
                                           refusal.empty() ? std::nullopt : std::optional(refusal), 0,
                                           attempt.startTime.value_or(end - options_.lookBehind), end + options_.margin});
  }
  if (wanted.empty()) {
    byUid_.erase(uid);
    namespaceByUid_.erase(uid);
  } else {
    byUid_[uid] = std::move(wanted);
    namespaceByUid_[uid] = run->metadata.namespace_;
  }
}

std::vector<std::string> LogTailPoller::targets() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> keys;
  for (const auto& [uid, attempts] : byUid_) {
    for (const auto& [attempt, wanted] : attempts) keys.push_back(uid + "/" + std::to_string(attempt));
  }
  return keys;
}

std::string LogTailPoller::read(const Wanted& wanted) {
  auto job = vertex::parseResourceName(wanted.jobName);
  if (!job || !job->kind) return "(could not read the log: " + wanted.jobName + " is not a Vertex job name)";
  vertex::ListLogEntriesRequest request;
  request.resourceNames = {"projects/" + job->where.project};
  request.orderBy = "timestamp desc";
  request.pageSize = options_.limits.lines;
  vertex::VertexLogQuery query;
  query.jobId = job->jobId;
  query.replica = wanted.replica;
  query.minSeverity = vertex::LogSeverity::Error;
  query.since = wanted.since;
  query.until = wanted.until;
  request.filter = vertex::vertexJobLogFilter(query);
  auto errors = vertex::firstEntries(*logging_, request, options_.maxPages).entries;
  std::vector<vertex::LogEntry> others;
  if (errors.size() < static_cast<size_t>(options_.limits.lines)) {
    query.minSeverity.reset();
    request.filter = vertex::vertexJobLogFilter(query) + " AND severity<ERROR";
    request.pageSize = options_.limits.lines - static_cast<int>(errors.size());
    others = vertex::firstEntries(*logging_, request, options_.maxPages).entries;
  }
  // Asked newest first (the newest page is the one wanted): oldest first again, so that lines with one
  // timestamp (a traceback written at once) keep the order Cloud Logging gave them.
  std::reverse(errors.begin(), errors.end());
  std::reverse(others.begin(), others.end());
  auto tail = formatLogTail(errors, others, options_.limits);
  if (!tail.empty()) return tail;
  return "(the log of " + (wanted.replica.empty() ? "job " + job->jobId : wanted.replica) + " has no entries)";
}

Clock::duration LogTailPoller::poll(const std::string& target) {
  auto slash = target.rfind('/');
  std::string uid = target.substr(0, slash);
  int32_t attempt = std::stoi(target.substr(slash + 1));
  Wanted wanted;
  {
    std::lock_guard lock(mutex_);
    auto run = byUid_.find(uid);
    if (run == byUid_.end() || !run->second.contains(attempt)) return options_.rewake;
    wanted = run->second.at(attempt);
  }
  if (!wanted.tail) {
    std::string tail;
    try {
      ++reads_;
      tail = read(wanted);
    } catch (const std::exception& e) {
      // A refusal (403: no roles/logging.viewer), or a value the filter refuses (status is writable by
      // others), is told at once; an outage is retried with backoff a few times first.
      // vto's own pacer (Cloud Logging's read quota) only defers a read: it is not a failure.
      if (dynamic_cast<const vertex::QuotaPacingError*>(&e) != nullptr) throw;
      // Cloud Logging's 429 (its per-project read quota, shared with every reader) is the same: later.
      if (const auto* api = dynamic_cast<const vertex::ApiError*>(&e); api != nullptr && api->httpStatus() == 429) throw;
      const auto* retryable = dynamic_cast<const RetryableError*>(&e);
      if (retryable != nullptr && retryable->isRetryable()) {
        std::lock_guard lock(mutex_);
        auto run = byUid_.find(uid);
        int failures = run != byUid_.end() && run->second.contains(attempt) ? ++run->second.at(attempt).failures : 0;
        if (failures > 0 && failures < options_.maxTries) throw;
      }
      tail = logUnreadableText(e);
    }
    std::lock_guard lock(mutex_);
    auto run = byUid_.find(uid);
    if (run == byUid_.end() || !run->second.contains(attempt)) return options_.rewake;
    run->second.at(attempt).tail = std::move(tail);
  }
  wake_(uid);
  return options_.rewake;
}

std::string LogTailPoller::namespaceOf(const std::string& target) const {
  std::lock_guard lock(mutex_);
  auto known = namespaceByUid_.find(target.substr(0, target.rfind('/')));
  return known == namespaceByUid_.end() ? "" : known->second;
}

std::map<int32_t, std::string> LogTailPoller::tailsOf(const std::string& uid) const {
  std::lock_guard lock(mutex_);
  std::map<int32_t, std::string> tails;
  auto run = byUid_.find(uid);
  if (run == byUid_.end()) return tails;
  for (const auto& [attempt, wanted] : run->second) {
    if (wanted.tail) tails.emplace(attempt, *wanted.tail);
  }
  return tails;
}

int LogTailPoller::reads() const {
  return reads_.load();
}

}  // namespace vto::reconcilers
