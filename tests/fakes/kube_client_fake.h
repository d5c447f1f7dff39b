#pragma once
// An in-memory KubeClient for unit tests: objects per resource and key, resourceVersions that
// increase, 404/409 like the API server, and failures on demand. As the API server does for a kind
// with a status subresource: update() ignores status, updateStatus() changes only status; a
// metadata.resourceVersion sent with an update or a patch is a precondition (409 when stale); a
// delete of an object with finalizers only sets deletionTimestamp, and the object goes when the
// last finalizer is removed.
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controller/kube_client.h"

namespace vto::testing {

class FakeKubeClient final : public controller::KubeClient {
 public:
  using json = nlohmann::json;
  using Resource = controller::Resource;

  // While set, every call throws this error (an unreachable or failing API server).
  void failWith(std::optional<controller::Status> status) {
    std::lock_guard guard(mutex_);
    failure_ = std::move(status);
  }
  int calls() const {
    std::lock_guard guard(mutex_);
    return calls_;
  }

  json get(const Resource& r, const std::string& ns, const std::string& name) override {
    std::lock_guard guard(mutex_);
    enter();
    auto found = store_.find(id(r, ns, name));
    if (found == store_.end()) throw notFound(r, name);
    return found->second;
  }
  controller::ListPage list(const Resource& r, const std::string& ns,
                            const controller::ListOptions&) override {
    std::lock_guard guard(mutex_);
    enter();
    controller::ListPage page;
    auto prefix = r.path(ns) + "/";
    for (const auto& [key, object] : store_) {
      if (key.rfind(prefix, 0) == 0 || (ns.empty() && key.find("/" + r.resource + "/") != std::string::npos)) {
        page.items.push_back(object);
      }
    }
    page.resourceVersion = std::to_string(version_);
    return page;
  }
  json create(const Resource& r, const std::string& ns, const json& object) override {
    std::lock_guard guard(mutex_);
    enter();
    auto name = object["metadata"]["name"].get<std::string>();
    auto key = id(r, ns, name);
    if (store_.count(key)) {
      throw controller::ApiError({409, "AlreadyExists", r.resource + " " + name + " already exists", {}});
    }
    return store_[key] = stamped(object, ns);
  }
  json update(const Resource& r, const std::string& ns, const json& object) override {
    std::lock_guard guard(mutex_);
    enter();
    auto& stored = existing(r, ns, object);
    json next = object;
    if (stored.contains("status")) {
      next["status"] = stored["status"];
    } else {
      next.erase("status");
    }
    return store(r, ns, stored, std::move(next));
  }
  json updateStatus(const Resource& r, const std::string& ns, const json& object) override {
    std::lock_guard guard(mutex_);
    enter();
    ++statusWrites_;
    auto& stored = existing(r, ns, object);
    json next = stored;
    if (object.contains("status")) next["status"] = object["status"];
    return store(r, ns, stored, std::move(next));
  }
  json patch(const Resource& r, const std::string& ns, const std::string& name,
             controller::PatchType, const json& body, const std::string&, bool,
             const std::string& subresource) override {
    std::lock_guard guard(mutex_);
    enter();
    auto found = store_.find(id(r, ns, name));
    if (found == store_.end()) throw notFound(r, name);
    precondition(found->second, body);
    json merged = found->second;
    merged.merge_patch(body);
    // A patch of the object leaves status alone; a patch of /status changes only status.
    if (subresource == "status") {
      json next = found->second;
      if (merged.contains("status")) next["status"] = merged["status"];
      merged = next;
    } else if (found->second.contains("status")) {
      merged["status"] = found->second["status"];
    } else {
      merged.erase("status");
    }
    return store(r, ns, found->second, std::move(merged));
  }
  void remove(const Resource& r, const std::string& ns, const std::string& name) override {
    std::lock_guard guard(mutex_);
    enter();
    auto found = store_.find(id(r, ns, name));
    if (found == store_.end()) throw notFound(r, name);
    auto finalizers = found->second["metadata"].value("finalizers", json::array());
    if (finalizers.empty()) {
      store_.erase(found);
      return;
    }
    if (!found->second["metadata"].contains("deletionTimestamp")) {
      found->second["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
      found->second = stamped(found->second, ns);
    }
  }
  // updateStatus calls so far (the writes a reconciler makes to status).
  int statusWrites() const {
    std::lock_guard guard(mutex_);
    return statusWrites_;
  }
  void watch(const Resource&, const std::string&, const controller::WatchOptions&,
             const std::function<void(controller::WatchEvent&&)>&, std::stop_token) override {
    throw controller::ApiError({501, "NotImplemented", "the fake does not watch", {}});
  }

 private:
  static std::string id(const Resource& r, const std::string& ns, const std::string& name) {
    return r.path(ns, name);
  }
  static controller::ApiError notFound(const Resource& r, const std::string& name) {
    return controller::ApiError({404, "NotFound", r.resource + " \"" + name + "\" not found", {}});
  }
  void enter() {
    ++calls_;
    if (failure_) throw controller::ApiError(*failure_);
  }
  json& existing(const Resource& r, const std::string& ns, const json& object) {
    auto name = object["metadata"]["name"].get<std::string>();
    auto found = store_.find(id(r, ns, name));
    if (found == store_.end()) throw notFound(r, name);
    precondition(found->second, object);
    return found->second;
  }
  // metadata.resourceVersion in what was sent must match what is stored.
  static void precondition(const json& stored, const json& sent) {
    auto version = sent.value("/metadata/resourceVersion"_json_pointer, std::string());
    if (!version.empty() && version != stored["metadata"]["resourceVersion"]) {
      throw controller::ApiError({409, "Conflict",
                                  "Operation cannot be fulfilled: the object has been modified; please apply your "
                                  "changes to the latest version and try again",
                                  {}});
    }
  }
  // Writes `next` over `stored`; an object being deleted goes once its last finalizer is gone.
  json store(const Resource& r, const std::string& ns, json& stored, json next) {
    bool deleting = next["metadata"].contains("deletionTimestamp");
    if (deleting && next["metadata"].value("finalizers", json::array()).empty()) {
      auto gone = stamped(std::move(next), ns);
      store_.erase(id(r, ns, gone["metadata"]["name"].get<std::string>()));
      return gone;
    }
    return stored = stamped(std::move(next), ns);
  }
  json stamped(json object, const std::string& ns) {
    object["metadata"]["resourceVersion"] = std::to_string(++version_);
    if (!ns.empty()) object["metadata"]["namespace"] = ns;
    return object;
  }

  mutable std::mutex mutex_;
  std::map<std::string, json> store_;
  long version_ = 0;
  int calls_ = 0;
  int statusWrites_ = 0;
  std::optional<controller::Status> failure_;
};

}  // namespace vto::testing
