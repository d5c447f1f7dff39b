#pragma once
// An in-memory ModelRegistry for unit tests of code that registers models (the reconcilers). An
// upload is a long-running operation that stays not done for `pollsUntilDone` getUploadOperation
// calls (default 1: the first look finds it done), or until completeUploads(); it then creates the
// version as Vertex does: version IDs 1, 2, ... per model, the alias "default" on the first version,
// every alias on one version only. listVersions understands labels.K="V" terms joined by AND (what
// modelLabelFilter writes). Errors can be queued for the next call, or for the next upload's result.
#include <deque>
#include <map>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <vector>

#include "vertex/api_error.h"
#include "vertex/model_registry.h"

namespace vto::testing {

class FakeModelRegistry final : public vertex::ModelRegistry {
 public:
  vertex::UploadOperation uploadModel(const vto::Location& where, const vertex::UploadModelRequest& request) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    uploadRequests_.push_back(request);
    std::string model = request.modelId.empty() ? request.parentModel : vertex::modelName(where, request.modelId);
    bool exists = models_.count(model) > 0;
    if (!request.modelId.empty() && exists) throw vertex::ApiError(409, "ALREADY_EXISTS", "Model " + model + " already exists.");
    if (!request.parentModel.empty() && !exists) throw notFound(model);
    Pending pending{model, request.model, pollsUntilDone, std::move(uploadFailure_)};
    uploadFailure_.reset();
    auto name = model + "/operations/" + std::to_string(++nextOperation_);
    pending_[name] = std::move(pending);
    if (!request.modelId.empty()) models_[model];  // the model exists from the first upload on
    return upload(name, /*polled=*/false);
  }

  vertex::UploadOperation getUploadOperation(const std::string& name) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    if (!pending_.count(name) && !finished_.count(name)) throw notFound(name);
    return upload(name, /*polled=*/true);
  }

  vertex::ModelVersion getModel(const std::string& name) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    ++gets_;
    auto& version = find(name);
    return vertex::decodeModelVersion(version);
  }

  vertex::ModelVersionPage listVersions(const std::string& model, const vertex::ListVersionsOptions& options) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    ++lists_;
    auto found = models_.find(model);
    if (found == models_.end()) throw notFound(model);
    std::vector<vertex::ModelVersion> matching;
    for (const auto& version : found->second) {
      if (matches(version, options.filter)) matching.push_back(vertex::decodeModelVersion(version));
    }
    std::size_t offset = options.pageToken.empty() ? 0 : std::stoul(options.pageToken);
    std::size_t size = options.pageSize > 0 ? static_cast<std::size_t>(options.pageSize) : matching.size();
    vertex::ModelVersionPage page;
    for (std::size_t i = offset; i < matching.size() && i < offset + size; ++i) page.versions.push_back(matching[i]);
    if (offset + size < matching.size()) page.nextPageToken = std::to_string(offset + size);
    return page;
  }

  vertex::ModelVersion mergeVersionAliases(const std::string& versionName, const std::vector<std::string>& aliases) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    auto& version = find(versionName);
    for (const auto& alias : aliases) {
      if (!alias.empty() && alias[0] == '-') {
        removeAlias(version, alias.substr(1));
      } else {
        moveAlias(modelOf(versionName), version, alias);
      }
    }
    merges_.push_back({versionName, aliases});
    return vertex::decodeModelVersion(version);
  }

  vertex::ModelEvaluation importEvaluation(const std::string& model, const vertex::EvaluationImport& evaluation) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    auto& version = find(model);
    nlohmann::json stored = {{"name", modelOf(model) + "/evaluations/" + std::to_string(++nextEvaluation_)},
                             {"displayName", evaluation.displayName},
                             {"metricsSchemaUri", evaluation.metricsSchemaUri},
                             {"metrics", evaluation.metrics},
                             {"createTime", "2026-01-01T00:00:00Z"}};
    evaluations_[version.value("versionId", "") + "@" + modelOf(model)].push_back(stored);
    return vertex::decodeModelEvaluation(stored);
  }

  vertex::EvaluationPage listEvaluations(const std::string& model, int, const std::string&) override {
    std::lock_guard lock(mutex_);
    throwQueuedError();
    auto& version = find(model);
    vertex::EvaluationPage page;
    for (const auto& stored : evaluations_[version.value("versionId", "") + "@" + modelOf(model)]) {
      page.evaluations.push_back(vertex::decodeModelEvaluation(stored));
    }
    return page;
  }

  // --- test controls ---
  // getUploadOperation calls an upload stays not done for (0: done at once, in uploadModel's answer).
  int pollsUntilDone = 1;
  // Finishes every pending upload now.
  void completeUploads() {
    std::lock_guard lock(mutex_);
    for (auto& [name, pending] : pending_) pending.pollsLeft = 0;
  }
  // The next upload ends done with this error (e.g. {9, "artifact not found"}).
  void failNextUpload(vertex::RpcStatus error) {
    std::lock_guard lock(mutex_);
    uploadFailure_ = std::move(error);
  }
  // The next call (of any method) throws this error instead of answering.
  void failNextCall(vertex::ApiError error) {
    std::lock_guard lock(mutex_);
    errors_.push_back(std::move(error));
  }
  std::vector<vertex::UploadModelRequest> uploadRequests() const {
    std::lock_guard lock(mutex_);
    return uploadRequests_;
  }
  // The versions of `model`, oldest first.
  std::vector<vertex::ModelVersion> versions(const std::string& model) const {
    std::lock_guard lock(mutex_);
    std::vector<vertex::ModelVersion> out;
    if (auto found = models_.find(model); found != models_.end()) {
      for (const auto& version : found->second) out.push_back(vertex::decodeModelVersion(version));
    }
    return out;
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> merges() const {
    std::lock_guard lock(mutex_);
    return merges_;
  }
  int listCalls() const {
    std::lock_guard lock(mutex_);
    return lists_;
  }
  int getCalls() const {
    std::lock_guard lock(mutex_);
    return gets_;
  }

 private:
  struct Pending {
    std::string model;
    vertex::ModelSpec spec;
    int pollsLeft = 0;
    std::optional<vertex::RpcStatus> failure;
  };

  static vertex::ApiError notFound(const std::string& name) {
    return vertex::ApiError(404, "NOT_FOUND", "The resource \"" + name + "\" was not found.");
  }
  static std::string modelOf(const std::string& name) {
    auto parsed = vertex::parseModelName(name);
    if (!parsed) throw vertex::ApiError::refusedRequest("\"" + name + "\" is not a model name");
    return parsed->model();
  }
  // The stored version a name reads: M (the "default" alias), M@versionId or M@alias.
  nlohmann::json& find(const std::string& name) {
    auto parsed = vertex::parseModelName(name);
    if (!parsed || parsed->modelId.empty()) throw vertex::ApiError::refusedRequest("\"" + name + "\" is not a model name");
    auto found = models_.find(parsed->model());
    if (found == models_.end()) throw notFound(name);
    std::string wanted = parsed->version.empty() ? "default" : parsed->version;
    for (auto& version : found->second) {
      if (version["versionId"] == wanted) return version;
      for (const auto& alias : version["versionAliases"]) {
        if (alias == wanted) return version;
      }
    }
    throw notFound(name);
  }
  static void removeAlias(nlohmann::json& version, const std::string& alias) {
    auto& aliases = version["versionAliases"];
    for (auto it = aliases.begin(); it != aliases.end(); ++it) {
      if (*it == alias) {
        aliases.erase(it);
        return;
      }
    }
  }
  void moveAlias(const std::string& model, nlohmann::json& to, const std::string& alias) {
    for (auto& version : models_[model]) removeAlias(version, alias);
    to["versionAliases"].push_back(alias);
  }
  vertex::UploadOperation upload(const std::string& name, bool polled) {
    vertex::UploadOperation result;
    result.operation.name = name;
    if (auto done = finished_.find(name); done != finished_.end()) {
      result = done->second;
      return result;
    }
    auto& pending = pending_.at(name);
    if (polled && pending.pollsLeft > 0) --pending.pollsLeft;
    if (pending.pollsLeft > 0) return result;
    result.operation.done = true;
    if (pending.failure) {
      result.operation.error = pending.failure;
    } else {
      auto& versions = models_[pending.model];
      nlohmann::json version = {{"name", pending.model},
                                {"versionId", std::to_string(versions.size() + 1)},
                                {"displayName", pending.spec.displayName},
                                {"artifactUri", pending.spec.artifactUri},
                                {"labels", pending.spec.labels},
                                {"versionAliases", nlohmann::json::array()}};
      versions.push_back(version);
      auto& stored = versions.back();
      if (versions.size() == 1) stored["versionAliases"].push_back("default");
      for (const auto& alias : pending.spec.versionAliases) moveAlias(pending.model, versions.back(), alias);
      result.result = vertex::UploadedVersion{pending.model, stored["versionId"].get<std::string>()};
    }
    finished_[name] = result;
    pending_.erase(name);
    return result;
  }
  void throwQueuedError() {
    if (errors_.empty()) return;
    auto error = errors_.front();
    errors_.pop_front();
    throw error;
  }
  // Terms labels.KEY="V" joined by AND; anything else is a test bug.
  static bool matches(const nlohmann::json& version, const std::string& filter) {
    static const std::regex term(R"re(\s*labels\.([\w-]+)\s*=\s*"([^"]*)"\s*(AND)?)re");
    std::size_t consumed = 0;
    for (auto it = std::sregex_iterator(filter.begin(), filter.end(), term); it != std::sregex_iterator(); ++it) {
      if (static_cast<std::size_t>(it->position()) != consumed) break;
      consumed += it->length();
      const auto& labels = version["labels"];
      auto key = (*it)[1].str();
      if (!labels.contains(key) || labels[key] != (*it)[2].str()) return false;
    }
    if (consumed != filter.size()) throw std::invalid_argument("FakeModelRegistry cannot parse filter: " + filter);
    return true;
  }

  mutable std::mutex mutex_;
  std::map<std::string, std::vector<nlohmann::json>> models_;  // model name -> versions, oldest first
  std::map<std::string, Pending> pending_;
  std::map<std::string, vertex::UploadOperation> finished_;
  std::map<std::string, std::vector<nlohmann::json>> evaluations_;  // "versionId@model" -> evaluations
  std::deque<vertex::ApiError> errors_;
  std::optional<vertex::RpcStatus> uploadFailure_;
  std::vector<vertex::UploadModelRequest> uploadRequests_;
  std::vector<std::pair<std::string, std::vector<std::string>>> merges_;
  int lists_ = 0, gets_ = 0;
  long long nextOperation_ = 5000, nextEvaluation_ = 7000;
};

}  // namespace vto::testing
