#pragma once
// An in-memory GcsClient for unit tests: objects.list with prefix, delimiter, maxResults and page
// tokens as Cloud Storage answers them (names in lexicographic order, prefixes rolled up). matchGlob is
// not applied (the real server's is tested against fake-gcs-server).
#include <map>
#include <mutex>
#include <set>

#include "vertex/gcs_client.h"

namespace vto::testing {

class FakeGcsClient final : public vertex::GcsClient {
 public:
  vertex::ObjectPage listObjectsPage(const std::string& bucket, const std::string& prefix, const std::string& pageToken,
                                     const vertex::ListObjectsOptions& options) override {
    std::lock_guard lock(mutex_);
    ++listCalls_;
    // A broken server's repeated token leads back to the start.
    const std::string from = !repeatToken.empty() && pageToken == repeatToken ? std::string() : pageToken;
    vertex::ObjectPage page;
    std::set<std::string> prefixes;
    int limit = options.maxResults > 0 ? options.maxResults : 1000;
    int used = 0;
    std::string last;
    for (auto it = objects_.lower_bound({bucket, from}); it != objects_.end() && it->first.first == bucket; ++it) {
      const auto& name = it->first.second;
      if (name.rfind(prefix, 0) != 0 || (!from.empty() && name <= from)) continue;
      if (!options.delimiter.empty()) {
        auto cut = name.find(options.delimiter, prefix.size());
        if (cut != std::string::npos) {
          auto rolled = name.substr(0, cut + options.delimiter.size());
          if (!prefixes.count(rolled)) {
            if (used == limit) break;
            prefixes.insert(rolled);
            page.prefixes.push_back(rolled);
            ++used;
          }
          last = name;
          continue;
        }
      }
      if (used == limit) break;
      page.objects.push_back(it->second);
      ++used;
      last = name;
    }
    if (used == limit && !last.empty()) {
      // More may follow: the token is the last name consumed (a rolled-up prefix's last name).
      auto next = objects_.upper_bound({bucket, last});
      if (next != objects_.end() && next->first.first == bucket && next->first.second.rfind(prefix, 0) == 0) {
        page.nextPageToken = repeatToken.empty() ? last : repeatToken;
      }
    }
    return page;
  }
  // Adds an object as if written at `timeCreated` (RFC 3339).
  void put(const std::string& bucket, const std::string& name, std::int64_t size, const std::string& timeCreated) {
    std::lock_guard lock(mutex_);
    vertex::GcsObject object{bucket, name, size, timeCreated, std::to_string(++generation_), timeCreated};
    objects_[{bucket, name}] = object;
  }
  std::string repeatToken;  // set: every page names this token as the next (a broken server)

  std::optional<vertex::GcsObject> getObject(const std::string& bucket, const std::string& name) override {
    std::lock_guard lock(mutex_);
    auto found = objects_.find({bucket, name});
    if (found == objects_.end()) return std::nullopt;
    return found->second;
  }
  std::optional<std::string> readObject(const std::string& bucket, const std::string& name, std::size_t maxBytes) override {
    std::lock_guard lock(mutex_);
    ++readCalls_;
    if (!objects_.count({bucket, name})) return std::nullopt;
    auto found = contents_.find({bucket, name});
    std::string content = found == contents_.end() ? "" : found->second;
    return content.substr(0, maxBytes + 1);
  }
  int readCalls() const {
    std::lock_guard lock(mutex_);
    return readCalls_;
  }
  vertex::GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                           const std::string&) override {
    std::lock_guard lock(mutex_);
    vertex::GcsObject object{bucket, name, static_cast<std::int64_t>(content.size()), updated_, std::to_string(++generation_), updated_};
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
  // The `updated` time given to objects uploaded from now on.
  void setUpdated(std::string updated) {
    std::lock_guard lock(mutex_);
    updated_ = std::move(updated);
  }
  int listCalls() const {
    std::lock_guard lock(mutex_);
    return listCalls_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, vertex::GcsObject> objects_;
  std::map<std::pair<std::string, std::string>, std::string> contents_;
  long long generation_ = 0;
  int listCalls_ = 0;
  int readCalls_ = 0;
  std::string updated_;
};

}  // namespace vto::testing
