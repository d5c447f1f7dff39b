#pragma once
// An in-memory GcsClient for unit tests.
#include <map>
#include <mutex>

#include "vertex/gcs_client.h"

namespace vto::testing {

class FakeGcsClient final : public vertex::GcsClient {
 public:
  std::vector<vertex::GcsObject> listObjects(const std::string& bucket, const std::string& prefix) override {
    std::lock_guard lock(mutex_);
    std::vector<vertex::GcsObject> found;
    for (const auto& [key, object] : objects_) {
      if (key.first == bucket && key.second.rfind(prefix, 0) == 0) found.push_back(object);
    }
    return found;
  }
  // Pages of options.maxResults (default 1000) in name order; the page token is the next name.
  // matchGlob is not applied (the real server's is tested against fake-gcs-server).
  vertex::ObjectPage listObjectsPage(const std::string& bucket, const std::string& prefix, const std::string& pageToken,
                                     const vertex::ListObjectsOptions& options) override {
    std::lock_guard lock(mutex_);
    ++pageCalls;
    vertex::ObjectPage page;
    const size_t limit = options.maxResults > 0 ? static_cast<size_t>(options.maxResults) : 1000;
    for (auto it = objects_.lower_bound({bucket, pageToken.empty() || pageToken == repeatToken ? prefix : pageToken}); it != objects_.end(); ++it) {
      if (it->first.first != bucket || it->first.second.rfind(prefix, 0) != 0) break;
      if (page.objects.size() == limit) {
        page.nextPageToken = repeatToken.empty() ? it->first.second : repeatToken;
        break;
      }
      page.objects.push_back(it->second);
    }
    return page;
  }
  // Adds an object as if written at `timeCreated` (RFC 3339).
  void put(const std::string& bucket, const std::string& name, std::int64_t size, const std::string& timeCreated) {
    std::lock_guard lock(mutex_);
    vertex::GcsObject object{bucket, name, size, timeCreated, std::to_string(++generation_), timeCreated};
    objects_[{bucket, name}] = object;
  }
  int pageCalls = 0;
  std::string repeatToken;  // set: every page names this token as the next (a broken server)

  std::optional<vertex::GcsObject> getObject(const std::string& bucket, const std::string& name) override {
    std::lock_guard lock(mutex_);
    auto found = objects_.find({bucket, name});
    if (found == objects_.end()) return std::nullopt;
    return found->second;
  }
  vertex::GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                           const std::string&) override {
    std::lock_guard lock(mutex_);
    vertex::GcsObject object{bucket, name, static_cast<std::int64_t>(content.size()), "", std::to_string(++generation_)};
    objects_[{bucket, name}] = object;
    contents_[{bucket, name}] = content;
    return object;
  }
  void ensureBucket(const std::string&, const std::string&) override {}

  std::string content(const std::string& bucket, const std::string& name) const {
    std::lock_guard lock(mutex_);
    auto found = contents_.find({bucket, name});
    return found == contents_.end() ? "" : found->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, vertex::GcsObject> objects_;
  std::map<std::pair<std::string, std::string>, std::string> contents_;
  long long generation_ = 0;
};

}  // namespace vto::testing
