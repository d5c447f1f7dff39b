#include "reconcilers/jobs/log_tail.h"

#include <algorithm>
#include <regex>

#include "base/retryable_error.h"
#include "base/utf8.h"
#include "vertex/api_error.h"
#include "vertex/rate_limiter.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

namespace {

bool failedForItsOwnReasons(crd::FailureClass failure) {
  return failure != crd::FailureClass::Preemption && failure != crd::FailureClass::Stockout;
}

struct TailLine {
  Clock::time_point time;
  bool error = false;
  std::string text;
};

void addLines(std::vector<TailLine>& lines, const vertex::LogEntry& entry, bool error) {
  auto time = entry.timestamp.value_or(Clock::time_point{});
  std::string_view message = entry.message;
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.remove_suffix(1);
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    std::string line(message.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (auto& c : line) {
      auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) c = '?';  // nothing that could drive a terminal
    }
    lines.push_back({time, error, std::move(line)});
    start = end + 1;
  }
}

size_t joinedSize(const std::vector<TailLine>& lines) {
  size_t size = lines.empty() ? 0 : lines.size() - 1;
  for (const auto& line : lines) size += line.text.size();
  return size;
}

const char* const kEllipsis = "\xE2\x80\xA6";  // …

}  // namespace

bool wantsLogTail(const crd::Attempt& attempt, Clock::time_point now, Clock::duration maxAge) {
  return attempt.failureClass && failedForItsOwnReasons(*attempt.failureClass) && !attempt.jobName.empty() &&
         attempt.logTail.empty() && attempt.endTime && now - *attempt.endTime <= maxAge;
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
  for (const auto& entry : errors) addLines(lines, entry, true);
  for (const auto& entry : others) addLines(lines, entry, false);
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.time < b.time; });
  auto overLimits = [&] {
    return lines.size() > static_cast<size_t>(std::max(limits.lines, 1)) || joinedSize(lines) > limits.maxBytes;
  };
  while (lines.size() > 1 && overLimits()) {
    auto below = std::find_if(lines.begin(), lines.end(), [](const auto& line) { return !line.error; });
    lines.erase(below != lines.end() ? below : lines.begin());
  }
  if (lines.empty()) return "";
  auto& last = lines.back().text;
  if (last.size() > limits.maxBytes) {
    std::string ellipsis(kEllipsis);
    last = ellipsis + last.substr(utf8SuffixStart(last, limits.maxBytes - ellipsis.size()));
  }
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "" : "\n") + line.text;
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

LogTailPoller::LogTailPoller(vertex::LoggingClient* logging, const Clock& clock, Wake wake, LogTailOptions options)
    : logging_(logging), clock_(clock), wake_(std::move(wake)), options_(options) {}

void LogTailPoller::update(const std::string& uid, const crd::TrainingRun* run) {
  if (logging_ == nullptr) return;
  std::lock_guard lock(mutex_);
  if (run == nullptr) {
    byUid_.erase(uid);
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
    auto end = *attempt.endTime;  // wantsLogTail: set
    wanted.emplace(attempt.attempt, Wanted{attempt.jobName, failingReplicaOf(attempt.message), std::nullopt, 0,
                                           attempt.startTime.value_or(end - options_.lookBehind), end + options_.margin});
  }
  if (wanted.empty()) {
    byUid_.erase(uid);
  } else {
    byUid_[uid] = std::move(wanted);
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
