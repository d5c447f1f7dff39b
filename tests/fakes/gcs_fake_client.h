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
