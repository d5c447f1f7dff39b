#pragma once
// An in-memory VertexClient for unit tests of code that drives Vertex (the reconcilers): jobs are
// created QUEUED and move only when the test says so (setState); list understands the filters the
// operator sends (labels.KEY="V", state="..." or state!="...", update_time>="T", joined by AND);
// errors can be queued per call or per location. Every change is stamped with an updateTime from
// the fake's own clock (one second per change), or with the time a test gives, e.g. one behind what
// a poller has seen already (as an eventually consistent list does).
#include <deque>
#include <map>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <vector>

#include "base/rfc3339.h"
#include "vertex/api_error.h"
#include "vertex/vertex_client.h"

namespace vto::testing {

class FakeVertexClient final : public vertex::VertexClient {
 public:
  vertex::Job createJob(const vto::Location& where, vertex::JobKind kind, const nlohmann::json& resource) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    if (createError_) {
      auto error = std::move(*createError_);
      createError_.reset();
      throw error;
    }
    auto name = where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/" + std::to_string(++nextId_);
    nlohmann::json stored = resource;
    stored["name"] = name;
    stored["state"] = "JOB_STATE_QUEUED";
    stored["createTime"] = "2026-01-01T00:00:00Z";
    stored["updateTime"] = rfc3339Millis(nextStamp());
    created_.push_back(resource);
    jobs_[name] = stored;
    order_.push_back(name);
    return vertex::decodeJob(kind, stored);
  }

  vertex::Job getJob(const std::string& name) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    ++gets_;
    return vertex::decodeJob(vertex::jobKindOf(name), find(name));
  }

  vertex::JobPage listJobs(const vto::Location& where, vertex::JobKind kind,
                           const vertex::ListOptions& options) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    ++lists_;
    if (auto failing = failingLocations_.find(where.parent()); failing != failingLocations_.end()) throw failing->second;
    auto prefix = where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/";
    std::vector<vertex::Job> matching;
    for (const auto& name : order_) {
      if (name.rfind(prefix, 0) == 0 && matches(jobs_.at(name), options.filter)) {
        matching.push_back(vertex::decodeJob(kind, jobs_.at(name)));
      }
    }
    std::size_t offset = options.pageToken.empty() ? 0 : std::stoul(options.pageToken);
    std::size_t size = options.pageSize > 0 ? static_cast<std::size_t>(options.pageSize) : matching.size();
    vertex::JobPage page;
    for (std::size_t i = offset; i < matching.size() && i < offset + size; ++i) page.jobs.push_back(matching[i]);
    if (offset + size < matching.size()) page.nextPageToken = std::to_string(offset + size);
    return page;
  }

  void cancelJob(const std::string& name) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    auto& job = find(name);
    if (vertex::isTerminal(vertex::jobStateFromJson(job["state"]))) {
      throw vertex::ApiError(400, "FAILED_PRECONDITION", "job already ended");
    }
    job["state"] = "JOB_STATE_CANCELLING";
    job["updateTime"] = rfc3339Millis(nextStamp());
    cancelled_.push_back(name);
  }

  vertex::Operation deleteJob(const std::string& name) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    find(name);
    jobs_.erase(name);
    order_.erase(std::remove(order_.begin(), order_.end(), name), order_.end());
    vertex::Operation operation;
    operation.name = vertex::locationOf(name).parent() + "/operations/" + std::to_string(++nextId_);
    operation.done = true;
    deleted_.push_back(name);
    return operation;
  }

  vertex::Operation getOperation(const std::string& name) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    vertex::Operation operation;
    operation.name = name;
    operation.done = true;
    return operation;
  }

  // --- test controls ---
  // `stampedAt`: the updateTime Vertex gives this change (default: the fake's next tick).
  void setState(const std::string& name, vertex::JobState state, std::optional<vertex::RpcStatus> error = std::nullopt,
                std::optional<Clock::time_point> stampedAt = std::nullopt) {
    std::lock_guard lock(mutex_);
    auto& job = find(name);
    job["state"] = vertex::jobStateName(state);
    if (error) job["error"] = {{"code", error->code}, {"message", error->message}};
    job["updateTime"] = rfc3339Millis(stampedAt ? *stampedAt : nextStamp());
  }
  // The updateTime of the newest change so far.
  Clock::time_point lastStamp() const {
    std::lock_guard lock(mutex_);
    return stamp_;
  }
  // Merges `patch` into the stored job (times, trials, ...), as Vertex's own progress would.
  void patchJob(const std::string& name, const nlohmann::json& patch) {
    std::lock_guard lock(mutex_);
    find(name).merge_patch(patch);
  }
  // Removes a job as someone outside vto would (no operation, no record).
  void removeJob(const std::string& name) {
    std::lock_guard lock(mutex_);
    jobs_.erase(name);
    order_.erase(std::remove(order_.begin(), order_.end(), name), order_.end());
  }
  // The next createJob (only) throws this error.
  void failNextCreate(vertex::ApiError error) {
    std::lock_guard lock(mutex_);
    createError_ = std::move(error);
  }
  // While set, every list in `parent` (projects/P/locations/L) throws `error`; nullopt clears it.
  void failLocation(const std::string& parent, std::optional<vertex::ApiError> error) {
    std::lock_guard lock(mutex_);
    if (error) {
      failingLocations_.insert_or_assign(parent, *error);
    } else {
      failingLocations_.erase(parent);
    }
  }
  int getCalls() const {
    std::lock_guard lock(mutex_);
    return gets_;
  }
  // The next call (of any method) throws this error instead of answering.
  void failNextCall(vertex::ApiError error) {
    std::lock_guard lock(mutex_);
    errors_.push_back(std::move(error));
  }
  std::vector<nlohmann::json> createdBodies() const {
    std::lock_guard lock(mutex_);
    return created_;
  }
  std::vector<std::string> cancelledNames() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }
  std::vector<std::string> deletedNames() const {
    std::lock_guard lock(mutex_);
    return deleted_;
  }
  int listCalls() const {
    std::lock_guard lock(mutex_);
    return lists_;
  }

 private:
  nlohmann::json& find(const std::string& name) {
    auto found = jobs_.find(name);
    if (found == jobs_.end()) throw vertex::ApiError(404, "NOT_FOUND", "The resource \"" + name + "\" was not found.");
    return found->second;
  }
  void throwQueuedError() {
    if (errors_.empty()) return;
    auto error = errors_.front();
    errors_.pop_front();
    throw error;
  }
  Clock::time_point nextStamp() {
    stamp_ += std::chrono::seconds(1);
    return stamp_;
  }
  // Terms `labels.KEY="V"`, `labels.KEY:*`, `state="S"`, `state!="S"`, `update_time>="T"`,
  // `create_time>="T"`, `create_time<"T"` joined by AND; anything else is a test bug.
  static bool matches(const nlohmann::json& job, const std::string& filter) {
    static const std::regex term(
        R"re(\s*(labels\.([\w.-]+)|state|update_time|create_time)\s*(=|!=|>=|<|:)\s*("([^"]*)"|\*)\s*(AND)?)re");
    auto begin = std::sregex_iterator(filter.begin(), filter.end(), term);
    std::size_t consumed = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const auto& match = *it;
      if (static_cast<std::size_t>(match.position()) != consumed) break;
      consumed += match.length();
      auto op = match[3].str();
      auto expected = match[5].str();
      if (match[1] == "state") {
        if ((job.value("state", std::string()) == expected) != (op == "=")) return false;
      } else if (match[1] == "update_time" || match[1] == "create_time") {
        auto field = match[1] == "update_time" ? "updateTime" : "createTime";
        bool before = parseRfc3339(job.value(field, std::string())) < parseRfc3339(expected);
        if (before != (op == "<")) return false;
      } else {
        auto labels = job.value("labels", nlohmann::json::object());
        if (!labels.contains(match[2].str())) return false;
        if (op != ":" && labels[match[2].str()] != expected) return false;
      }
    }
    if (consumed != filter.size()) throw std::invalid_argument("FakeVertexClient cannot parse filter: " + filter);
    return true;
  }

  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json> jobs_;
  std::vector<std::string> order_;
  std::deque<vertex::ApiError> errors_;
  std::vector<nlohmann::json> created_;
  std::vector<std::string> cancelled_, deleted_;
  std::map<std::string, vertex::ApiError> failingLocations_;
  std::optional<vertex::ApiError> createError_;
  int lists_ = 0, gets_ = 0;
  long long nextId_ = 1000;
  Clock::time_point stamp_ = parseRfc3339("2026-01-01T00:00:00Z");
};

}  // namespace vto::testing
