#pragma once
// An in-memory KubeClient for unit tests: objects per resource and key, resourceVersions that
// increase, 409 on a stale update, 404/409 like the API server, and failures on demand.
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
    auto name = object["metadata"]["name"].get<std::string>();
    auto found = store_.find(id(r, ns, name));
    if (found == store_.end()) throw notFound(r, name);
    auto sent = object.value("/metadata/resourceVersion"_json_pointer, std::string());
    if (!sent.empty() && sent != found->second["metadata"]["resourceVersion"]) {
      throw controller::ApiError({409, "Conflict", "the object has been modified", {}});
    }
    return found->second = stamped(object, ns);
  }
  json updateStatus(const Resource& r, const std::string& ns, const json& object) override {
    return update(r, ns, object);
  }
  json patch(const Resource& r, const std::string& ns, const std::string& name,
             controller::PatchType, const json& body, const std::string&, bool,
             const std::string&) override {
    std::lock_guard guard(mutex_);
    enter();
    auto found = store_.find(id(r, ns, name));
    if (found == store_.end()) throw notFound(r, name);
    json merged = found->second;
    merged.merge_patch(body);
    return found->second = stamped(merged, ns);
  }
  void remove(const Resource& r, const std::string& ns, const std::string& name) override {
    std::lock_guard guard(mutex_);
    enter();
    if (!store_.erase(id(r, ns, name))) throw notFound(r, name);
  }
  void watch(const Resource&, const std::string&, const controller::WatchOptions&,
             const std::function<void(const controller::WatchEvent&)>&, std::stop_token) override {
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
  json stamped(json object, const std::string& ns) {
    object["metadata"]["resourceVersion"] = std::to_string(++version_);
    if (!ns.empty()) object["metadata"]["namespace"] = ns;
    return object;
  }

  mutable std::mutex mutex_;
  std::map<std::string, json> store_;
  long version_ = 0;
  int calls_ = 0;
  std::optional<controller::Status> failure_;
};

}  // namespace vto::testing
