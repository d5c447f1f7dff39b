#pragma once
// A Kubernetes API client for any group/version/resource, namespaced or cluster-scoped, with
// objects as JSON. KubeClient is the interface the rest of vto uses (a fake implements it in
// tests); RestKubeClient talks to a real API server. Failures throw ApiError.
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>

#include "base/clock.h"
#include "controller/api_error.h"
#include "controller/rest_config.h"

namespace vto::controller {

class RestClientMetrics;

// Which collection: core resources have an empty group ("" / "v1" / "configmaps").
struct Resource {
  std::string group;
  std::string version;
  std::string resource;  // plural, lower case
  bool namespaced = true;

  // The URL path of the collection (name empty) or of one object, optionally its subresource.
  // `ns` empty on a namespaced resource means all namespaces (lists and watches only).
  std::string path(const std::string& ns, const std::string& name = "",
                   const std::string& subresource = "") const;
};

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  int limit = 0;              // page size; 0 lets the server decide
  std::string continueToken;  // from the previous page
  std::string resourceVersion;
};

struct ListPage {
  nlohmann::json items = nlohmann::json::array();
  std::string resourceVersion;  // of the list as a whole: where a watch starts
  std::string continueToken;    // empty on the last page
};

struct WatchOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;
  bool allowWatchBookmarks = true;
  int timeoutSeconds = 300;  // the server ends the watch after this long; the informer re-watches
  // The current objects first, as ADDED events, then a BOOKMARK annotated k8s.io/initial-events-end
  // (a "watch list", Kubernetes 1.32 and 1.34+ by default): a list without the list request, one object
  // in memory at a time. Sent with resourceVersionMatch=NotOlderThan; a server without the WatchList
  // feature answers 422.
  bool sendInitialEvents = false;
  // No byte (event, bookmark) for this long means a dead link: the watch fails as a timeout, and
  // connecting plus the answer's headers get no longer either. 0: timeoutSeconds + 60 s.
  std::chrono::milliseconds idleTimeout{0};
  // Called when the server has accepted the watch (its 2xx headers arrived): a sign of life before
  // any event, for a caller that tells a quiet watch from a dead one.
  std::function<void()> onOpen;
};

struct WatchEvent {
  std::string type;        // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;   // the object, or a Status for ERROR
};

enum class PatchType {
  Merge,  // application/merge-patch+json
  Apply,  // server-side apply: application/apply-patch+yaml (JSON is valid YAML)
};

// The body of a status write (updateStatus): the status subresource takes only status from what is
// sent and keeps the rest as stored, so only `object`'s identity, its resourceVersion (a write from a
// stale cache is a 409) and uid (a namesake is refused) go with `status`, not its spec again.
nlohmann::json statusWriteBody(const nlohmann::json& object, nlohmann::json status);

// A deadline for every request this thread sends through a RestKubeClient while the scope lives
// (scopes nest; the earliest deadline wins). Leader election uses it so that a renew can never
// outlive the renew deadline, whatever the network does: a request still unanswered at the
// deadline is cancelled and fails as a timeout (ApiError with code 0).
class RequestDeadlineScope {
 public:
  explicit RequestDeadlineScope(std::chrono::steady_clock::time_point deadline);
  ~RequestDeadlineScope();
  RequestDeadlineScope(const RequestDeadlineScope&) = delete;
  RequestDeadlineScope& operator=(const RequestDeadlineScope&) = delete;
  // The deadline in force on this thread, if any.
  static std::optional<std::chrono::steady_clock::time_point> current();

 private:
  std::optional<std::chrono::steady_clock::time_point> previous_;
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;
  virtual nlohmann::json get(const Resource& resource, const std::string& ns,
                             const std::string& name) = 0;
  // One page; pass its continueToken back for the next.
  virtual ListPage list(const Resource& resource, const std::string& ns,
                        const ListOptions& options) = 0;
  virtual nlohmann::json create(const Resource& resource, const std::string& ns,
                                const nlohmann::json& object) = 0;
  // Replaces the object named in object.metadata.name; metadata.resourceVersion guards against
  // lost updates (409 Conflict when stale).
  virtual nlohmann::json update(const Resource& resource, const std::string& ns,
                                const nlohmann::json& object) = 0;
  virtual nlohmann::json updateStatus(const Resource& resource, const std::string& ns,
                                      const nlohmann::json& object) = 0;
  // updateStatus for a caller that needs only the new metadata.resourceVersion of the answer (it wrote
  // the status it decided, so it knows the rest); a client may skip parsing everything else.
  virtual std::string updateStatusVersion(const Resource& resource, const std::string& ns,
                                          const nlohmann::json& object) {
    return updateStatus(resource, ns, object).value(nlohmann::json::json_pointer("/metadata/resourceVersion"), "");
  }
  // create and a merge patch, for a caller that needs only the answer's metadata.resourceVersion
  // (it knows the rest from what it sent: an Event, a finalizer); a client may skip parsing the rest.
  virtual std::string createVersion(const Resource& resource, const std::string& ns, const nlohmann::json& object) {
    return create(resource, ns, object).value(nlohmann::json::json_pointer("/metadata/resourceVersion"), "");
  }
  virtual std::string mergePatchVersion(const Resource& resource, const std::string& ns, const std::string& name,
                                        const nlohmann::json& body) {
    return patch(resource, ns, name, PatchType::Merge, body).value(nlohmann::json::json_pointer("/metadata/resourceVersion"), "");
  }
  // `fieldManager` is required for Apply; `force` takes over conflicting fields (Apply only).
  virtual nlohmann::json patch(const Resource& resource, const std::string& ns,
                               const std::string& name, PatchType type, const nlohmann::json& body,
                               const std::string& fieldManager = "", bool force = false,
                               const std::string& subresource = "") = 0;
  virtual void remove(const Resource& resource, const std::string& ns, const std::string& name) = 0;
  // Streams events to `onEvent` until the server ends the watch (returns normally) or `stop` is
  // requested (returns early). Throws ApiError when the watch cannot start or the connection fails.
  virtual void watch(const Resource& resource, const std::string& ns, const WatchOptions& options,
                     const std::function<void(WatchEvent&&)>& onEvent,
                     std::stop_token stop) = 0;
};

// Every page of a list, following continue tokens; returns the items and the resourceVersion of
// the first page (a consistent snapshot across pages).
ListPage listAll(KubeClient& client, const Resource& resource, const std::string& ns,
                 ListOptions options);

// Whether a client's answers keep metadata.managedFields. The operator reads none of it, and it is
// about half of each object: Omit leaves it out while parsing (see kube_json.h).
enum class ManagedFields { Keep, Omit };

class RestKubeClient final : public KubeClient {
 public:
  // `metrics` may be null; it must outlive the client. `requestTimeout` bounds every request but
  // a watch.
  explicit RestKubeClient(RestConfig config, RestClientMetrics* metrics = nullptr,
                          std::chrono::seconds requestTimeout = std::chrono::seconds(30),
                          ManagedFields managedFields = ManagedFields::Keep);
  ~RestKubeClient() override;

  nlohmann::json get(const Resource& resource, const std::string& ns,
                     const std::string& name) override;
  ListPage list(const Resource& resource, const std::string& ns,
                const ListOptions& options) override;
  nlohmann::json create(const Resource& resource, const std::string& ns,
                        const nlohmann::json& object) override;
  nlohmann::json update(const Resource& resource, const std::string& ns,
                        const nlohmann::json& object) override;
  nlohmann::json updateStatus(const Resource& resource, const std::string& ns,
                              const nlohmann::json& object) override;
  // These three read the answer only as far as metadata.resourceVersion.
  std::string updateStatusVersion(const Resource& resource, const std::string& ns,
                                  const nlohmann::json& object) override;
  std::string createVersion(const Resource& resource, const std::string& ns, const nlohmann::json& object) override;
  std::string mergePatchVersion(const Resource& resource, const std::string& ns, const std::string& name,
                                const nlohmann::json& body) override;
  nlohmann::json patch(const Resource& resource, const std::string& ns, const std::string& name,
                       PatchType type, const nlohmann::json& body,
                       const std::string& fieldManager = "", bool force = false,
                       const std::string& subresource = "") override;
  void remove(const Resource& resource, const std::string& ns, const std::string& name) override;
  void watch(const Resource& resource, const std::string& ns, const WatchOptions& options,
             const std::function<void(WatchEvent&&)>& onEvent, std::stop_token stop) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vto::controller
