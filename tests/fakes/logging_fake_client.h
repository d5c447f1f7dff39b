#pragma once
// An in-memory LoggingClient for unit tests of code that reads job logs (`vto logs`): entries are
// added by the test, and entries:list understands the filter vertexJobLogFilter writes
// (resource.type="...", resource.labels.KEY="V", severity>=NAME or <NAME, timestamp>="T" or <="T", joined by AND),
// orders by timestamp then insertId as Cloud Logging does, and pages with pageSize (default 50)
// and offset tokens. Every request is recorded; errors can be queued for the next call.
#include <algorithm>
#include <deque>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "base/rfc3339.h"
#include "vertex/api_error.h"
#include "vertex/logging_client.h"

namespace vto::testing {

class FakeLoggingClient final : public vertex::LoggingClient {
 public:
  vertex::LogEntryPage listEntries(const vertex::ListLogEntriesRequest& request) override {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (!errors_.empty()) {
      auto error = errors_.front();
      errors_.pop_front();
      throw error;
    }
    // "Still searching": an empty page whose token starts the real answer.
    if (searchingPages_ > 0 && request.pageToken.empty()) {
      --searchingPages_;
      return {{}, "0"};
    }
    std::vector<vertex::LogEntry> matching;
    for (const auto& entry : entries_) {
      if (matches(entry, request.filter)) matching.push_back(entry);
    }
    std::stable_sort(matching.begin(), matching.end(), [](const auto& a, const auto& b) {
      return std::tie(a.timestamp, a.insertId) < std::tie(b.timestamp, b.insertId);
    });
    if (request.orderBy == "timestamp desc") std::reverse(matching.begin(), matching.end());
    std::size_t offset = request.pageToken.empty() ? 0 : std::stoul(request.pageToken);
    std::size_t size = request.pageSize > 0 ? static_cast<std::size_t>(request.pageSize) : 50;
    vertex::LogEntryPage page;
    for (std::size_t i = offset; i < matching.size() && i < offset + size; ++i) page.entries.push_back(matching[i]);
    if (offset + size < matching.size()) page.nextPageToken = std::to_string(offset + size);
    return page;
  }

  // --- test controls ---
  // An entry of Vertex job `jobId`, written by `replica` at `timestamp` (RFC 3339).
  void add(const std::string& jobId, const std::string& replica, const std::string& timestamp, vertex::LogSeverity severity,
           const std::string& message) {
    vertex::LogEntry entry;
    entry.insertId = "id-" + std::to_string(++nextId_);
    entry.timestamp = parseRfc3339(timestamp);
    entry.severity = severity;
    entry.message = message;
    entry.resourceType = "ml_job";
    entry.resourceLabels = {{"job_id", jobId}, {"task_name", replica}};
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  // The next `count` first pages come back empty with a token, as Cloud Logging's do while it searches.
  void searchFirst(int count) {
    std::lock_guard lock(mutex_);
    searchingPages_ = count;
  }
  void failNextCall(vertex::ApiError error) {
    std::lock_guard lock(mutex_);
    errors_.push_back(std::move(error));
  }
  std::vector<vertex::ListLogEntriesRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  int searchingPages_ = 0;
  // Terms joined by AND; anything else is a test bug.
  static bool matches(const vertex::LogEntry& entry, const std::string& filter) {
    static const std::regex term(
        R"re(\s*(resource\.type|resource\.labels\.(\w+)|severity|timestamp)\s*(=|>=|<=|<)\s*("([^"]*)"|(\w+))\s*(AND)?)re");
    std::size_t consumed = 0;
    for (auto it = std::sregex_iterator(filter.begin(), filter.end(), term); it != std::sregex_iterator(); ++it) {
      const auto& match = *it;
      if (static_cast<std::size_t>(match.position()) != consumed) break;
      consumed += match.length();
      std::string field = match[1], value = match[5].matched ? match[5].str() : match[6].str();
      if (field == "resource.type") {
        if (entry.resourceType != value) return false;
      } else if (field == "severity") {
        auto severity = vertex::severityFromName(value).value();
        if (match[3] == "<" ? entry.severity >= severity : entry.severity < severity) return false;
      } else if (field == "timestamp") {
        if (!entry.timestamp) return false;
        if (match[3] == "<=" ? *entry.timestamp > parseRfc3339(value) : *entry.timestamp < parseRfc3339(value)) return false;
      } else {
        auto label = entry.resourceLabels.find(match[2].str());
        if (label == entry.resourceLabels.end() || label->second != value) return false;
      }
    }
    if (consumed != filter.size()) throw std::invalid_argument("FakeLoggingClient cannot parse filter: " + filter);
    return true;
  }

  mutable std::mutex mutex_;
  std::vector<vertex::LogEntry> entries_;
  std::vector<vertex::ListLogEntriesRequest> requests_;
  std::deque<vertex::ApiError> errors_;
  long long nextId_ = 0;
};

}  // namespace vto::testing
